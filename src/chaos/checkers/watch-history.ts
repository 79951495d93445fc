/**
 * Watch history: what a watcher observed must be exactly the committed history of its keys after
 * its start revision: every change once (no gap, no duplicate), in revision order, and nothing
 * that was not committed. The committed history comes from outside the watch under test (a fresh
 * read of the partition's retained history once the faults are over); every write a client saw
 * acknowledged must be in it, at the revision the acknowledgement named.
 */
import { explainAnomalies, type InvalidVerdict, type UnknownVerdict, type ValidVerdict } from './verdict.js';

/** One change: a put (with its value as text) or a delete ('deleted' or 'expired'). */
export interface WatchRecord {
  readonly revision: number;
  readonly key: string;
  readonly type: 'put' | 'delete';
  readonly value?: string;
  readonly reason?: string;
}

/** A write a client saw succeed, with the revision it was applied at. */
export interface AcknowledgedWrite {
  readonly revision: number;
  readonly key: string;
  readonly type: 'put' | 'delete';
}

export type WatchAnomalyKind = 'duplicate' | 'gap' | 'order' | 'unexpected' | 'different' | 'lost-ack';

export interface WatchAnomaly {
  readonly kind: WatchAnomalyKind;
  readonly message: string;
}

export interface WatchSummary {
  readonly observed: number;
  readonly committed: number;
  readonly acknowledged: number;
  /** Committed changes whose reason is 'expired'. */
  readonly expiries: number;
}

export type WatchVerdict =
  | (ValidVerdict & { readonly summary: WatchSummary })
  | (InvalidVerdict & { readonly summary: WatchSummary; readonly anomalies: readonly WatchAnomaly[] })
  | (UnknownVerdict & { readonly summary: WatchSummary });

const idOf = (record: { revision: number; key: string }): string => `${record.revision}/${record.key}`;
const show = (record: WatchRecord): string =>
  `${record.type} ${record.key} at revision ${record.revision}${record.reason ? ` (${record.reason})` : ''}${record.value !== undefined ? ` = ${JSON.stringify(record.value.slice(0, 40))}` : ''}`;

export function checkWatchHistory(input: {
  readonly observed: readonly WatchRecord[];
  readonly committed: readonly WatchRecord[];
  readonly acknowledged?: readonly AcknowledgedWrite[];
}): WatchVerdict {
  const { observed, committed } = input;
  const acknowledged = input.acknowledged ?? [];
  const summary: WatchSummary = {
    observed: observed.length,
    committed: committed.length,
    acknowledged: acknowledged.length,
    expiries: committed.filter((record) => record.reason === 'expired').length,
  };
  if (committed.length === 0) return { valid: 'unknown', reason: 'watch-history: the committed history is empty', summary };
  const anomalies: WatchAnomaly[] = [];
  const committedById = new Map(committed.map((record) => [idOf(record), record]));
  const seen = new Set<string>();
  let previous: WatchRecord | undefined;
  for (const record of observed) {
    const id = idOf(record);
    if (seen.has(id)) anomalies.push({ kind: 'duplicate', message: `the watcher saw ${show(record)} twice` });
    seen.add(id);
    if (previous !== undefined && record.revision < previous.revision) {
      anomalies.push({ kind: 'order', message: `the watcher saw ${show(record)} after ${show(previous)}` });
    }
    previous = record;
    const expected = committedById.get(id);
    if (expected === undefined) anomalies.push({ kind: 'unexpected', message: `the watcher saw ${show(record)}, which was never committed` });
    else if (expected.type !== record.type || expected.value !== record.value || (expected.reason ?? '') !== (record.reason ?? '')) {
      anomalies.push({ kind: 'different', message: `the watcher saw ${show(record)}, but the committed change is ${show(expected)}` });
    }
  }
  for (const record of committed) {
    if (!seen.has(idOf(record))) anomalies.push({ kind: 'gap', message: `the watcher never saw ${show(record)}` });
  }
  for (const write of acknowledged) {
    const found = committedById.get(idOf(write));
    if (found === undefined || found.type !== write.type) {
      anomalies.push({ kind: 'lost-ack', message: `an acknowledged ${write.type} of ${write.key} at revision ${write.revision} is not in the committed history` });
    }
  }
  if (anomalies.length === 0) return { valid: true, summary };
  return { valid: false, explanation: explainAnomalies(anomalies.map((anomaly) => `${anomaly.kind}: ${anomaly.message}`)), summary, anomalies };
}
