/**
 * Values byte for byte through the built `atoll` executable (issue 22): `put KEY -` from stdin,
 * `put --file`, `get --out`, `get --raw`, `--json` with base64 for bytes that are not text, the
 * value limit on stdin, `--if-value-file`, and a transaction's script and parameters from files.
 * Against a real gRPC server around a fake node (test/server/harness.ts).
 */
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { limits } from '../../src/limits.js';
import { run } from '../../src/cli/run.js';
import { AtollClient } from '../../src/index.js';
import { Rng } from '../../src/raft/rng.js';
import { startNode, type RunningNode } from '../server/harness.js';
import { runAtollBinary, type BinaryRunOptions } from './atoll-binary.js';

let running: RunningNode;
let client: AtollClient;
let dir: string;

beforeAll(async () => {
  running = await startNode({ nodeId: 1, partitionCount: 4 });
  client = new AtollClient({ endpoints: [running.address], defaultTimeoutMs: 5_000 });
  dir = mkdtempSync(join(tmpdir(), 'atoll-cli-values-'));
});
afterAll(async () => {
  client.close();
  await running.stop();
});

function atoll(argv: string[], options: BinaryRunOptions = {}) {
  return runAtollBinary(argv, { ...options, env: { ATOLL_ENDPOINTS: running.address, ...options.env } });
}

/** Every byte value, then seeded noise: far from UTF-8 text, and past a shell argument's limit. */
function binaryValue(length: number, seed: number): Buffer {
  const rng = new Rng(seed);
  const bytes = Buffer.alloc(length);
  for (let i = 0; i < length; i++) bytes[i] = i < 256 ? i : rng.int(256);
  return bytes;
}

describe('atoll values from stdin and files', () => {
  it('put KEY - stores stdin byte for byte; get --out and get --raw give the same bytes back', async () => {
    const value = binaryValue(300 * 1024, 1);
    const put = await atoll(['put', 'bin/stdin', '-'], { input: value });
    expect(put.stderr).toBe('');
    expect(put).toMatchObject({ code: 0, stdout: expect.stringMatching(/^OK revision \d+\n$/) });
    expect(Buffer.from((await client.get('bin/stdin')).value).equals(value)).toBe(true);

    const out = join(dir, 'out.bin');
    expect(await atoll(['get', 'bin/stdin', '--out', out])).toMatchObject({ code: 0, stdout: '', stderr: '' });
    expect(readFileSync(out).equals(value)).toBe(true);
    const raw = await atoll(['get', 'bin/stdin', '--raw']);
    expect(raw).toMatchObject({ code: 0, stderr: '' });
    expect(raw.stdoutBytes.equals(value)).toBe(true);
    // A miss writes no file and keeps stdout for values only.
    const missing = join(dir, 'missing.bin');
    expect(await atoll(['get', 'bin/none', '--out', missing])).toMatchObject({ code: 1, stdout: '', stderr: '(not found)\n' });
    expect(existsSync(missing)).toBe(false);
    expect(await atoll(['get', 'bin/none', '--raw'])).toMatchObject({ code: 1, stdout: '', stderr: '(not found)\n' });
  });

  it('put --file PATH and --file - read the file (or stdin) byte for byte', async () => {
    const value = binaryValue(2000, 2);
    const file = join(dir, 'value.bin');
    writeFileSync(file, value);
    expect((await atoll(['put', 'bin/file', '--file', file])).code).toBe(0);
    expect(Buffer.from((await client.get('bin/file')).value).equals(value)).toBe(true);
    expect((await atoll(['put', 'bin/file-stdin', '--file', '-'], { input: value })).code).toBe(0);
    expect(Buffer.from((await client.get('bin/file-stdin')).value).equals(value)).toBe(true);
    // An empty stdin is an empty value, as `printf '' | atoll put k -` says.
    expect((await atoll(['put', 'bin/empty', '-'])).code).toBe(0);
    expect((await client.get('bin/empty')).value).toHaveLength(0);
  });

  it('--json shows a value that is not text in base64 and says so; text stays text', async () => {
    const value = binaryValue(300, 3);
    await client.put('bin/json', value);
    const got = JSON.parse((await atoll(['--json', 'get', 'bin/json'])).stdout) as { value: string; valueEncoding: string };
    expect(got.valueEncoding).toBe('base64');
    expect(Buffer.from(got.value, 'base64').equals(value)).toBe(true);
    await client.put('bin/text', 'héllo');
    expect(JSON.parse((await atoll(['--json', 'get', 'bin/text'])).stdout)).toMatchObject({ value: 'héllo', valueEncoding: 'utf8' });
    const listed = JSON.parse((await atoll(['--json', 'prefix', 'bin/json'])).stdout) as { items: { value: string; valueEncoding: string }[] };
    expect(listed.items[0]).toMatchObject({ value: value.toString('base64'), valueEncoding: 'base64' });
    // Plain get prints text; for bytes that are not text it says how to get them exactly.
    expect((await atoll(['get', 'bin/json'])).stderr).toMatch(/^note: the value is not UTF-8 text \(300 bytes\); for its exact bytes give --out PATH or --raw\n$/);
  });

  it('a value past the limit on stdin is refused with VALUE_TOO_LARGE and changes nothing', async () => {
    await client.put('bin/limit', 'before');
    const tooLarge = await atoll(['put', 'bin/limit', '-'], { input: Buffer.alloc(limits.maxValueBytes + 1, 7) });
    expect(tooLarge.code).toBe(2);
    expect(tooLarge.stderr).toMatch(/^error VALUE_TOO_LARGE: VALUE \(stdin\) is larger than \d+ bytes\n$/);
    expect((await client.get('bin/limit')).text()).toBe('before');
  });

  it('--if-value-file compares the bytes of a file', async () => {
    const value = binaryValue(500, 4);
    await client.put('bin/cas', value);
    const same = join(dir, 'same.bin');
    const other = join(dir, 'other.bin');
    writeFileSync(same, value);
    writeFileSync(other, binaryValue(500, 5));
    expect(await atoll(['put', 'bin/cas', 'next', '--if-value-file', other])).toMatchObject({ code: 1, stdout: '(not applied)\n' });
    expect(Buffer.from((await client.get('bin/cas')).value).equals(value)).toBe(true);
    expect((await atoll(['put', 'bin/cas', 'next', '--if-value-file', same])).code).toBe(0);
    expect((await client.get('bin/cas')).text()).toBe('next');
    // Only one input can be stdin.
    const both = await atoll(['put', 'bin/cas', '-', '--if-value-file', '-'], { input: 'x' });
    expect(both.code).toBe(2);
    expect(both.stderr).toMatch(/^error INVALID_ARGUMENT: --if-value-file and VALUE cannot both read stdin/);
    expect((await client.get('bin/cas')).text()).toBe('next');
  });

  it('txn reads its script from stdin (-f -) and parameters from files (--param-file), as UTF-8 text', async () => {
    const text = join(dir, 'param.txt');
    writeFileSync(text, 'line one\nline "two"\n');
    const txn = await atoll(['txn', '-f', '-', '--param-file', 'v=' + text], { input: 'set "bin/txn" @v\nreturn @v' });
    expect(txn.stderr).toBe('');
    expect(txn).toMatchObject({ code: 0, stdout: JSON.stringify('line one\nline "two"\n') + '\n' });
    expect((await client.get('bin/txn')).text()).toBe('line one\nline "two"\n');
    const binary = join(dir, 'param.bin');
    writeFileSync(binary, binaryValue(300, 6));
    const refused = await atoll(['txn', '-e', 'set "bin/txn" @v', '--param-file', 'v=' + binary]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toBe(`error INVALID_ARGUMENT: --param-file v ${binary} is not UTF-8 text\n`);
    expect((await client.get('bin/txn')).text()).toBe('line one\nline "two"\n');
  });

  it('get --raw refuses bytes that are not text on a terminal, and prints text there', async () => {
    await client.put('bin/tty', binaryValue(300, 7));
    let stderr = '';
    const io = { stdout: () => undefined, stderr: (text: string) => (stderr += text), stdoutIsTty: true, env: { ATOLL_ENDPOINTS: running.address } };
    expect(await run(['get', 'bin/tty', '--raw'], io)).toBe(2);
    expect(stderr).toMatch(/^error INVALID_ARGUMENT: the value of bin\/tty is not UTF-8 text \(300 bytes\): redirect stdout or give --out PATH\n$/);
    let written = '';
    await client.put('bin/tty-text', 'plain');
    expect(await run(['get', 'bin/tty-text', '--raw'], { ...io, stdoutBytes: (bytes) => (written += Buffer.from(bytes).toString()) })).toBe(0);
    expect(written).toBe('plain');
  });
});
