/**
 * The short fault run of `npm test`: real processes, at least ten leader kills, pauses and (when
 * network namespaces work here) partitions, under every workload (registers, sets, counters and the
 * bank's transactions) with watchers following the register and set buckets; then the negative
 * controls: each planted defect (in the servers, or for the watch and lock checkers in the
 * watchers' and lock workers' client) must make the checkers report INVALID. The long run is `npm run chaos`.
 */
import { describe, expect, it } from 'vitest';
import type { BankVerdict } from '../../src/chaos/checkers/bank.js';
import type { FaultKind } from '../../src/chaos/nemesis.js';
import { runChaos, type ChaosResult } from '../../src/chaos/runner.js';
import { requireNetns } from '../chaos/netns-env.js';

const log = (line: string): void => {
  if (/^chaos: (valid|INVALID|operations|faults|writes|register|set|counter|bank|network|watch|lock)/.test(line)) console.log(line);
};

// Partitions need network namespaces. Without them a developer's run leaves out the partition
// faults and the control that needs isolations, saying why; under CI=true the file fails instead.
const netns = await requireNetns('fault suite partition faults and the reads-without-quorum control');

describe('fault injection on real processes', () => {
  it('stays valid through leader kills, pauses, node kills and partitions', async () => {
    const result = await runChaos({
      nodes: 3,
      durationSec: 80,
      // This seed's schedule starts its tenth leader kill 43 s in (of gaps and downs), so a loaded
      // machine still gets ten in 80 s; it kills the bank's leader from the fifth fault on, and
      // draws a split, a one-way partition, an isolation, a pause and a node kill by the 15th.
      seed: 3523,
      partitions: 6,
      // Weighted towards leader kills (the main case): the schedule is drawn from this list.
      faults: ['kill-leader', 'kill-leader', 'kill-leader', 'kill-leader', 'kill-leader', 'kill-leader', 'pause-node', 'kill-node', 'isolate-leader', 'split', 'one-way-partition'],
      log,
    });
    expect(result.summary).toBe('chaos: valid');
    expect(result.valid).toBe(true);
    expect(result.faults['kill-leader'] ?? 0).toBeGreaterThanOrEqual(10);
    expect(result.faults['pause-node'] ?? 0).toBeGreaterThanOrEqual(1);
    if (netns.available) {
      // Namespaces work here, so the partition faults must have run: the runner may not skip them.
      expect(result.networkFaultsSkipped).toBeUndefined();
      expect(result.networkFaults).toBe(true);
      expect((result.faults['isolate-leader'] ?? 0) + (result.faults['split'] ?? 0) + (result.faults['one-way-partition'] ?? 0)).toBeGreaterThanOrEqual(1);
    } else console.log(`partition faults not run: ${netns.reason}`);
    expect(result.operations.ok).toBeGreaterThan(1_000);
    expect(result.recoveryMs.unrecovered).toBe(0);
    // Atomicity across failure: the bank's leader was killed with transfers in flight, and every
    // snapshot, the final one after recovery included, still shows the whole total.
    expect(result.bankLeaderFaults).toBeGreaterThanOrEqual(1);
    expect(result.report.verdicts['bank']).toMatchObject({ valid: true, summary: { total: 800 } });
    const bank = result.report.verdicts['bank'] as BankVerdict;
    expect(bank.summary.transfersAcknowledged).toBeGreaterThan(100);
    expect(bank.summary.readsChecked).toBeGreaterThan(20);
    // The watchers followed every change of their buckets through the faults (part of 'valid').
    expect(result.report.verdicts['watch']).toEqual({ valid: true });
    // The lock workers' grants, fenced writes and critical sections were judged valid too.
    expect(result.report.verdicts['lock']).toMatchObject({ valid: true });
  }, 240_000);

  it('stays valid through slow, one-way, blackholed and reset links (TCP fault proxies)', async () => {
    const result = await runChaos({
      nodes: 3,
      durationSec: 40,
      seed: 5,
      partitions: 6,
      faults: ['slow-link', 'one-way-link', 'blackhole-link', 'reset-link', 'kill-leader'],
      log,
    });
    expect(result.summary).toBe('chaos: valid');
    const linkFaults = ['slow-link', 'one-way-link', 'blackhole-link', 'reset-link'].reduce((sum, kind) => sum + (result.faults[kind] ?? 0), 0);
    expect(linkFaults).toBeGreaterThanOrEqual(5);
  }, 180_000);

  // Seed 7 kills the leader of the bank's partition first (at about 1 s), again at 9 and 12 s, and
  // other leaders in between; it pauses a node only at 18 s, which a loaded machine may not reach,
  // so the stale-read control takes seed 29, which pauses a node first (at about 2 s) and at 14 s.
  // Increments get a 60 ms timeout, so retries of increments that did apply happen in every run,
  // not only when a fault happens to stall one (a lightly loaded machine may otherwise see too few
  // for the no-dedup control to double count).
  // Stale reads need a replica that lags: an isolated leader serves its old state for the whole
  // isolation, where a paused node catches up within milliseconds of its resume (now that commits
  // reach followers without an extra fsync, pauses alone caught the defect only most of the time).
  // Every control shares its settings with one clean run below, which must be valid: so a control
  // cannot pass on a failure its planted bug did not cause.
  type Settings = { readonly name: string; readonly seed: number; readonly faults: FaultKind[]; readonly counterTimeoutMs: number; readonly needsNetns: boolean };
  const isolations: Settings = { name: 'seed 29, isolations', seed: 29, faults: ['isolate-leader', 'isolate-leader', 'pause-node'], counterTimeoutMs: 60, needsNetns: true };
  const kills: Settings = { name: 'seed 7, leader kills', seed: 7, faults: ['kill-leader', 'kill-leader', 'pause-node'], counterTimeoutMs: 60, needsNetns: false };
  const controlRun = (settings: Settings, testBug?: string): Promise<ChaosResult> =>
    runChaos({ nodes: 3, durationSec: 20, seed: settings.seed, partitions: 6, faults: settings.faults, counterTimeoutMs: settings.counterTimeoutMs, log, ...(testBug !== undefined && { testBug }) });

  /** Which checker must prove the defect (valid: false, never 'unknown') and the first line of its explanation. */
  type Catch = { readonly checker: string; readonly explanation: RegExp };
  const controls: Array<{ bug: string; settings: Settings; caughtBy: Catch[] }> = [
    // The stale-read verdict itself: a read returned a value that a write completed before the read
    // began had already replaced, or (the checker's other wording for a stale read, seen in CI once)
    // a read whose value no order can place inside its window. A register search that gave up
    // ('unknown') is not a catch.
    {
      bug: 'reads-without-quorum',
      settings: isolations,
      caughtBy: [{ checker: 'register', explanation: /is not linearizable: read\b.* (returned (a value already overwritten|the initial value, but .* had already replaced it)|cannot take effect in time)/ }],
    },
    // A write acknowledged before it commits is lost when its leader dies: the set checker sees the
    // acknowledged element missing, or the register checker sees a read return a value that had
    // been overwritten by the lost write's successor (either is the defect caught; which checker
    // sees it first depends on where the kill lands on a loaded machine).
    {
      bug: 'ack-before-commit',
      settings: kills,
      caughtBy: [
        { checker: 'set', explanation: /lost write/ },
        { checker: 'register', explanation: /is not linearizable/ },
      ],
    },
    { bug: 'no-dedup', settings: kills, caughtBy: [{ checker: 'counter', explanation: /double counting/ }] },
    // A transfer whose two writes commit in separate log entries: snapshots see half of it.
    { bug: 'torn-transactions', settings: kills, caughtBy: [{ checker: 'bank', explanation: /bank snapshot .* sums to \d+, not the total 800/ }] },
    // A watch whose resume after a leader change (or any disconnect) drops one change: the watch
    // checker sees the committed change the watcher never saw.
    { bug: 'watch-skips-on-resume', settings: kills, caughtBy: [{ checker: 'watch', explanation: /^watch of \w+: gap: the watcher never saw/ }] },
    // A lock that grants without waiting for its predecessor: holders whose leases lived hold at
    // once, which the lock checker sees as overlapping critical sections.
    { bug: 'lock-skips-waiting', settings: kills, caughtBy: [{ checker: 'lock', explanation: /^overlap: w\d's grant .* began \d+ ms before/ }] },
  ];

  for (const settings of [isolations, kills]) {
    it.skipIf(settings.needsNetns && !netns.available)(`the controls' settings without a planted bug are valid (${settings.name})`, async () => {
      const result = await controlRun(settings);
      expect(result.report.problems).toEqual([]);
      expect(result.summary).toBe('chaos: valid');
      expect(result.operations.ok).toBeGreaterThan(100);
      // The faults the controls rely on happened in the clean run as well.
      for (const fault of new Set(settings.faults.filter((kind) => kind !== 'pause-node'))) expect(result.faults[fault] ?? 0).toBeGreaterThanOrEqual(1);
    }, 180_000);
  }

  for (const { bug, settings, caughtBy } of controls) {
    it.skipIf(settings.needsNetns && !netns.available)(`negative control: the checkers catch the planted defect ${bug}`, async () => {
      // A planted defect shows only when a fault meets the operation it breaks, and a run on a
      // loaded machine does few operations (CI under load: 40 ok, none met): one more run of the
      // same settings when the first caught nothing. The checker must still name the defect.
      const catchesOf = (result: ChaosResult): string[] =>
        caughtBy
          .filter(({ checker, explanation }) => {
            const verdict = result.report.verdicts[checker];
            return verdict?.valid === false && explanation.test(verdict.explanation.split('\n', 1)[0] ?? '');
          })
          .map(({ checker }) => checker);
      let result = await controlRun(settings, bug);
      if (catchesOf(result).length === 0) {
        console.log(`control ${bug}: the first run did not show the defect (${result.operations.ok} ok operations; ${result.report.problems.join(' | ') || 'valid'}); running it once more`);
        result = await controlRun(settings, bug);
      }
      expect(result.valid).toBe(false);
      expect(catchesOf(result), `caught by none of ${caughtBy.map(({ checker }) => checker).join(', ')}: ${result.report.problems.join(' | ')}`).not.toEqual([]);
    }, 300_000);
  }
});
