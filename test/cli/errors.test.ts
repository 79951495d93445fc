/**
 * Errors for shell users (issue 22): for every subcommand of the built `atoll` executable, a bad
 * argument prints one line `error CODE: message` on stderr, nothing on stdout, exits 2 and changes
 * nothing (the store's revision and a canary key are the same afterwards). Usage errors that
 * commander finds (a missing argument, an unknown option) take the same form, INVALID_ARGUMENT.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AtollClient } from '../../src/index.js';
import { startNode, type RunningNode } from '../server/harness.js';
import { runAtollBinary } from './atoll-binary.js';

let running: RunningNode;
let client: AtollClient;

beforeAll(async () => {
  running = await startNode({ nodeId: 1, partitionCount: 4 });
  client = new AtollClient({ endpoints: [running.address], defaultTimeoutMs: 5_000 });
  await client.put('canary/k', 'unchanged');
});
afterAll(async () => {
  client.close();
  await running.stop();
});

/** Each subcommand with a bad argument, and the code its error line must carry. */
const badArguments: ReadonlyArray<{ argv: string[]; code: string; message?: RegExp }> = [
  { argv: ['put', 'canary/k', 'v', '--ttl', 'soon'], code: 'INVALID_ARGUMENT', message: /--ttl must be an integer/ },
  { argv: ['put', 'canary/k', '--file', '/nonexistent/value'], code: 'INVALID_ARGUMENT', message: /cannot read --file \/nonexistent\/value/ },
  { argv: ['put', 'canary/k', 'v', '--file', '/etc/hostname'], code: 'INVALID_ARGUMENT', message: /exactly one/ },
  { argv: ['put', 'canary/k'], code: 'INVALID_ARGUMENT', message: /exactly one/ },
  { argv: ['get', 'canary/k', '--revision', '0'], code: 'INVALID_ARGUMENT' },
  { argv: ['get', 'canary/k', '--out', '/nonexistent/dir/file'], code: 'INVALID_ARGUMENT', message: /cannot write --out/ },
  { argv: ['del', 'canary/k', 'extra'], code: 'INVALID_ARGUMENT', message: /too many arguments/ },
  { argv: ['del', ''], code: 'INVALID_KEY' },
  { argv: ['incr', 'canary/n', 'ten'], code: 'INVALID_ARGUMENT', message: /DELTA must be an integer/ },
  { argv: ['exists'], code: 'INVALID_ARGUMENT', message: /missing required argument 'key'/ },
  { argv: ['extend', 'canary/k', '-5'], code: 'INVALID_ARGUMENT' },
  { argv: ['extend', 'canary/k', 'soon'], code: 'INVALID_ARGUMENT', message: /MS must be an integer/ },
  { argv: ['prefix', 'canary', '--limit', '0'], code: 'INVALID_ARGUMENT' },
  { argv: ['txn', '-e', 'set "canary/k" @v', '--param-json', 'v=not json'], code: 'INVALID_ARGUMENT', message: /not JSON/ },
  { argv: ['txn', '-f', '/nonexistent/script'], code: 'INVALID_ARGUMENT', message: /cannot read -f/ },
  { argv: ['auth', 'new-admin-token', 'extra'], code: 'INVALID_ARGUMENT' },
  { argv: ['auth', 'whoami', '--bogus'], code: 'INVALID_ARGUMENT', message: /unknown option '--bogus'/ },
  { argv: ['auth', 'token', 'create', '--tenant', 't'], code: 'INVALID_ARGUMENT', message: /--role/ },
  { argv: ['auth', 'token', 'list', 'extra'], code: 'INVALID_ARGUMENT' },
  { argv: ['auth', 'token', 'revoke'], code: 'INVALID_ARGUMENT', message: /missing required argument 'id'/ },
  { argv: ['auth', 'quota', 'set', '--tenant', 't', '--keys', 'many'], code: 'INVALID_ARGUMENT', message: /--keys must be a non-negative integer/ },
  { argv: ['auth', 'usage', '--tenant'], code: 'INVALID_ARGUMENT' },
  { argv: ['cluster', 'status', 'extra'], code: 'INVALID_ARGUMENT' },
  { argv: ['cluster', 'transfer', 'first', '1'], code: 'INVALID_ARGUMENT', message: /PARTITION must be an integer/ },
  { argv: ['health', '--bogus'], code: 'INVALID_ARGUMENT' },
  { argv: ['bench', '--concurrency', '0'], code: 'INVALID_ARGUMENT', message: /--concurrency must be an integer/ },
  { argv: ['top', '--interval', '5'], code: 'INVALID_ARGUMENT', message: /--interval must be an integer/ },
  { argv: ['backup', '--out', '/nonexistent/backup', '--concurrency', '0'], code: 'INVALID_ARGUMENT', message: /--concurrency must be an integer/ },
  { argv: ['backup'], code: 'INVALID_ARGUMENT', message: /--out/ },
  { argv: ['restore', '--from', '/nonexistent/backup'], code: 'BACKUP_DAMAGED', message: /cannot read \/nonexistent\/backup\/manifest.json/ },
  { argv: ['frobnicate'], code: 'INVALID_ARGUMENT', message: /unknown command 'frobnicate'/ },
  { argv: ['--timeout', 'never', 'get', 'canary/k'], code: 'INVALID_ARGUMENT' },
  // An endless token file is cut off at its bound, not read into memory.
  { argv: ['--token-file', '/dev/zero', 'put', 'canary/k', 'v'], code: 'INVALID_ARGUMENT', message: /larger than 4096 bytes/ },
];

describe('atoll errors for shell users: a bad argument prints `error CODE: message`, exits 2 and changes nothing', () => {
  it.each(badArguments.map((bad) => ({ ...bad, command: bad.argv.join(' ') })))('atoll $command', async ({ argv, code, message }) => {
    const before = await client.get('canary/k');
    const outcome = await runAtollBinary(argv, { env: { ATOLL_ENDPOINTS: running.address } });
    const context = `atoll ${argv.join(' ')}: ${outcome.stderr}`;
    expect(outcome.code, context).toBe(2);
    expect(outcome.stdout, context).toBe('');
    // One error line (commander may add a "Did you mean" hint on the next).
    expect(outcome.stderr, context).toMatch(new RegExp(`^error ${code}: \\S[^\\n]*\\n`));
    if (message !== undefined) expect(outcome.stderr, context).toMatch(message);
    const after = await client.get('canary/k');
    expect(after.text()).toBe('unchanged');
    expect(after.revision).toBe(before.revision);
    expect(after.modRevision).toBe(before.modRevision);
    expect(after.expiresAtMs).toBe(before.expiresAtMs);
    expect(running.node.callsOf('put')).toHaveLength(1);
    expect(running.node.callsOf('transferLeader')).toHaveLength(0);
  });
});
