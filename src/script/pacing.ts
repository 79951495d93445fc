/**
 * How a running script shares the event loop (issue 33, finding 2). A script may use its whole
 * time budget, but in turns: the evaluator asks `due()` before every step, and a long built-in
 * asks between bounded pieces of its work (`Pace`); when the turn is up it awaits `pause()`,
 * which gives the loop back to Raft, the network and other requests. The node's ScriptScheduler
 * (src/node/service/script-scheduler.ts) decides how long a turn is; without one a script never pauses
 * (the simulator, and unit tests that do not ask for it).
 *
 * So that a turn is bounded, no single step does unbounded work: every operation whose cost grows
 * with its operands (a string's length, a list's elements) either costs at most a few milliseconds
 * at the largest operands the value caps allow, or works in pieces of PIECE_UNITS code units (or
 * PIECE_BYTES of a stored value, or one element at a time) with a pace between pieces
 * (text-pieces.ts has the piecewise string operations).
 */
export interface ScriptTurns {
  /** True when the script has held the loop for its turn: it must await pause() before more work. */
  due(): boolean;
  /** Gives the event loop back; resolves when the script may go on. */
  pause(): Promise<void>;
  /** Milliseconds the script has spent paused so far: not its own time, so not counted toward maxScriptMs. */
  readonly pausedMs: number;
}

/**
 * Called between bounded pieces of a long operation: returns a promise to await when the turn is
 * up, undefined otherwise. The evaluator's also checks the script's time limit (SCRIPT_LIMIT).
 */
export type Pace = () => Promise<void> | undefined;

/**
 * Code units one piece of a long string operation handles: about 0.7 ms of case mapping at the
 * slowest (Greek text, 11 ms per million units on the reference machine), far less for ASCII.
 */
export const PIECE_UNITS = 64 * 1024;
/** Bytes of a stored value decoded at a time (a megabyte of two-byte UTF-8 takes about 4 ms). */
export const PIECE_BYTES = 128 * 1024;
