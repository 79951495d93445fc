/**
 * The clients' history, in the chaos suite's format (src/chaos/history.ts): one invoke per
 * operation and at most one completion, in virtual time. A client (process) runs one operation at
 * a time; operations that act on several keys at once (a transaction's writes, a prefix read's
 * keys) are recorded once per key, each under a process of its own.
 */
import type { EventType, HistoryEvent, OpFunction } from '../../chaos/history.js';

export class HistoryRecorder {
  readonly events: HistoryEvent[] = [];
  private nextOp = 1;
  /** Synthetic processes for per-key records of multi-key operations, above every client's id. */
  private nextSyntheticProcess = 1_000_000;
  private readonly open = new Map<number, { process: number; f: OpFunction; key: string | undefined }>();

  constructor(
    private readonly now: () => number,
    /** Told of every event as one line (the trace). */
    private readonly onLine: (line: string) => void = () => undefined,
  ) {}

  invoke(process: number, f: OpFunction, key: string | undefined, value?: unknown): number {
    const op = this.nextOp++;
    this.open.set(op, { process, f, key });
    this.events.push({ process, op, type: 'invoke', f, ...(key !== undefined && { key }), ...(value !== undefined && { value }), timeMs: this.now() });
    this.onLine(`c${process} op ${op} invoke ${f} ${key ?? ''} ${value === undefined ? '' : JSON.stringify(value)}`);
    return op;
  }

  complete(op: number, type: Exclude<EventType, 'invoke'>, value?: unknown, error?: string): void {
    const invoked = this.open.get(op);
    if (invoked === undefined) return;
    this.open.delete(op);
    const { process, f, key } = invoked;
    this.events.push({
      process,
      op,
      type,
      f,
      ...(key !== undefined && { key }),
      ...(type === 'ok' && value !== undefined && { value }),
      ...(error !== undefined && { error }),
      timeMs: this.now(),
    });
    this.onLine(`c${process} op ${op} ${type} ${type === 'ok' && value !== undefined ? JSON.stringify(value) : ''}${error !== undefined ? ` (${error.slice(0, 120)})` : ''}`);
  }

  /** A process id used for one operation only. */
  syntheticProcess(): number {
    return this.nextSyntheticProcess++;
  }
}
