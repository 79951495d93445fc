/**
 * A grow-only set built from unique adds: each `add` writes an element no other add writes (in
 * Atoll, a distinct key), and `readAll` returns every element present. The element of an add is
 * its value, or its key when it has no value. All adds and reads in the history form one set.
 *
 * The final read (the last ok readAll invoked after every add was invoked and every ok or failed
 * one completed, so after the faults healed) decides what was kept:
 * - every ok add must be present, else "lost write";
 * - every element present must have been attempted, else "phantom";
 * - a failed add must be absent: a fail promised it never took effect, so if present, the fail
 *   was a lie ("failed add present");
 * - an info add may be present or not.
 * Every ok readAll, final or not, must also hold no phantom, no failed add and no duplicate, and
 * (reads being linearizable, and elements never removed) must hold every element acknowledged
 * before it began or returned by a read that completed before it began.
 */
import { HistoryError, formatMs, formatValue, operationRef, valueKey, type Operation } from '../history.js';
import { explainAnomalies, type InvalidVerdict, type UnknownVerdict, type ValidVerdict } from './verdict.js';

export interface SetCheckOptions {
  /** Whether a history without a final read makes the answer 'unknown'. Default true. */
  readonly requireFinalRead?: boolean;
}

export type SetAnomalyKind = 'lost' | 'phantom' | 'failed-present' | 'duplicate';

export interface SetAnomaly {
  readonly kind: SetAnomalyKind;
  readonly element: unknown;
  /** The read that shows the anomaly. */
  readonly read: Operation;
  /** The add of the element, when there was one. */
  readonly add?: Operation;
  readonly message: string;
}

export interface SetSummary {
  readonly attempted: number;
  readonly acknowledged: number;
  readonly failed: number;
  readonly indeterminate: number;
  /** Of the indeterminate adds, how many the final read shows. */
  readonly indeterminatePresent: number;
  /** Elements in the final read, if there was one. */
  readonly finalSize?: number;
  readonly readsChecked: number;
}

interface SetDetails {
  readonly summary: SetSummary;
}

export type SetVerdict =
  | (ValidVerdict & SetDetails)
  | (InvalidVerdict & SetDetails & { readonly anomalies: readonly SetAnomaly[] })
  | (UnknownVerdict & SetDetails);

interface ReadView {
  readonly operation: Operation;
  readonly elements: readonly unknown[];
  /** Element identity (canonical JSON) -> how many times the read returned it. */
  readonly counts: ReadonlyMap<string, number>;
}

/** Throws a HistoryError if two adds share an element or a read's value is not an array. */
export function checkSet(operations: readonly Operation[], options: SetCheckOptions = {}): SetVerdict {
  const requireFinalRead = options.requireFinalRead ?? true;
  const adds = indexAdds(operations);
  const reads = operations.filter((op) => op.f === 'readAll' && op.status === 'ok').map(viewOf);
  const finalRead = findFinalRead([...adds.values()], reads);

  const anomalies: SetAnomaly[] = [];
  const reported = new Set<string>(); // kind + element: report each problem once, at its first read
  const report = (anomaly: SetAnomaly): void => {
    const id = `${anomaly.kind}:${valueKey(anomaly.element)}`;
    if (reported.has(id)) return;
    reported.add(id);
    anomalies.push(anomaly);
  };
  // The final read first, so its anomalies lead the explanation.
  const ordered = finalRead === undefined ? reads : [finalRead, ...reads.filter((read) => read !== finalRead)];
  for (const read of ordered) checkContents(read, adds, read === finalRead, report);
  if (finalRead !== undefined) checkFinalLosses(finalRead, adds, report);
  checkRunningLosses(reads, finalRead, adds, report);

  const summary = summarize([...adds.values()], reads, finalRead);
  if (anomalies.length > 0) return { valid: false, explanation: explainAnomalies(anomalies.map((a) => a.message)), anomalies, summary };
  if (finalRead === undefined && requireFinalRead) {
    return { valid: 'unknown', reason: 'set: no final read (a readAll invoked after every add settled)', summary };
  }
  return { valid: true, summary };
}

/** Element identity -> its add. */
function indexAdds(operations: readonly Operation[]): Map<string, Operation> {
  const adds = new Map<string, Operation>();
  for (const op of operations) {
    if (op.f !== 'add') continue;
    const element = elementOf(op);
    const id = valueKey(element);
    const other = adds.get(id);
    if (other !== undefined) {
      throw new HistoryError('DUPLICATE_ELEMENT', `ops ${other.op} and ${op.op} both add ${formatValue(element)}; set adds must be unique`);
    }
    adds.set(id, op);
  }
  return adds;
}

function elementOf(add: Operation): unknown {
  const element = add.input !== undefined ? add.input : add.key;
  if (element === undefined) throw new HistoryError('MALFORMED_OPERATION', `op ${add.op} (add): needs a value or a key`);
  return element;
}

function viewOf(read: Operation): ReadView {
  if (!Array.isArray(read.output)) throw new HistoryError('MALFORMED_OPERATION', `op ${read.op} (readAll): an ok readAll must return an array`);
  const counts = new Map<string, number>();
  for (const element of read.output) {
    const id = valueKey(element);
    counts.set(id, (counts.get(id) ?? 0) + 1);
  }
  return { operation: read, elements: read.output, counts };
}

/** The last ok read invoked after every add was invoked and every ok or failed add completed. */
function findFinalRead(adds: readonly Operation[], reads: readonly ReadView[]): ReadView | undefined {
  let settledMs = -Infinity;
  for (const add of adds) settledMs = Math.max(settledMs, add.status === 'info' ? add.invokeMs : add.completeMs);
  let finalRead: ReadView | undefined;
  for (const read of reads) {
    if (read.operation.invokeMs > settledMs && (finalRead === undefined || read.operation.invokeMs >= finalRead.operation.invokeMs)) finalRead = read;
  }
  return finalRead;
}

function readName(read: ReadView, isFinal: boolean): string {
  return `${isFinal ? 'the final read' : 'read'} (${operationRef(read.operation)})`;
}

/** Phantoms, failed adds present, duplicates. */
function checkContents(read: ReadView, adds: ReadonlyMap<string, Operation>, isFinal: boolean, report: (anomaly: SetAnomaly) => void): void {
  const name = readName(read, isFinal);
  for (const [id, count] of read.counts) {
    const element: unknown = JSON.parse(id);
    const add = adds.get(id);
    if (add === undefined) {
      report({ kind: 'phantom', element, read: read.operation, message: `phantom: ${formatValue(element)} is in ${name} but was never added` });
    } else if (add.status === 'fail') {
      const message = `failed add present: add ${formatValue(element)} (${operationRef(add)}) was reported failed but is in ${name}`;
      report({ kind: 'failed-present', element, read: read.operation, add, message });
    }
    if (count > 1) {
      const message = `duplicate: ${formatValue(element)} appears ${count} times in ${name}`;
      report({ kind: 'duplicate', element, read: read.operation, ...(add === undefined ? {} : { add }), message });
    }
  }
}

function checkFinalLosses(finalRead: ReadView, adds: ReadonlyMap<string, Operation>, report: (anomaly: SetAnomaly) => void): void {
  for (const [id, add] of adds) {
    if (add.status !== 'ok' || finalRead.counts.has(id)) continue;
    const element = elementOf(add);
    const message = `lost write: add ${formatValue(element)} (${operationRef(add)}) was acknowledged but is missing from ${readName(finalRead, true)}`;
    report({ kind: 'lost', element, read: finalRead.operation, add, message });
  }
}

/**
 * An element must be in every read that began after it was acknowledged or after a read that
 * returned it completed. Elements are visited in order of that deadline, so each read looks only
 * at the elements already due.
 */
function checkRunningLosses(
  reads: readonly ReadView[],
  finalRead: ReadView | undefined,
  adds: ReadonlyMap<string, Operation>,
  report: (anomaly: SetAnomaly) => void,
): void {
  const due = new Map<string, { dueMs: number; because: string }>();
  for (const [id, add] of adds) {
    if (add.status === 'ok') due.set(id, { dueMs: add.completeMs, because: `acknowledged at ${formatMs(add.completeMs)} ms` });
  }
  for (const read of reads) {
    for (const id of read.counts.keys()) {
      // Phantoms and failed adds are anomalies of their own; their later absence is no loss.
      const add = adds.get(id);
      if (add === undefined || add.status === 'fail') continue;
      const current = due.get(id);
      if (current === undefined || read.operation.completeMs < current.dueMs) {
        due.set(id, { dueMs: read.operation.completeMs, because: `returned by read op ${read.operation.op}, which completed at ${formatMs(read.operation.completeMs)} ms` });
      }
    }
  }
  const byDue = [...due].sort((a, b) => a[1].dueMs - b[1].dueMs);
  for (const read of reads) {
    for (const [id, { dueMs, because }] of byDue) {
      if (dueMs >= read.operation.invokeMs) break;
      if (read.counts.has(id)) continue;
      const element: unknown = JSON.parse(id);
      const add = adds.get(id);
      const message = `lost write: ${formatValue(element)} (${because}) is missing from ${readName(read, read === finalRead)}, which began after that`;
      report({ kind: 'lost', element, read: read.operation, ...(add === undefined ? {} : { add }), message });
    }
  }
}

function summarize(adds: readonly Operation[], reads: readonly ReadView[], finalRead: ReadView | undefined): SetSummary {
  const indeterminate = adds.filter((add) => add.status === 'info');
  return {
    attempted: adds.length,
    acknowledged: adds.filter((add) => add.status === 'ok').length,
    failed: adds.filter((add) => add.status === 'fail').length,
    indeterminate: indeterminate.length,
    indeterminatePresent: finalRead === undefined ? 0 : indeterminate.filter((add) => finalRead.counts.has(valueKey(elementOf(add)))).length,
    ...(finalRead === undefined ? {} : { finalSize: finalRead.counts.size }),
    readsChecked: reads.length,
  };
}
