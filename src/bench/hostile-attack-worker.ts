/**
 * The worker thread of the hostile load run: prepares the hostile patterns (hostile-attacks.ts)
 * of the plan it is given as workerData and posts `{ type: 'ready' }`; on `{ type: 'start',
 * untilEpochMs }` runs them, posts `{ type: 'stats' }` every second and `{ type: 'done' }` once
 * every pattern has stopped (at that deadline, or when the parent posts `{ type: 'stop' }`); the
 * parent then terminates it.
 */
import { readlinkSync } from 'node:fs';
import { setPriority } from 'node:os';
import { parentPort, workerData } from 'node:worker_threads';
import { emptyAttackStats, prepareAttacks, runAttacks, type AttackPlan, type AttackStats } from './hostile-attacks.js';

export type AttackWorkerMessage = { readonly type: 'ready' } | { readonly type: 'stats'; readonly stats: AttackStats } | { readonly type: 'done'; readonly stats: AttackStats };
export type AttackWorkerCommand = { readonly type: 'start'; readonly untilEpochMs: number } | { readonly type: 'stop' };

const port = parentPort;
if (port === null) throw new Error('hostile-attack-worker.js runs as a worker thread (hostile-load.ts starts it)');
const stats = emptyAttackStats();
const plan = workerData as AttackPlan & { readonly threadNice?: number };
// The attackers stand for clients on other hosts: at threadNice (Linux: a thread's own nice value,
// set through its thread id), they take only the CPU the nodes and the measuring thread leave.
if (plan.threadNice !== undefined) {
  const tid = Number(readlinkSync('/proc/thread-self').split('/').pop());
  setPriority(tid, plan.threadNice);
}
const started = new Promise<number>((resolveStart) => port.on('message', (message: AttackWorkerCommand) => message.type === 'start' && resolveStart(message.untilEpochMs)));
const stopped = new Promise<void>((resolveStop) => port.on('message', (message: AttackWorkerCommand) => message.type === 'stop' && resolveStop()));
const prepared = prepareAttacks(plan);
port.postMessage({ type: 'ready' } satisfies AttackWorkerMessage);
const untilEpochMs = await Promise.race([started, stopped.then(() => Date.now())]);
const ticker = setInterval(() => port.postMessage({ type: 'stats', stats } satisfies AttackWorkerMessage), 1_000);
await runAttacks({ ...plan, untilEpochMs }, stats, stopped, undefined, prepared);
clearInterval(ticker);
// The parent ends the thread once it has this (whatever a pattern left behind, such as a call
// never answered, must not keep it alive).
port.postMessage({ type: 'done', stats } satisfies AttackWorkerMessage);
