import { defineConfig } from 'vitest/config';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * The files that take longest here (seconds in a CI run), started first: with two workers the
 * run ends when its last file does, and vitest's own order on a clean checkout (no timing cache)
 * is by file size, which started the 400 s fault suite near the end (issue 18's CI runs: 859 s
 * of wall time for 1,494 s of tests on two workers). Longest first packs the two workers evenly.
 */
const longestFirst = [
  'test/fault/chaos.test.ts', // ~400 (npm run test:fault; npm test leaves test/fault out)
  'test/docker/compose-cluster.test.ts', // ~105
  'test/cli/errors.test.ts', // ~42
  'test/integration/membership-rebalance.test.ts', // ~33
  'test/cli/auth-cli.test.ts', // ~31
  'test/security/hostile-limits.test.ts', // ~27
  'test/docker/compose-tls.test.ts', // ~27
  'test/integration/split.test.ts', // ~26
  'test/security/hostile-tenant.test.ts', // ~26
  'test/integration/backup-restore.test.ts', // ~24
  'test/integration/cluster.test.ts', // ~24
];

/**
 * Directories whose tests run in the vitest process itself (in-process nodes, stores, simulators):
 * one worker process runs one file after another, importing src once, instead of a fresh process
 * per file. The rest keep a process per file: they start real servers and clusters, set
 * environment variables, or assert on what a process emits once (a deprecation warning).
 */
const inProcess = ['bench', 'chaos', 'client', 'hotkeys', 'keys', 'mvcc', 'node', 'raft', 'script', 'server', 'sim', 'storage', 'tenancy', 'txn', 'watch', 'wire'].map((dir) => `test/${dir}/**/*.test.ts`);

class LongestFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const rank = (file: TestSpecification): number => {
      const at = longestFirst.findIndex((path) => file.moduleId.endsWith(path));
      return at < 0 ? longestFirst.length : at;
    };
    // The in-process files after the others, so that each worker runs them one after another in
    // the process it keeps (vitest reuses a process only for consecutive files of one project).
    const shared = (file: TestSpecification): number => (file.project.config.isolate ? 0 : 1);
    // A stable sort: the files not listed keep vitest's order after the listed ones.
    return sorted
      .map((file, index) => ({ file, index }))
      .sort((a, b) => rank(a.file) - rank(b.file) || shared(a.file) - shared(b.file) || a.index - b.index)
      .map(({ file }) => file);
  }
}

export default defineConfig({
  test: {
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Integration tests spawn real server processes; two workers suit a 2-core machine.
    maxWorkers: 2,
    sequence: { sequencer: LongestFirstSequencer },
    // `npm test` runs the first two projects, `npm run test:containers` the third (test/docker, the
    // Docker image under testcontainers), `npm run test:fault` the fourth; `npx vitest run FILE`
    // finds a file in whichever project holds it.
    projects: [
      { extends: true, test: { name: 'processes', include: ['test/**/*.test.ts'], exclude: [...inProcess, 'test/docker/**', 'test/fault/**'], isolate: true } },
      { extends: true, test: { name: 'in-process', include: inProcess, isolate: false } },
      { extends: true, test: { name: 'containers', include: ['test/docker/**/*.test.ts'], isolate: true } },
      { extends: true, test: { name: 'fault', include: ['test/fault/**/*.test.ts'], isolate: true } },
    ],
  },
});
