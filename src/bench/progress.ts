/**
 * Progress of long benchmark phases (preload, warm-up, measurement). On a terminal one status line
 * is redrawn in place four times a second; elsewhere (a pipe, CI, a log file) a plain line is
 * printed every few seconds, so a long run is never silent and a log stays readable.
 */
import { performance } from 'node:perf_hooks';

export interface ProgressCounts {
  /** Operations (or keys) completed so far. */
  readonly done: number;
  readonly errors: number;
}

export interface ProgressPlan {
  /** What runs, as the line starts: "put c=64 measure". */
  readonly label: string;
  /** The phase ends after this long, or after `total` units, when known. */
  readonly durationMs?: number;
  readonly total?: number;
  /** "ops" or "keys". */
  readonly unit: string;
}

const ttyIntervalMs = 250;
const plainIntervalMs = 2_000;

function grouped(value: number): string {
  return Math.round(value).toLocaleString('en-US');
}

/** The status text of one tick. Exported for tests. */
export function progressLine(plan: ProgressPlan, elapsedMs: number, counts: ProgressCounts, ratePerSecond: number): string {
  const parts = [`${plan.label}`];
  const elapsed = (elapsedMs / 1000).toFixed(1);
  parts.push(plan.durationMs !== undefined ? `${elapsed}/${(plan.durationMs / 1000).toFixed(0)} s` : `${elapsed} s`);
  parts.push(plan.total !== undefined ? `${grouped(counts.done)}/${grouped(plan.total)} ${plan.unit}` : `${grouped(counts.done)} ${plan.unit}`);
  parts.push(`${grouped(ratePerSecond)} ${plan.unit}/s`);
  parts.push(`${grouped(counts.errors)} errors`);
  return parts.join('  ');
}

export class ProgressDisplay {
  constructor(
    private readonly write: (text: string) => void,
    private readonly tty: boolean,
  ) {}

  /** Starts reporting a phase; call the returned function when it ends. */
  track(plan: ProgressPlan, counts: () => ProgressCounts): () => void {
    const startMs = performance.now();
    let lastMs = startMs;
    let lastDone = 0;
    const tick = (): void => {
      const nowMs = performance.now();
      const current = counts();
      const rate = nowMs > lastMs ? ((current.done - lastDone) * 1000) / (nowMs - lastMs) : 0;
      lastMs = nowMs;
      lastDone = current.done;
      const line = progressLine(plan, nowMs - startMs, current, rate);
      this.write(this.tty ? `\r\x1b[2K${line}` : `bench: ${line}\n`);
    };
    const timer = setInterval(tick, this.tty ? ttyIntervalMs : plainIntervalMs);
    return () => {
      clearInterval(timer);
      if (this.tty) this.write('\r\x1b[2K');
    };
  }

  /** A line that stays (a phase's result). */
  note(line: string): void {
    this.write(`${this.tty ? '' : 'bench: '}${line}\n`);
  }
}
