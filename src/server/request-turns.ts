/**
 * Client requests take turns of the event loop (issue 33): of a burst of requests read in one turn
 * (many connections' frames in one poll of the loop: the hostile load run's floods of refused calls
 * beside an ordinary tenant's requests), those that arrive after REQUEST_TURN_MS of the turn has
 * passed start on the loop's next turn, after the I/O and immediates already queued (the Raft
 * loop's iteration among them), as watchers' sends do (SendPacer, src/watch/history-turns.ts).
 *
 * Measured on the hostile load run (docs/security.md): the ordinary tenant's p99 went from 89-104
 * ms to 59-89 ms in six runs (the longest stall of a run 41-102 ms against 60-99). A stricter gate
 * that let the deferred requests in one by one, 4 ms of them a turn, measured worse (p99 96-105 ms
 * in two runs): the ordinary tenant's requests then queued behind the attackers' for several turns.
 *
 * Invariant: a request deferred in a turn starts in the next one, in the order it arrived.
 */
import { SendPacer } from '../watch/history-turns.js';

/** A turn's budget for starting requests, in milliseconds. */
export const REQUEST_TURN_MS = 4;

const pacer = new SendPacer(() => performance.now(), (run) => setImmediate(run), REQUEST_TURN_MS);

/** Undefined when the request may start in this turn; otherwise resolves on the loop's next turn. */
export function requestTurn(): Promise<void> | undefined {
  return pacer.due() ? pacer.pause() : undefined;
}
