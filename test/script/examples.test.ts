/**
 * The examples of docs/script-language.md, read from the document itself so the documentation
 * cannot drift from the language: every `atoll` block parses, and the practical examples do what
 * the text says.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parseScript, type ScriptParams } from '../../src/script/index.js';
import { FakeSnapshot, failure, run } from './harness.js';

const documentation = readFileSync(new URL('../../docs/script-language.md', import.meta.url), 'utf8');

/** Every ```atoll block, keyed by the heading above it (the first one by its position). */
function examples(): Map<string, string> {
  const blocks = new Map<string, string>();
  let heading = '(top)';
  const lines = documentation.split('\n');
  for (let index = 0; index < lines.length; index++) {
    const line = lines[index]!;
    if (line.startsWith('#')) heading = line.replace(/^#+\s*/, '');
    if (line.trim() !== '```atoll') continue;
    const end = lines.indexOf('```', index + 1);
    blocks.set(heading, lines.slice(index + 1, end).join('\n'));
    index = end;
  }
  return blocks;
}

const blocks = examples();

function example(heading: string): string {
  const source = blocks.get(heading);
  if (source === undefined) throw new Error(`no atoll block under "${heading}"`);
  return source;
}

const runExample = (heading: string, snapshot: FakeSnapshot, bucket: string, params: ScriptParams) =>
  run(example(heading), snapshot, { bucket, params });

describe('docs/script-language.md', () => {
  it('has atoll blocks that all parse', () => {
    expect(blocks.size).toBeGreaterThanOrEqual(6);
    for (const source of blocks.values()) expect(() => parseScript(source)).not.toThrow();
  });

  it('opens with the seed example', () => {
    expect(example('The Atoll script language')).toContain('let all_services = get by prefix "services"');
  });

  it('registers a service if its name is free', async () => {
    const heading = 'Register a service if its name is free';
    const snapshot = new FakeSnapshot({ 'services/auth': 'localhost:8081' });
    const taken = await runExample(heading, snapshot, 'services', { key: 'services/auth', address: 'localhost:9000' });
    expect(taken.outcome.returnValue).toBe('localhost:8081');
    expect(taken.writes).toEqual({});
    const free = await runExample(heading, snapshot, 'services', { key: 'services/users', address: 'localhost:8084' });
    expect(free.outcome.returnValue).toBe('localhost:8084');
    expect(free.writes).toEqual({ 'services/users': 'localhost:8084' });
  });

  it('moves money between two accounts, or throws', async () => {
    const heading = 'Move money between two accounts';
    const snapshot = new FakeSnapshot({ 'accounts/alice': '100', 'accounts/bob': '5' });
    const params = (amount: bigint, to = 'accounts/bob') => ({ from: 'accounts/alice', to, amount });
    const moved = await runExample(heading, snapshot, 'accounts', params(30n));
    expect(moved.outcome.returnValue).toBe(70);
    expect(moved.writes).toEqual({ 'accounts/alice': '70', 'accounts/bob': '35' });
    const short = await failure(runExample(heading, snapshot, 'accounts', params(101n)));
    expect(short.details?.thrown).toBe('insufficient funds: 100 < 101');
    const missing = await failure(runExample(heading, snapshot, 'accounts', params(1n, 'accounts/carol')));
    expect(missing.details?.thrown).toBe('no such account');
    expect((await failure(runExample(heading, snapshot, 'accounts', params(0n)))).code).toBe('SCRIPT_ERROR');
  });

  it('counts requests in a window: the first hit sets the TTL', async () => {
    const heading = 'Count requests in a one-minute window';
    const fresh = await runExample(heading, new FakeSnapshot(), 'ratelimit', { key: 'ratelimit/c1', max: 2n });
    expect(fresh.outcome.returnValue).toBe(true);
    expect(fresh.ttls).toEqual({ 'ratelimit/c1': 60000 });
    const busy = await runExample(heading, new FakeSnapshot({ 'ratelimit/c1': '2' }), 'ratelimit', { key: 'ratelimit/c1', max: 2n });
    expect(busy.outcome.returnValue).toBe(false);
    expect(busy.writes).toEqual({ 'ratelimit/c1': '3' });
    expect(busy.ttls).toEqual({});
  });

  it('updates a configuration with compare-and-swap', async () => {
    const heading = 'Update a configuration only if nobody changed it since you read it';
    const snapshot = new FakeSnapshot({ 'config/service': 'a' });
    snapshot.put('config/service', 'b');
    const stale = await runExample(heading, snapshot, 'config', { revision: 1n, config: 'c' });
    expect(stale.outcome.returnValue).toMatchObject({ value: 'b', revision: 2 });
    expect(stale.writes).toEqual({});
    const current = await runExample(heading, snapshot, 'config', { revision: 2n, config: 'c' });
    expect(current.outcome.returnValue).toBe(true);
    expect(current.writes).toEqual({ 'config/service': 'c' });
  });

  it('claims several names, all or none', async () => {
    const heading = 'Claim several names, all or none';
    const snapshot = new FakeSnapshot({ 'names/taken': 'x' });
    const all = await runExample(heading, snapshot, 'names', { names: ['names/a', 'names/b'] });
    expect(all.outcome).toEqual({ committed: true, returnValue: 2, resultJson: '2' });
    const none = await runExample(heading, snapshot, 'names', { names: ['names/a', 'names/taken'] });
    expect(none.outcome).toEqual({ committed: false, returnValue: null, resultJson: 'null' });
  });

  it('deletes the sessions of one user', async () => {
    const snapshot = new FakeSnapshot({ 'sessions/1': 'ann', 'sessions/2': 'bob', 'sessions/3': 'ann' });
    const { outcome, writes } = await runExample('Delete the sessions of one user', snapshot, 'sessions', { user: 'ann' });
    expect(outcome.returnValue).toEqual(['sessions/1', 'sessions/3']);
    expect(writes).toEqual({ 'sessions/1': null, 'sessions/3': null });
  });
});
