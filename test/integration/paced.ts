/**
 * Pacing for tests that run a load and inject something into it (a kill, a split, a leader move):
 * wait for the load to have done N things, not for a fixed time. npm test runs files side by side on
 * two cores, and a fixed second of writing acknowledged as few as 13-85 writes there (CI), which made
 * the tests' "the load did enough" assertions fail while nothing was wrong. Every wait is bounded.
 */

/** Waits until `count()` is at least `target` or `withinMs` passed; returns `count()` then. */
export async function untilAtLeast(count: () => number, target: number, withinMs: number): Promise<number> {
  const deadline = Date.now() + withinMs;
  while (count() < target && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
  return count();
}
