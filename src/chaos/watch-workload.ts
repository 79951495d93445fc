/**
 * Watchers in the fault suite (issue 21): one client watch per watched bucket runs from before the
 * first fault to after the heal, through leader kills, pauses and partitions, recording every
 * change it yields. Afterwards each bucket gets an end marker (a put whose revision bounds the
 * check), every watcher must reach it, and a fresh watch from the same start on a fresh client
 * (no faults any more) reads the partition's retained history: the committed history. The watch
 * checker (checkers/watch-history.ts) then requires each watcher to have seen exactly that, in
 * order, with no gap or duplicate; every register write the workload saw acknowledged must be in
 * it as well, so a reference that missed changes cannot pass either.
 *
 * The negative control `watch-skips-on-resume` runs the watchers with the client's test-only
 * testSkipOneEventOnResume: after each resume (a leader change, a disconnect) the watch drops one
 * change, which the check must report as a gap.
 *
 * Bounds: one watcher per bucket (the caller's list), each waits at most `waitMs` for its start,
 * its end marker and the reference read; a watcher that fails or does not catch up makes the
 * verdict 'unknown' (which fails the run), never valid.
 */
import { setMaxListeners } from 'node:events';
import { performance } from 'node:perf_hooks';
import { AtollClient, type WatchItem } from '../client/index.js';
import { checkWatchHistory, type AcknowledgedWrite, type WatchRecord, type WatchVerdict } from './checkers/watch-history.js';
import type { Verdict } from './checkers/verdict.js';
import type { HistoryEvent } from './history.js';

/** The client-side planted defect this module implements (not passed to the servers). */
export const WATCH_SKIP_BUG = 'watch-skips-on-resume';

const END_KEY = 'watch-end';

interface Watcher {
  readonly bucket: string;
  readonly records: WatchRecord[];
  start: number | undefined;
  caughtUpTo: number;
  failure: unknown;
  readonly done: Promise<void>;
}

function recordOf(item: WatchItem): WatchRecord | undefined {
  if (item.type === 'progress') return undefined;
  return item.type === 'put'
    ? { revision: item.revision, key: item.key, type: 'put', value: Buffer.from(item.value).toString() }
    : { revision: item.revision, key: item.key, type: 'delete', reason: item.reason };
}

function runWatcher(client: AtollClient, bucket: string, fromRevision: number | undefined, signal: AbortSignal, skipOnResume: boolean): Watcher {
  const records: WatchRecord[] = [];
  const watcher: Watcher = {
    bucket,
    records,
    start: fromRevision,
    caughtUpTo: fromRevision ?? 0,
    failure: undefined,
    done: Promise.resolve(),
  };
  (watcher as { done: Promise<void> }).done = (async () => {
    try {
      for await (const item of client.watch(bucket, { ...(fromRevision !== undefined && { fromRevision }), progress: true, signal, ...(skipOnResume && { testSkipOneEventOnResume: true }) })) {
        // With progress, the first item names where the watch starts.
        watcher.start ??= item.revision;
        const record = recordOf(item);
        if (record !== undefined) records.push(record);
        watcher.caughtUpTo = item.revision;
      }
    } catch (error) {
      watcher.failure = error;
    }
  })();
  return watcher;
}

async function until(check: () => boolean, timeoutMs: number): Promise<boolean> {
  const giveUpAt = performance.now() + timeoutMs;
  while (!check()) {
    if (performance.now() > giveUpAt) return false;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return true;
}

export interface WatchWorkloadOptions {
  readonly endpoints: readonly string[];
  readonly buckets: readonly string[];
  readonly skipOnResume: boolean;
  /** How long each wait (start, catching up, the reference read) may take. */
  readonly waitMs: number;
}

export class WatchWorkload {
  private readonly abort = new AbortController();
  private readonly watchers: Watcher[];
  private readonly client: AtollClient;
  /** Resumes the watch client made (leader changes, disconnects): shows the faults reached it. */
  resumes = 0;
  /** The resumes by the error code that interrupted the watch (diagnostics for the run's output). */
  private readonly resumeCodes = new Map<string, number>();

  private constructor(private readonly options: WatchWorkloadOptions) {
    // Every watcher's client.watch listens on this one signal.
    setMaxListeners(Math.max(10, options.buckets.length * 4), this.abort.signal);
    this.client = new AtollClient({
      endpoints: [...options.endpoints],
      defaultTimeoutMs: 2_000,
      logger: {
        debug: (object, message) => {
          if (message?.includes('resuming') !== true) return;
          this.resumes++;
          const code = String((object as { code?: unknown }).code ?? 'UNKNOWN');
          this.resumeCodes.set(code, (this.resumeCodes.get(code) ?? 0) + 1);
        },
        warn: () => undefined,
      },
    });
    this.watchers = options.buckets.map((bucket) => runWatcher(this.client, bucket, undefined, this.abort.signal, options.skipOnResume));
  }

  /** Starts the watchers and waits until each knows its start revision (before any fault). */
  static async start(options: WatchWorkloadOptions): Promise<WatchWorkload> {
    const workload = new WatchWorkload(options);
    await until(() => workload.watchers.every((watcher) => watcher.start !== undefined || watcher.failure !== undefined), options.waitMs);
    return workload;
  }

  /** Stops the watchers without a verdict (a run that failed before its end). */
  close(): void {
    this.abort.abort();
    this.client.close();
  }

  /**
   * After the heal: end markers, catch-up, the reference read, and the verdict. `events` is the
   * run's history (acknowledged register writes must be in the committed history).
   */
  async finish(writer: AtollClient, events: readonly HistoryEvent[]): Promise<{ verdict: Verdict; lines: string[] }> {
    const lines: string[] = [];
    const parts: Array<{ bucket: string; verdict: WatchVerdict | { valid: 'unknown'; reason: string } }> = [];
    const acknowledgedValues = acknowledgedPuts(events);
    const reference = new AtollClient({ endpoints: [...this.options.endpoints], defaultTimeoutMs: 3_000 });
    const referenceAbort = new AbortController();
    try {
      for (const watcher of this.watchers) parts.push({ bucket: watcher.bucket, verdict: await this.checkOne(watcher, writer, reference, referenceAbort.signal, acknowledgedValues) });
    } finally {
      referenceAbort.abort();
      this.abort.abort();
      await Promise.all(this.watchers.map((watcher) => watcher.done));
      reference.close();
      this.client.close();
    }
    let observed = 0;
    let committed = 0;
    for (const { bucket, verdict } of parts) {
      if ('summary' in verdict) {
        observed += verdict.summary.observed;
        committed += verdict.summary.committed;
      }
      if (verdict.valid !== true) lines.push(`watch ${bucket}: ${verdict.valid === false ? verdict.explanation.split('\n', 1)[0] : verdict.reason}`);
    }
    lines.unshift(`watch: ${parts.length} watchers, ${observed} changes observed of ${committed} committed, ${this.resumes} resumes (${[...this.resumeCodes].map(([code, count]) => `${code} ${count}`).join(', ')})`);
    const invalid = parts.find((part) => part.verdict.valid === false);
    if (invalid !== undefined && invalid.verdict.valid === false) return { verdict: { valid: false, explanation: `watch of ${invalid.bucket}: ${invalid.verdict.explanation}` }, lines };
    const unknown = parts.find((part) => part.verdict.valid === 'unknown');
    if (unknown !== undefined && unknown.verdict.valid === 'unknown') return { verdict: { valid: 'unknown', reason: `watch of ${unknown.bucket}: ${unknown.verdict.reason}` }, lines };
    return { verdict: { valid: true }, lines };
  }

  private async checkOne(
    watcher: Watcher,
    writer: AtollClient,
    referenceClient: AtollClient,
    signal: AbortSignal,
    acknowledgedValues: Map<string, Set<string>>,
  ): Promise<WatchVerdict | { valid: 'unknown'; reason: string }> {
    const { waitMs } = this.options;
    if (watcher.start === undefined) return { valid: 'unknown', reason: `the watcher never started: ${String(watcher.failure)}` };
    const endKey = `${watcher.bucket}/${END_KEY}`;
    let end: number | undefined;
    for (let attempt = 0; attempt < 20 && end === undefined; attempt++) {
      try {
        end = (await writer.put(endKey, 'end', { timeoutMs: 3_000 })).revision;
      } catch {
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
    }
    if (end === undefined) return { valid: 'unknown', reason: 'the end marker could not be written' };
    const endRevision = end;
    if (!(await until(() => watcher.caughtUpTo >= endRevision || watcher.failure !== undefined, waitMs)) || watcher.failure !== undefined) {
      return { valid: 'unknown', reason: `the watcher did not reach revision ${endRevision} (at ${watcher.caughtUpTo}${watcher.failure !== undefined ? `, failed: ${String(watcher.failure)}` : ''})` };
    }
    const reference = runWatcher(referenceClient, watcher.bucket, watcher.start, signal, false);
    if (!(await until(() => reference.caughtUpTo >= endRevision || reference.failure !== undefined, waitMs)) || reference.failure !== undefined) {
      return { valid: 'unknown', reason: `the reference read did not reach revision ${endRevision}${reference.failure !== undefined ? `: ${String(reference.failure)}` : ''}` };
    }
    const committed = reference.records.filter((record) => record.revision <= endRevision);
    const acknowledged: AcknowledgedWrite[] = [{ revision: endRevision, key: endKey, type: 'put' }];
    const verdict = checkWatchHistory({ observed: watcher.records.filter((record) => record.revision <= endRevision), committed, acknowledged });
    // Every acknowledged write of a key in this bucket is a committed put with its value.
    const committedValues = new Set(committed.filter((record) => record.type === 'put').map((record) => `${record.key}\u0000${record.value ?? ''}`));
    const lost: string[] = [];
    for (const [key, values] of acknowledgedValues) {
      if (!key.startsWith(`${watcher.bucket}/`)) continue;
      for (const value of values) if (!committedValues.has(`${key}\u0000${value}`)) lost.push(`${key} = ${JSON.stringify(value)}`);
    }
    if (lost.length === 0) return verdict;
    const explanation = `lost-ack: an acknowledged write of ${lost[0]} is not in the committed history${lost.length > 1 ? ` (and ${lost.length - 1} more)` : ''}`;
    return { valid: false, explanation: verdict.valid === false ? `${verdict.explanation}\n${explanation}` : explanation, summary: verdict.summary, anomalies: [] };
  }
}

/** The values of every write and applied CAS the workloads saw acknowledged, by key. */
function acknowledgedPuts(events: readonly HistoryEvent[]): Map<string, Set<string>> {
  const invoked = new Map<number, HistoryEvent>();
  const values = new Map<string, Set<string>>();
  for (const event of events) {
    if (event.type === 'invoke') {
      invoked.set(event.op, event);
      continue;
    }
    const invoke = invoked.get(event.op);
    invoked.delete(event.op);
    if (event.type !== 'ok' || invoke?.key === undefined) continue;
    let value: unknown;
    if (event.f === 'write') value = invoke.value;
    else if (event.f === 'cas' && event.value === true) value = (invoke.value as { next?: unknown } | undefined)?.next;
    if (typeof value !== 'string') continue;
    let set = values.get(invoke.key);
    if (set === undefined) values.set(invoke.key, (set = new Set()));
    set.add(value);
  }
  return values;
}
