#!/usr/bin/env node
// Top self-time and total-time entries of a .cpuprofile: node scripts/profile-top.mjs FILE [N] [FUNCTION]
// (FUNCTION: also the callers of that function). TAIL_S=N counts only the last N seconds.
import { readFileSync } from 'node:fs';
const p = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const n = Number(process.argv[3] ?? 25);
const byId = new Map(p.nodes.map((x) => [x.id, x]));
const parent = new Map();
for (const x of p.nodes) for (const c of x.children ?? []) parent.set(c, x.id);
const self = new Map();
const dt = p.timeDeltas; let total = 0;
const counts = new Map();
// TAIL_S=N: only the samples of the profile's last N seconds (e.g. the idle phase after start-up).
const span = dt.reduce((a, b) => a + b, 0);
const fromUs = process.env.TAIL_S ? span - Number(process.env.TAIL_S) * 1e6 : -1;
let at = 0;
p.samples.forEach((id, i) => { const d = dt[i] ?? 0; at += d; if (at < fromUs) return; counts.set(id, (counts.get(id) ?? 0) + d); total += d; });
const key = (x) => `${x.callFrame.functionName || '(anon)'} ${x.callFrame.url.split('/').slice(-2).join('/')}:${x.callFrame.lineNumber + 1}`;
const tot = new Map();
for (const [id, d] of counts) {
  const k = key(byId.get(id)); self.set(k, (self.get(k) ?? 0) + d);
  const seen = new Set(); let cur = id;
  while (cur !== undefined) { const kk = key(byId.get(cur)); if (!seen.has(kk)) { seen.add(kk); tot.set(kk, (tot.get(kk) ?? 0) + d); } cur = parent.get(cur); }
}
const show = (m, title) => { console.log(`${title} (total ${(total / 1e6).toFixed(2)} s)`); [...m].sort((a, b) => b[1] - a[1]).slice(0, n).forEach(([k, d]) => console.log(`${(d / 1e3).toFixed(0).padStart(7)} ms ${(100 * d / total).toFixed(1).padStart(5)}%  ${k}`)); };
show(self, 'SELF'); show(tot, 'TOTAL');
if (process.argv[4]) {
  const callers = new Map();
  for (const [id, d] of counts) {
    // total time under a frame matching argv[4], attributed to its nearest distinct caller
    let cur = id; const chain = [];
    while (cur !== undefined) { chain.push(cur); cur = parent.get(cur); }
    const i = chain.findIndex((c) => key(byId.get(c)).startsWith(process.argv[4] + ' '));
    if (i < 0) continue;
    const c = chain.slice(i + 1, i + 4).map((c) => key(byId.get(c))).join(' < ');
    callers.set(c, (callers.get(c) ?? 0) + d);
  }
  show(callers, `CALLERS of ${process.argv[4]}`);
}
