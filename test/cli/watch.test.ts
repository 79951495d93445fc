/**
 * `atoll watch` through `run(argv, io)` against a real gRPC server around a fake node: the changes
 * after --from, as text and as JSON lines (a delete with its reason), --limit, and a bad prefix
 * as `error CODE: message` with exit 2.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { run, type CliIo } from '../../src/cli/run.js';
import { startNode, type RunningNode } from '../server/harness.js';

let running: RunningNode;

beforeAll(async () => {
  running = await startNode({ nodeId: 1, partitionCount: 4 });
});
afterAll(() => running.stop());

async function atoll(...argv: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const io: CliIo = { stdout: (text) => (stdout += text), stderr: (text) => (stderr += text), env: { ATOLL_ENDPOINTS: running.address } };
  const code = await run(argv, io);
  return { code, stdout, stderr };
}

describe('atoll watch', () => {
  it('prints the changes after --from, in order, and stops after --limit', async () => {
    const first = await atoll('put', 'wcli/a', 'one');
    const from = Number(/revision (\d+)/.exec(first.stdout)?.[1]);
    await atoll('put', 'wcli/b', 'two');
    await atoll('put', 'other/x', 'not watched');
    await atoll('del', 'wcli/a');
    const text = await atoll('watch', 'wcli', '--from', String(from), '--limit', '2');
    expect(text).toEqual({ code: 0, stdout: `put\t${from + 1}\twcli/b\ttwo\ndelete\t${from + 3}\twcli/a\tdeleted\n`, stderr: '' });
    const asJson = await atoll('--json', 'watch', 'wcli', '--from', String(from - 1), '--limit', '3');
    expect(asJson.code).toBe(0);
    const lines = asJson.stdout.trim().split('\n').map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(lines.map((line) => [line['type'], line['key'], line['revision']])).toEqual([
      ['put', 'wcli/a', from],
      ['put', 'wcli/b', from + 1],
      ['delete', 'wcli/a', from + 3],
    ]);
    expect(lines[0]).toMatchObject({ value: 'one', valueEncoding: 'utf8', version: 1 });
    expect(lines[2]).toMatchObject({ reason: 'deleted' });
  });

  it('a prefix that spans buckets is an error: exit 2, error CODE: message', async () => {
    const outcome = await atoll('watch', '');
    expect(outcome.code).toBe(2);
    expect(outcome.stderr).toMatch(/^error PREFIX_SPANS_BUCKETS: /);
  });
});
