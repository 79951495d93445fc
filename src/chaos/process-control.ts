/**
 * Process faults for the chaos harness: freeze a server (SIGSTOP) the way a long GC pause or a
 * stalled VM would, thaw it (SIGCONT), and kill it without a chance to clean up (SIGKILL).
 *
 * Signals are delivered asynchronously, so `pause` and `resume` wait until the kernel reports the
 * new state (Linux /proc); a caller can then rely on the process being frozen. Every wait is
 * bounded. A pid that does not exist is an operating error: `process.kill` throws its ESRCH.
 */
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';

export const processControlLimits = Object.freeze({
  defaultWaitMs: 5_000,
  pollIntervalMs: 5,
});
assert.ok(processControlLimits.pollIntervalMs < processControlLimits.defaultWaitMs);

/** The scheduler state of a process, from the third field of /proc/PID/stat. */
export type ProcessState = 'running' | 'sleeping' | 'disk-sleep' | 'stopped' | 'zombie' | 'dead' | 'other';

export interface WaitOptions {
  readonly timeoutMs?: number;
}

export interface ExitStatus {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
}

/** Freezes the process and waits until it is stopped. */
export async function pause(pid: number, options: WaitOptions = {}): Promise<void> {
  assertSinglePid(pid);
  process.kill(pid, 'SIGSTOP');
  await waitForState(pid, (state) => state === 'stopped', 'stopped', options.timeoutMs);
}

/** Thaws a process frozen by `pause` and waits until it is no longer stopped. */
export async function resume(pid: number, options: WaitOptions = {}): Promise<void> {
  assertSinglePid(pid);
  process.kill(pid, 'SIGCONT');
  await waitForState(pid, (state) => state !== 'stopped', 'not stopped', options.timeoutMs);
}

/**
 * Sends SIGKILL and waits for the child's exit. A child that has already exited is not signalled
 * again (its pid may have been reused). Works on a paused child too: SIGKILL needs no SIGCONT.
 */
export async function killHard(child: ChildProcess, options: WaitOptions = {}): Promise<ExitStatus> {
  const timeoutMs = options.timeoutMs ?? processControlLimits.defaultWaitMs;
  if (hasExited(child)) return { code: child.exitCode, signal: child.signalCode };
  const exited = new Promise<ExitStatus>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  child.kill('SIGKILL');
  const timeout = sleep(timeoutMs, 'timeout' as const, { ref: false });
  const outcome = await Promise.race([exited, timeout]);
  if (outcome === 'timeout') throw new Error(`process ${child.pid} did not exit within ${timeoutMs} ms of SIGKILL`);
  return outcome;
}

/** The process's state, or undefined when it no longer exists (or /proc is not there). */
export async function processState(pid: number): Promise<ProcessState | undefined> {
  assertSinglePid(pid);
  let stat: string;
  try {
    stat = await readFile(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
  // The command name (field 2) is in parentheses and may itself contain spaces or parentheses.
  const code = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
  return stateOfCode(code);
}

function stateOfCode(code: string): ProcessState {
  switch (code) {
    case 'R':
      return 'running';
    case 'S':
      return 'sleeping';
    case 'D':
      return 'disk-sleep';
    case 'T':
    case 't':
      return 'stopped';
    case 'Z':
      return 'zombie';
    case 'X':
      return 'dead';
    default:
      return 'other';
  }
}

async function waitForState(
  pid: number,
  accept: (state: ProcessState) => boolean,
  wanted: string,
  timeoutMs: number = processControlLimits.defaultWaitMs,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const state = await processState(pid);
    // Without /proc there is nothing to observe; the signal was sent, which is all we can do.
    if (state === undefined) return;
    if (accept(state)) return;
    if (state === 'zombie' || state === 'dead') throw new Error(`process ${pid} has exited; it cannot become ${wanted}`);
    if (Date.now() >= deadline) throw new Error(`process ${pid} is ${state}, not ${wanted}, after ${timeoutMs} ms`);
    await sleep(processControlLimits.pollIntervalMs);
  }
}

function hasExited(child: ChildProcess): boolean {
  return child.exitCode !== null || child.signalCode !== null;
}

/** 0, -1 and negative pids signal whole groups or every process: never what a caller meant. */
function assertSinglePid(pid: number): void {
  assert.ok(Number.isInteger(pid) && pid > 1, `not a single process id: ${pid}`);
}
