// Two costs every request pays, each against what it replaced, in ns per request (three rounds):
// - its cancellation: an AbortController (and its signal) against the node's CallAbort
//   (src/api/call-signal.ts), each with one 'abort' listener added and removed, as a request that
//   waits for its answer does;
// - its token's SHA-256 (an authenticated request; src/node/service/auth.ts hashToken): a Hash
//   object (createHash, update, digest) against the one-shot crypto.hash.
// `npm run build` first.
//   node scripts/request-costs-bench.mjs [COUNT]
import { createHash } from 'node:crypto';
import { CallAbort } from '../dist/src/api/call-signal.js';
import { hashToken } from '../dist/src/node/service/auth.js';

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
const token = `atk_${'x'.repeat(43)}`;
const hashObject = () => {
  if (createHash('sha256').update(token, 'utf8').digest('hex').length !== 64) sink++;
};
const oneShot = () => {
  if (hashToken(token).length !== 64) sink++;
};
for (let round = 1; round <= 3; round++) {
  const a = nsPer(hashObject);
  const b = nsPer(oneShot);
  console.log(`round ${round}: token hash with createHash ${a.toFixed(0)} ns, with crypto.hash ${b.toFixed(0)} ns (${(a / b).toFixed(1)}x)`);
}
if (sink !== 0) console.log('unexpected result');
