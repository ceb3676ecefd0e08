// Size limits both ends of the wire must agree on, defined once: the server refuses beyond them
// and the client sizes its requests by them (test/architecture/owners.test.ts fails when one of
// these values is declared again elsewhere in src/).

/** fs/readBlock's largest `len` (the reference's limit): larger is refused with -32600. */
export const MAX_READ_BLOCK = 1024 * 1024;

/**
 * Largest message (websocket frame, stdio line) a transport accepts unless configured otherwise,
 * on the server and on the client (ws's own default is 100 MiB).
 */
export const MAX_MESSAGE_BYTES = 64 * 1024 * 1024;

/** fs/writeBlock's largest chunk (the reference's limit): empty or larger is refused with -32600. */
export const MAX_WRITE_BLOCK = 1024 * 1024;
