/**
 * The short fault run of `npm test`: real processes, at least ten leader kills, pauses and (when
 * network namespaces work here) partitions; then the negative controls: each planted server defect
 * must make the checkers report INVALID. The long run is `npm run chaos`.
 */
import { describe, expect, it } from 'vitest';
import { runChaos } from '../../src/chaos/runner.js';

const log = (line: string): void => {
  if (/^chaos: (valid|INVALID|operations|faults|writes|registers|set|counter|network)/.test(line)) console.log(line);
};

describe('fault injection on real processes', () => {
  it('stays valid through leader kills, pauses, node kills and partitions', async () => {
    const result = await runChaos({
      nodes: 3,
      durationSec: 80,
      seed: 11,
      partitions: 6,
      // Weighted towards leader kills (the main case): the schedule is drawn from this list.
      faults: ['kill-leader', 'kill-leader', 'kill-leader', 'kill-leader', 'kill-leader', 'kill-leader', 'pause-node', 'kill-node', 'isolate-leader', 'split', 'one-way-partition'],
      log,
    });
    expect(result.summary).toBe('chaos: valid');
    expect(result.valid).toBe(true);
    expect(result.faults['kill-leader'] ?? 0).toBeGreaterThanOrEqual(10);
    expect(result.faults['pause-node'] ?? 0).toBeGreaterThanOrEqual(1);
    if (result.networkFaults) expect((result.faults['isolate-leader'] ?? 0) + (result.faults['split'] ?? 0) + (result.faults['one-way-partition'] ?? 0)).toBeGreaterThanOrEqual(1);
    else console.log(`partition faults not run: ${result.networkFaultsSkipped}`);
    expect(result.operations.ok).toBeGreaterThan(1_000);
    expect(result.recoveryMs.unrecovered).toBe(0);
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

  const controls: Array<{ bug: string; checker: RegExp }> = [
    { bug: 'reads-without-quorum', checker: /registers: /},
    { bug: 'ack-before-commit', checker: /set: .*lost write/ },
    { bug: 'no-dedup', checker: /counter: .*double counting/ },
  ];
  for (const { bug, checker } of controls) {
    it(`negative control: the checkers catch the planted defect ${bug}`, async () => {
      const result = await runChaos({ nodes: 3, durationSec: 20, seed: 7, partitions: 6, faults: ['kill-leader', 'kill-leader', 'pause-node'], testBug: bug, log });
      expect(result.valid).toBe(false);
      expect(result.report.problems.join('\n')).toMatch(checker);
    }, 180_000);
  }
});
