// Why a channel could not be opened, as codes (ws's style: stable codes, free-form messages).
// `code` is the OS errno of the failure (ECONNREFUSED, ENOTFOUND, ENOENT for a missing
// command...) or ETIMEDOUT for our own connect timeout; `status` the HTTP status of a refused
// websocket upgrade. Callers classify by these fields (src/extension/environments/connect-failure.ts),
// never by the message, which may quote whatever the peer answered.
export class ConnectError extends Error {
  constructor(
    message: string,
    readonly code?: string,
    readonly status?: number,
  ) {
    super(message);
    this.name = 'ConnectError';
  }
}
