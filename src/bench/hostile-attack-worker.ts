/**
 * The worker thread of the hostile load run: runs the hostile patterns (hostile-attacks.ts) with
 * the plan it is given as workerData, posts `{ type: 'stats' }` every second and
 * `{ type: 'done' }` once every pattern has stopped (at the plan's deadline, or when the parent
 * posts `{ type: 'stop' }`); the parent then terminates it.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { emptyAttackStats, runAttacks, type AttackPlan, type AttackStats } from './hostile-attacks.js';

export type AttackWorkerMessage = { readonly type: 'stats'; readonly stats: AttackStats } | { readonly type: 'done'; readonly stats: AttackStats };

const port = parentPort;
if (port === null) throw new Error('hostile-attack-worker.js runs as a worker thread (hostile-load.ts starts it)');
const stats = emptyAttackStats();
const stopped = new Promise<void>((resolveStop) => port.on('message', (message: { type?: string }) => message.type === 'stop' && resolveStop()));
const ticker = setInterval(() => port.postMessage({ type: 'stats', stats } satisfies AttackWorkerMessage), 1_000);
await runAttacks(workerData as AttackPlan, stats, stopped);
clearInterval(ticker);
// The parent ends the thread once it has this (whatever a pattern left behind, such as a call
// never answered, must not keep it alive).
port.postMessage({ type: 'done', stats } satisfies AttackWorkerMessage);
