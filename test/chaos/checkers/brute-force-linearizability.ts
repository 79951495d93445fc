/**
 * A second linearizability checker, written from the definition and nothing else, to cross-check
 * the real one on tiny histories: try every sequence of the operations (skipping any 'info' op
 * at will, since it may never have taken effect), and accept if one of them respects real time
 * (an op that completed before another was invoked comes first) and behaves like one map of
 * registers, all starting at null. Prefixes that already break a rule are abandoned, which
 * changes the running time, not the answer.
 *
 * It deliberately shares no code with the checker under test: no per-key split, no cache, no
 * pruning of info ops, no preference for reads, its own value comparison. Exponential; use on
 * histories of at most about 7 operations.
 */
import type { Operation } from '../../../src/chaos/history.js';

export function bruteForceLinearizable(operations: readonly Operation[]): boolean {
  // A failed op never took effect; a read that did not return ok observed nothing.
  const candidates = operations.filter((op) => op.status !== 'fail' && !(op.f === 'read' && op.status !== 'ok'));
  if (candidates.length > 10) throw new Error(`brute force is for tiny histories, got ${candidates.length} operations`);
  const placed = new Array<boolean>(candidates.length).fill(false);

  const search = (state: ReadonlyMap<string, unknown>): boolean => {
    const pending = candidates.filter((_, index) => !placed[index]);
    if (pending.every((op) => op.status === 'info')) return true;
    for (let index = 0; index < candidates.length; index++) {
      if (placed[index]) continue;
      const op = candidates[index]!;
      // Real time: no op that must precede this one (it completed before this was invoked) is left.
      if (pending.some((other) => other.status === 'ok' && other.completeMs < op.invokeMs)) continue;
      const next = apply(state, op);
      if (next === undefined) continue;
      placed[index] = true;
      const found = search(next);
      placed[index] = false;
      if (found) return true;
    }
    return false;
  };
  return search(new Map());
}

/** The map after `op` takes effect, or undefined if it cannot take effect in `state`. */
function apply(state: ReadonlyMap<string, unknown>, op: Operation): ReadonlyMap<string, unknown> | undefined {
  const key = op.key ?? '';
  const current = state.has(key) ? state.get(key) : null;
  const with_ = (value: unknown): ReadonlyMap<string, unknown> => new Map(state).set(key, value);
  switch (op.f) {
    case 'read':
      return same(current, op.output) ? state : undefined;
    case 'write':
      return with_(op.input);
    case 'cas': {
      const { expected, next } = op.input as { expected: unknown; next: unknown };
      // An info cas that took effect swapped; one whose compare failed is the same as none at all.
      const swapped = op.status === 'info' || op.output === true;
      if (swapped) return same(current, expected) ? with_(next) : undefined;
      return same(current, expected) ? undefined : state;
    }
    default:
      throw new Error(`not a register operation: ${op.f}`);
  }
}

/** Values in these tests are null, numbers and strings. */
function same(a: unknown, b: unknown): boolean {
  return a === b;
}
