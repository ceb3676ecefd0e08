// The per-connection cap on requests in flight: its default and the -32001 answer, owned here
// for both places that count (the engine's Connection, and serveConnection in front of it, whose
// own counter serves `--max-in-flight` and `ServedConnection.inFlight`).
import { ErrorCodes, RpcError } from '../protocol/errors';

/**
 * Requests processed at once per connection. Large enough that a client pipelining 10 000
 * requests on one connection gets every answer; beyond it a request is refused at once with
 * -32001 (retryable, like HTTP/2's REFUSED_STREAM) rather than by pausing reads of the socket:
 * a paused socket would also hold back the requests that free slots (the `process/write` a
 * long-polling `process/read` waits for, a `process/terminate`), stalling the connection
 * instead of telling the client to back off. Memory per in-flight request is small (a promise
 * and its decoded params), so 16 384 of them cost a few tens of MB at most.
 */
export const DEFAULT_MAX_IN_FLIGHT = 16_384;

export const OVERLOADED_MESSAGE = 'server overloaded: too many requests in flight';

/** Throws the -32001 answer when `inFlight` requests already fill a cap of `max`. */
export function checkInFlight(inFlight: number, max: number): void {
  if (inFlight >= max) throw new RpcError(ErrorCodes.Overloaded, OVERLOADED_MESSAGE);
}
