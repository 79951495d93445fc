/**
 * The `atoll` command line through `run(argv, io)` against a real gRPC server around a fake node:
 * every command, exit codes 0 / 1 / 2, `(not found)`, a stored "0", and `--json`.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { AtollError } from '../../src/errors.js';
import { defaultEndpoints, run, type CliIo } from '../../src/cli/run.js';
import { AtollClient, type AtollClientOptions } from '../../src/index.js';
import { startNode, type RunningNode } from '../server/harness.js';

let running: RunningNode;

beforeAll(async () => {
  running = await startNode({ nodeId: 1, partitionCount: 4 });
});
afterAll(() => running.stop());
beforeEach(() => {
  running.node.before = undefined;
});

interface Outcome {
  code: number;
  stdout: string;
  stderr: string;
}

async function atoll(...argv: string[]): Promise<Outcome> {
  return atollWith({}, ...argv);
}

async function atollWith(env: Record<string, string>, ...argv: string[]): Promise<Outcome> {
  let stdout = '';
  let stderr = '';
  const io: CliIo = {
    stdout: (text) => (stdout += text),
    stderr: (text) => (stderr += text),
    env: { ATOLL_ENDPOINTS: running.address, ...env },
  };
  const code = await run(argv, io);
  return { code, stdout, stderr };
}

describe('atoll CLI', () => {
  it('put then get prints the value; exit 0', async () => {
    const put = await atoll('put', 'cli/greeting', 'hello world');
    expect(put).toMatchObject({ code: 0, stderr: '' });
    expect(put.stdout).toMatch(/^OK revision \d+\n$/);
    expect(await atoll('get', 'cli/greeting')).toEqual({ code: 0, stdout: 'hello world\n', stderr: '' });
  });

  it('a missing key prints (not found) and exits 1', async () => {
    expect(await atoll('get', 'cli/missing')).toEqual({ code: 1, stdout: '(not found)\n', stderr: '' });
    expect((await atoll('del', 'cli/missing')).code).toBe(1);
    expect(await atoll('exists', 'cli/missing')).toEqual({ code: 1, stdout: 'false\n', stderr: '' });
    expect(await atoll('extend', 'cli/missing', '1000')).toMatchObject({ code: 1, stdout: '(not found)\n' });
  });

  it('a stored 0 prints 0 (it is a hit, not a miss)', async () => {
    await atoll('put', 'cli/zero', '0');
    expect(await atoll('get', 'cli/zero')).toEqual({ code: 0, stdout: '0\n', stderr: '' });
    await atoll('put', 'cli/empty', '');
    expect(await atoll('get', 'cli/empty')).toEqual({ code: 0, stdout: '\n', stderr: '' });
  });

  it('--json output for get, put and a miss', async () => {
    const put = await atoll('--json', 'put', 'cli/json', 'v');
    expect(JSON.parse(put.stdout)).toMatchObject({ applied: true });
    const got = await atoll('get', 'cli/json', '--json');
    expect(got.code).toBe(0);
    expect(JSON.parse(got.stdout)).toMatchObject({ key: 'cli/json', found: true, value: 'v', version: 1 });
    const missing = await atoll('get', '--json', 'cli/nothing');
    expect(missing.code).toBe(1);
    expect(JSON.parse(missing.stdout)).toMatchObject({ found: false, value: null });
  });

  it('conditional puts: a failed condition prints (not applied) and exits 1', async () => {
    expect((await atoll('put', 'cli/cond', 'a', '--if-absent')).code).toBe(0);
    expect(await atoll('put', 'cli/cond', 'b', '--if-absent')).toMatchObject({ code: 1, stdout: '(not applied)\n' });
    const revision = JSON.parse((await atoll('get', 'cli/cond', '--json')).stdout).modRevision as number;
    expect((await atoll('put', 'cli/cond', 'c', '--if-revision', String(revision))).code).toBe(0);
    expect((await atoll('put', 'cli/cond', 'd', '--if-value', 'c')).code).toBe(0);
    expect((await atoll('put', 'cli/cond', 'e', '--if-present', '--ttl', '60000')).code).toBe(0);
    expect((await atoll('put', 'cli/cond', 'f', '--keep-ttl')).code).toBe(0);
    const got = JSON.parse((await atoll('get', 'cli/cond', '--json')).stdout) as { value: string; expiresAtMs: number };
    expect(got.value).toBe('f');
    expect(got.expiresAtMs).toBeGreaterThan(Date.now());
  });

  it('incr with default and negative deltas, and --json beyond 2^53', async () => {
    expect(await atoll('incr', 'cli/counter')).toMatchObject({ code: 0, stdout: '1\n' });
    expect(await atoll('incr', 'cli/counter', '10')).toMatchObject({ code: 0, stdout: '11\n' });
    expect(await atoll('incr', 'cli/counter', '-20')).toMatchObject({ code: 0, stdout: '-9\n' });
    const big = await atoll('--json', 'incr', 'cli/big', '9007199254740993');
    expect(JSON.parse(big.stdout)).toMatchObject({ value: '9007199254740993' });
    expect(JSON.parse((await atoll('--json', 'incr', 'cli/small', '5')).stdout)).toMatchObject({ value: 5 });
  });

  it('del, exists, extend', async () => {
    await atoll('put', 'cli/temp', 'x');
    expect(await atoll('exists', 'cli/temp')).toMatchObject({ code: 0, stdout: 'true\n' });
    expect((await atoll('extend', 'cli/temp', '60000')).stdout).toMatch(/^extended until \d{4}-/);
    expect((await atoll('del', 'cli/temp')).stdout).toMatch(/^deleted revision \d+\n$/);
    expect((await atoll('get', 'cli/temp')).code).toBe(1);
  });

  it('prefix lists keys and values, honours --limit, and has --json', async () => {
    for (const name of ['a', 'b', 'c']) await atoll('put', `list/${name}`, name.toUpperCase());
    expect(await atoll('prefix', 'list')).toEqual({ code: 0, stdout: 'list/a\tA\nlist/b\tB\nlist/c\tC\n', stderr: '' });
    expect((await atoll('prefix', 'list', '--limit', '2')).stdout).toBe('list/a\tA\nlist/b\tB\n');
    const listed = JSON.parse((await atoll('--json', 'prefix', 'list/b')).stdout) as { items: { key: string; value: string }[] };
    expect(listed.items.map((item) => [item.key, item.value])).toEqual([['list/b', 'B']]);
    expect((await atoll('prefix', 'empty-bucket')).stdout).toBe('');
  });

  it('cluster status prints tables, and --json the documented shape', async () => {
    const text = await atoll('cluster', 'status');
    expect(text.code).toBe(0);
    expect(text.stdout).toContain(running.address);
    expect(text.stdout).toMatch(/partition\s+hash range\s+leader/);
    const status = JSON.parse((await atoll('cluster', 'status', '--json')).stdout) as {
      nodes: unknown[];
      partitions: { id: number; range: { start: number; end: number }; leader: number; replicas: number[]; term: number }[];
    };
    // Replica and leader counts per node, and the moves in progress (partitions with more voters than RF).
    expect(status.nodes).toEqual([{ id: 1, address: running.address, reachable: true, replicas: 4, leads: expect.any(Number) }]);
    expect((status as unknown as { movesInProgress: number[] }).movesInProgress).toEqual([]);
    expect(status.partitions).toHaveLength(4);
    expect(status.partitions[0]).toEqual({ id: 0, range: { start: 0, end: 2 ** 30 }, leader: 1, replicas: [1], term: 3 });
  });

  it('cluster transfer', async () => {
    expect(await atoll('cluster', 'transfer', '2', '1')).toMatchObject({ code: 0 });
    expect(running.node.callsOf('transferLeader').at(-1)!.request).toEqual({ partition: 2, targetNode: 1 });
  });

  it('cluster move-replica', async () => {
    const moved = await atoll('cluster', 'move-replica', '2', '1', '5');
    expect(moved).toMatchObject({ code: 0 });
    expect(moved.stdout).toContain('partition 2 moved from node 1 to node 5; replicas: 5');
    expect(running.node.callsOf('moveReplica').at(-1)!.request).toEqual({ partition: 2, fromNode: 1, toNode: 5 });
    const refused = await atoll('cluster', 'move-replica', '2', '5', '1');
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/^error MOVE_REFUSED: /);
    expect((await atoll('cluster', 'status')).stdout).toMatch(/reachable\s+replicas\s+leads/);
  });

  it('errors print `error CODE: message` and exit 2', async () => {
    const invalid = await atoll('get', '');
    expect(invalid.code).toBe(2);
    expect(invalid.stderr).toMatch(/^error INVALID_KEY: /);

    running.node.before = () => {
      throw new AtollError('NO_LEADER', 'partition 0 has no leader');
    };
    // Long enough for a first answer on a busy machine: the NO_LEADER answers are retried until the deadline.
    const noLeader = await atoll('--timeout', '1500', 'get', 'cli/x');
    expect(noLeader.code).toBe(2);
    expect(noLeader.stderr).toMatch(/^error NO_LEADER: partition 0 has no leader/);

    const unreachable = await atoll('--endpoints', '127.0.0.1:1', '--timeout', '300', 'get', 'cli/x');
    expect(unreachable.code).toBe(2);
    expect(unreachable.stderr).toMatch(/^error UNAVAILABLE: /);
  });

  it('usage errors exit 2; --help exits 0', async () => {
    expect((await atoll('put', 'only-key')).code).toBe(2);
    expect((await atoll('frobnicate')).code).toBe(2);
    expect((await atoll('incr', 'k', 'not-a-number')).code).toBe(2);
    expect((await atoll('put', 'k', 'v', '--if-absent', '--if-present')).code).toBe(2);
    const help = await atoll('--help');
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('cluster');
  });

  it('reads the token from --token-file, --token, ATOLL_TOKEN_FILE, then ATOLL_TOKEN, and warns that --token is visible', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'atoll-token-'));
    const file = join(dir, 'token');
    writeFileSync(file, 'atk_from-file\n', { mode: 0o600 });
    const envFile = join(dir, 'env-token');
    writeFileSync(envFile, 'atk_from-env-file');
    const seen: Array<string | undefined> = [];
    const capture = (options: AtollClientOptions): AtollClient => {
      seen.push(options.token);
      return new AtollClient(options);
    };
    const errors: string[] = [];
    const runWith = (env: Record<string, string | undefined>, ...argv: string[]) =>
      run(argv, { stdout: () => undefined, stderr: (text) => errors.push(text), env: { ATOLL_ENDPOINTS: running.address, ...env }, createClient: capture });
    await runWith({ ATOLL_TOKEN: 'atk_env' }, '--token-file', file, 'exists', 'a');
    await runWith({ ATOLL_TOKEN_FILE: envFile }, '--token', 'atk_flag', 'exists', 'a');
    await runWith({ ATOLL_TOKEN_FILE: envFile, ATOLL_TOKEN: 'atk_env' }, 'exists', 'a');
    await runWith({ ATOLL_TOKEN_FILE: '', ATOLL_TOKEN: 'atk_env' }, 'exists', 'a');
    await runWith({}, 'exists', 'a');
    expect(seen).toEqual(['atk_from-file', 'atk_flag', 'atk_from-env-file', 'atk_env', undefined]);
    expect(await runWith({}, '--token-file', file, '--token', 'atk_x', 'exists', 'a')).toBe(2);
    expect(await runWith({}, '--token-file', join(dir, 'missing'), 'exists', 'a')).toBe(2);
    expect(errors.join('')).toMatch(/error INVALID_ARGUMENT: give --token or --token-file, not both/);
    expect(errors.join('')).toMatch(/error INVALID_ARGUMENT: cannot read --token-file/);
    const help = await atoll('--help');
    expect(help.stdout).toMatch(/--token-file <file>/);
    expect(help.stdout).toMatch(/process list \(ps\)/);
  });

  it('takes endpoints from --endpoints, then ATOLL_ENDPOINTS, then the default', async () => {
    const seen: string[][] = [];
    const capture = (options: AtollClientOptions): AtollClient => {
      seen.push([...options.endpoints]);
      return new AtollClient(options);
    };
    const runWith = (env: Record<string, string | undefined>, ...argv: string[]) =>
      run(argv, { stdout: () => undefined, stderr: () => undefined, env, createClient: capture });
    await runWith({}, '--endpoints', running.address, 'exists', 'a');
    await runWith({ ATOLL_ENDPOINTS: running.address }, 'exists', 'a');
    await runWith({}, '--timeout', '50', 'exists', 'a');
    expect(seen).toEqual([[running.address], [running.address], defaultEndpoints.split(',')]);
  });
});
