/**
 * Counters under increments that clients retry with exactly-once semantics: one logical increment
 * is one operation in the history however many times the client resent it, so the counter must
 * count it once or, if it failed, not at all.
 *
 * Every ok read of a counter key (and every ok increment that returned the new value) must lie
 * between two bounds. At least: the increments acknowledged before it was invoked (they took
 * effect before it began). At most: those plus every other increment invoked before it completed,
 * ok or info (any of them may have taken effect first; a failed one never did). A negative amount
 * (a decrement) moves the lower bound instead of the upper one. A read above the upper bound
 * counted something twice or counted a failed increment; a read below the lower bound lost an
 * acknowledged increment.
 *
 * The final read, made after the faults healed and invoked after every increment was invoked and
 * every acknowledged one completed, is the headline: it must lie in [sum of ok, sum of ok + info].
 * When every amount is non-negative, reads must also never go backwards: a read must be at least
 * any value read before it was invoked.
 *
 * Counter keys are the keys with at least one increment; an ok read returns a number, or null
 * when the key is absent (0). Reads of other keys are ignored.
 */
import { HistoryError, formatMs, operationRef, type Operation } from '../history.js';
import { explainAnomalies, type InvalidVerdict, type UnknownVerdict, type ValidVerdict } from './verdict.js';

export interface CounterCheckOptions {
  /**
   * Whether a counter key without a final read (one invoked after every increment settled) makes
   * the answer 'unknown'. Default true: the final read is the check that matters most.
   */
  readonly requireFinalRead?: boolean;
}

export type CounterAnomalyKind = 'final-too-high' | 'final-too-low' | 'read-too-high' | 'read-too-low' | 'went-backwards';

export interface CounterAnomaly {
  readonly key: string;
  readonly kind: CounterAnomalyKind;
  /** The read (or ok increment with a result) whose value is impossible. */
  readonly operation: Operation;
  readonly value: number;
  readonly lower: number;
  readonly upper: number;
  readonly message: string;
}

export interface CounterSummary {
  readonly key: string;
  /** Sum of the amounts of ok increments, and how many there were. */
  readonly acknowledged: number;
  readonly acknowledgedCount: number;
  /** Sum of the amounts of info increments, and how many there were. */
  readonly indeterminate: number;
  readonly indeterminateCount: number;
  readonly failedCount: number;
  /** The value of the last final read, if there was one. */
  readonly finalValue?: number;
  readonly readsChecked: number;
}

interface CounterDetails {
  readonly counters: readonly CounterSummary[];
}

export type CounterVerdict =
  | (ValidVerdict & CounterDetails)
  | (InvalidVerdict & CounterDetails & { readonly anomalies: readonly CounterAnomaly[] })
  | (UnknownVerdict & CounterDetails);

/** Throws a HistoryError if an increment's amount or a read's value is not a safe integer. */
export function checkCounter(operations: readonly Operation[], options: CounterCheckOptions = {}): CounterVerdict {
  const requireFinalRead = options.requireFinalRead ?? true;
  const counters: CounterSummary[] = [];
  const anomalies: CounterAnomaly[] = [];
  const missingFinal: string[] = [];
  for (const [key, keyOperations] of counterKeys(operations)) {
    const result = checkCounterKey(key, keyOperations);
    counters.push(result.summary);
    anomalies.push(...result.anomalies);
    if (result.summary.finalValue === undefined) missingFinal.push(key);
  }
  if (anomalies.length > 0) {
    // The final reads first: they are the headline.
    const ordered = [...anomalies.filter((a) => a.kind.startsWith('final')), ...anomalies.filter((a) => !a.kind.startsWith('final'))];
    return { valid: false, explanation: explainAnomalies(ordered.map((a) => a.message)), anomalies: ordered, counters };
  }
  if (requireFinalRead && missingFinal.length > 0) {
    const keys = missingFinal.map((key) => JSON.stringify(key)).join(', ');
    return { valid: 'unknown', reason: `counter ${keys}: no final read (one invoked after every increment settled)`, counters };
  }
  return { valid: true, counters };
}

/** Increments and reads grouped by counter key, in order of first appearance. */
function counterKeys(operations: readonly Operation[]): Map<string, Operation[]> {
  const keys = new Set(operations.filter((op) => op.f === 'increment').map((op) => op.key ?? ''));
  const byKey = new Map<string, Operation[]>();
  for (const op of operations) {
    if ((op.f !== 'increment' && op.f !== 'read') || !keys.has(op.key ?? '')) continue;
    const key = op.key ?? '';
    let list = byKey.get(key);
    if (list === undefined) byKey.set(key, (list = []));
    list.push(op);
  }
  return byKey;
}

/** Amounts sorted by a time, with prefix sums, to sum "all with time below t" in O(log n). */
class PrefixSums {
  private readonly times: number[];
  /** total[i], positive[i], negative[i]: sums over the first i amounts. */
  private readonly total: number[] = [0];
  private readonly positive: number[] = [0];
  private readonly negative: number[] = [0];

  constructor(entries: readonly { readonly timeMs: number; readonly amount: number }[]) {
    const sorted = [...entries].sort((a, b) => a.timeMs - b.timeMs);
    this.times = sorted.map((entry) => entry.timeMs);
    for (const { amount } of sorted) {
      this.total.push(this.total.at(-1)! + amount);
      this.positive.push(this.positive.at(-1)! + Math.max(0, amount));
      this.negative.push(this.negative.at(-1)! + Math.min(0, amount));
    }
  }

  /** How many entries have time < t (strict) or <= t. */
  countBefore(t: number, inclusive: boolean): number {
    let low = 0;
    let high = this.times.length;
    while (low < high) {
      const middle = (low + high) >> 1;
      const time = this.times[middle]!;
      if (time < t || (inclusive && time === t)) low = middle + 1;
      else high = middle;
    }
    return low;
  }

  sums(count: number): { total: number; positive: number; negative: number } {
    return { total: this.total[count]!, positive: this.positive[count]!, negative: this.negative[count]! };
  }
}

interface Observation {
  readonly operation: Operation;
  readonly value: number;
  /** For an ok increment with a result: its own amount, which its result must include. */
  readonly ownAmount?: number;
}

function checkCounterKey(key: string, operations: readonly Operation[]): { summary: CounterSummary; anomalies: CounterAnomaly[] } {
  const increments = operations.filter((op) => op.f === 'increment').map((op) => ({ op, amount: amountOf(op) }));
  const ok = increments.filter(({ op }) => op.status === 'ok');
  const info = increments.filter(({ op }) => op.status === 'info');
  const attempted = increments.filter(({ op }) => op.status !== 'fail');
  const acknowledgedBefore = new PrefixSums(ok.map(({ op, amount }) => ({ timeMs: op.completeMs, amount })));
  const attemptedBefore = new PrefixSums(attempted.map(({ op, amount }) => ({ timeMs: op.invokeMs, amount })));
  // After this instant every increment has been invoked and every acknowledged one completed.
  let settledMs = -Infinity;
  for (const { op } of attempted) settledMs = Math.max(settledMs, op.status === 'ok' ? op.completeMs : op.invokeMs);

  const observations: Observation[] = [];
  for (const op of operations) {
    if (op.status !== 'ok') continue;
    if (op.f === 'read') observations.push({ operation: op, value: readValueOf(op) });
    else if (op.f === 'increment' && op.output !== undefined) observations.push({ operation: op, value: readValueOf(op), ownAmount: amountOf(op) });
  }
  const anomalies: CounterAnomaly[] = [];
  let finalValue: number | undefined;
  let finalInvokeMs = -Infinity;
  for (const observation of observations) {
    const { operation } = observation;
    const isFinal = observation.ownAmount === undefined && operation.invokeMs > settledMs;
    const { lower, upper, acknowledged } = bounds(observation, acknowledgedBefore, attemptedBefore);
    if (isFinal && operation.invokeMs >= finalInvokeMs) {
      finalValue = observation.value;
      finalInvokeMs = operation.invokeMs;
    }
    const anomaly = isFinal
      ? finalAnomaly(key, observation, lower, upper, acknowledged)
      : runningAnomaly(key, observation, lower, upper, acknowledged);
    if (anomaly !== undefined) anomalies.push(anomaly);
  }
  if (attempted.every(({ amount }) => amount >= 0)) anomalies.push(...backwardsAnomalies(key, observations));

  const sum = (list: readonly { amount: number }[]): number => list.reduce((total, { amount }) => total + amount, 0);
  const summary: CounterSummary = {
    key,
    acknowledged: sum(ok),
    acknowledgedCount: ok.length,
    indeterminate: sum(info),
    indeterminateCount: info.length,
    failedCount: increments.length - attempted.length,
    ...(finalValue === undefined ? {} : { finalValue }),
    readsChecked: observations.length,
  };
  return { summary, anomalies };
}

/**
 * Acknowledged: ok increments that completed strictly before the observation was invoked; they
 * are in every value it may see. Possible: increments not failed that were invoked before (or
 * as) it completed; the acknowledged ones are among them. Each of the others adds between
 * min(0, amount) and max(0, amount).
 */
function bounds(observation: Observation, acknowledgedBefore: PrefixSums, attemptedBefore: PrefixSums): { lower: number; upper: number; acknowledged: number } {
  const { operation, ownAmount } = observation;
  const definite = acknowledgedBefore.sums(acknowledgedBefore.countBefore(operation.invokeMs, false));
  const possible = attemptedBefore.sums(attemptedBefore.countBefore(operation.completeMs, true));
  let lower = definite.total + (possible.negative - definite.negative);
  let upper = definite.total + (possible.positive - definite.positive);
  if (ownAmount !== undefined) {
    // An increment's result includes its own amount for certain.
    lower += ownAmount - Math.min(0, ownAmount);
    upper += ownAmount - Math.max(0, ownAmount);
  }
  return { lower, upper, acknowledged: definite.total };
}

function finalAnomaly(key: string, observation: Observation, lower: number, upper: number, acknowledged: number): CounterAnomaly | undefined {
  const { operation, value } = observation;
  const where = `counter ${JSON.stringify(key)}: final read ${value} (${operationRef(operation)})`;
  const indeterminateUp = upper - acknowledged;
  const indeterminateDown = acknowledged - lower;
  if (value > upper) {
    const message = `${where} exceeds the ${acknowledged} acknowledged plus ${indeterminateUp} indeterminate: double counting, or a failed increment applied`;
    return { key, kind: 'final-too-high', operation, value, lower, upper, message };
  }
  if (value < lower) {
    const minus = indeterminateDown > 0 ? ` minus ${indeterminateDown} indeterminate` : '';
    const message = `${where} is below the ${acknowledged} acknowledged${minus}: lost increments`;
    return { key, kind: 'final-too-low', operation, value, lower, upper, message };
  }
  return undefined;
}

function runningAnomaly(key: string, observation: Observation, lower: number, upper: number, acknowledged: number): CounterAnomaly | undefined {
  const { operation, value } = observation;
  const what = observation.ownAmount === undefined ? 'read' : `increment ${observation.ownAmount} returned`;
  const where = `counter ${JSON.stringify(key)}: ${what} ${value} (${operationRef(operation)})`;
  if (value > upper) {
    const message = `${where} exceeds ${upper}, the most possible: ${acknowledged} acknowledged before it began plus ${upper - acknowledged} more invoked before it completed`;
    return { key, kind: 'read-too-high', operation, value, lower, upper, message };
  }
  if (value < lower) {
    const message = `${where} is below ${lower}, the least possible: ${acknowledged} acknowledged before it began${lower < acknowledged ? ` minus ${acknowledged - lower} in flight` : ''}`;
    return { key, kind: 'read-too-low', operation, value, lower, upper, message };
  }
  return undefined;
}

/** With only non-negative amounts, a value seen by an observation that completed before another began is a floor for it. */
function backwardsAnomalies(key: string, observations: readonly Observation[]): CounterAnomaly[] {
  const byCompletion = [...observations].sort((a, b) => a.operation.completeMs - b.operation.completeMs);
  // highest[i]: the observation with the largest value among the first i + 1 by completion.
  const highest: Observation[] = [];
  for (const observation of byCompletion) {
    const best = highest.at(-1);
    highest.push(best === undefined || observation.value > best.value ? observation : best);
  }
  const anomalies: CounterAnomaly[] = [];
  for (const observation of observations) {
    const { operation, value } = observation;
    // The observations that completed strictly before this one was invoked.
    let low = 0;
    let high = byCompletion.length;
    while (low < high) {
      const middle = (low + high) >> 1;
      if (byCompletion[middle]!.operation.completeMs < operation.invokeMs) low = middle + 1;
      else high = middle;
    }
    const earlier = low > 0 ? highest[low - 1]! : undefined;
    if (earlier === undefined || earlier.value <= value) continue;
    const message = `counter ${JSON.stringify(key)}: read ${value} (${operationRef(operation)}) is below ${earlier.value}, seen by op ${earlier.operation.op} which completed at ${formatMs(earlier.operation.completeMs)} ms, before it began: the counter went backwards`;
    anomalies.push({ key, kind: 'went-backwards', operation, value, lower: earlier.value, upper: Infinity, message });
  }
  return anomalies;
}

function amountOf(operation: Operation): number {
  const amount = operation.input;
  if (typeof amount !== 'number' || !Number.isSafeInteger(amount)) {
    throw new HistoryError('MALFORMED_OPERATION', `op ${operation.op} (increment): the amount must be a safe integer`);
  }
  return amount;
}

function readValueOf(operation: Operation): number {
  const value = operation.output === null ? 0 : operation.output;
  if (typeof value !== 'number' || !Number.isSafeInteger(value)) {
    throw new HistoryError('MALFORMED_OPERATION', `op ${operation.op} (${operation.f}): a counter value must be a safe integer or null`);
  }
  return value;
}
