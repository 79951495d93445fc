/**
 * CPU time of other processes (the servers under test), read from Linux's /proc/PID/stat, so a run
 * can say which side is saturated: on a 2-core machine, 100% is one whole core.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

let clockTicksPerSecond: number | undefined;

function ticksPerSecond(): number {
  if (clockTicksPerSecond === undefined) {
    try {
      clockTicksPerSecond = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
    } catch {
      clockTicksPerSecond = 100;
    }
  }
  return clockTicksPerSecond;
}

/** User plus system CPU seconds `pid` has used, or undefined when it cannot be read. */
export function processCpuSeconds(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) may hold spaces and parentheses: count fields after its last ')'.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const userTicks = Number(fields[11]);
    const systemTicks = Number(fields[12]);
    if (!Number.isFinite(userTicks) || !Number.isFinite(systemTicks)) return undefined;
    return (userTicks + systemTicks) / ticksPerSecond();
  } catch {
    return undefined;
  }
}

/** Measures CPU use between `start()` and `stop()`: this process's, and each sampled process's. */
export class CpuMeter {
  private startWallMs = 0;
  private startOwn: NodeJS.CpuUsage = { user: 0, system: 0 };
  private readonly startOthers = new Map<number, number>();

  constructor(private readonly pids: readonly number[]) {}

  start(): void {
    this.startWallMs = Date.now();
    this.startOwn = process.cpuUsage();
    for (const pid of this.pids) {
      const seconds = processCpuSeconds(pid);
      if (seconds !== undefined) this.startOthers.set(pid, seconds);
    }
  }

  /** Percent of one core: `own` for this process, `processes` per sampled pid that could be read. */
  stop(): { ownPercent: number; processes: Record<string, number> } {
    const wallSeconds = Math.max(0.001, (Date.now() - this.startWallMs) / 1000);
    const own = process.cpuUsage(this.startOwn);
    const processes: Record<string, number> = {};
    for (const [pid, startSeconds] of this.startOthers) {
      const seconds = processCpuSeconds(pid);
      if (seconds !== undefined) processes[String(pid)] = round1((100 * (seconds - startSeconds)) / wallSeconds);
    }
    return { ownPercent: round1((own.user + own.system) / 1e4 / wallSeconds), processes };
  }
}

function round1(value: number): number {
  return Math.round(value * 10) / 10;
}
