// What a request's cancellation costs to make: an AbortController (and its signal) against the
// node's CallAbort (src/api/call-signal.ts), each with one 'abort' listener added and removed, as a
// request that waits for its answer does. `npm run build` first; prints ns per request, three runs.
//   node scripts/call-signal-bench.mjs [COUNT]
import { CallAbort } from '../dist/src/api/call-signal.js';

const count = Number(process.argv[2] ?? 200_000);
let sink = 0;
function abortController() {
  const controller = new AbortController();
  const listener = () => undefined;
  controller.signal.addEventListener('abort', listener, { once: true });
  controller.signal.removeEventListener('abort', listener);
  if (controller.signal.aborted) sink++;
}
function callAbort() {
  const abort = new CallAbort();
  const listener = () => undefined;
  abort.signal.addEventListener('abort', listener, { once: true });
  abort.signal.removeEventListener('abort', listener);
  if (abort.signal.aborted) sink++;
}
function nsPer(run) {
  const start = process.hrtime.bigint();
  for (let i = 0; i < count; i++) run();
  return Number(process.hrtime.bigint() - start) / count;
}
for (let round = 1; round <= 3; round++) {
  const a = nsPer(abortController);
  const b = nsPer(callAbort);
  console.log(`round ${round}: AbortController ${a.toFixed(0)} ns, CallAbort ${b.toFixed(0)} ns per request (${(a / b).toFixed(0)}x)`);
}
if (sink !== 0) console.log('unexpected abort');
