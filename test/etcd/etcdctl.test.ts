/**
 * etcdctl (Debian's etcd-client, a client nobody here wrote) against Atoll's etcd port and against
 * a real etcd (Debian's etcd-server), given the same commands: the outputs must be equal up to what
 * differs by design (docs/etcd-api.md): ids, times, and revisions' absolute values (each side's are
 * taken relative to its revision before the first write; etcd starts at 1, an Atoll keyspace at
 * its partition's revision).
 *
 * One Atoll cluster and one etcd for the whole file; the steps run in order and build on each other.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LocalCluster } from '../integration/local-cluster.js';
import { etcdctl, etcdctlWatch, Masker, RealEtcd, requireEtcdTools, type EtcdctlResult } from './etcd-harness.js';

const tools = requireEtcdTools('etcdctl comparison');

interface Side {
  readonly name: string;
  readonly endpoint: string;
  readonly masker: Masker;
  /** The keyspace's revision before the first write. */
  base: number;
  /**
   * Revisions this side's headers are ahead by writes the other side does not make: Atoll's
   * Compact records the keyspace's compaction floor with a write (docs/etcd-api.md, "Compaction").
   */
  headerShift: number;
}

function headerRevision(json: string): number {
  return Number((JSON.parse(json) as { header: { revision?: number } }).header.revision ?? 0);
}

describe.skipIf(!tools.available)('etcdctl against Atoll and against etcd', () => {
  let cluster: LocalCluster | undefined;
  let etcd: RealEtcd | undefined;
  const sides: Side[] = [];

  beforeAll(async () => {
    [cluster, etcd] = await Promise.all([LocalCluster.start({ partitions: 4, etcd: true }), RealEtcd.start()]);
    sides.push({ name: 'etcd', endpoint: etcd.endpoint, masker: new Masker(), base: 0, headerShift: 0 });
    sides.push({ name: 'atoll', endpoint: cluster.etcdAddresses.get(2) as string, masker: new Masker(), base: 0, headerShift: 0 });
    for (const side of sides) side.base = headerRevision((await etcdctl(side.endpoint, ['get', 'probe', '-w', 'json'])).stdout);
  }, 60_000);

  afterAll(async () => {
    await Promise.all([cluster?.stop(), etcd?.stop()]);
  });

  /** Runs one command on both sides; returns both results, masked text. */
  async function both(args: (side: Side) => string[], input?: string): Promise<Array<EtcdctlResult & { side: Side }>> {
    return Promise.all(sides.map(async (side) => ({ side, ...(await etcdctl(side.endpoint, args(side), input)) })));
  }

  async function sameText(args: (side: Side) => string[], input?: string): Promise<string> {
    const results = await both(args, input);
    const [real, atoll] = results.map((result) => ({ stdout: result.side.masker.text(result.stdout), stderr: result.side.masker.text(result.stderr).trim(), status: result.status }));
    expect(atoll).toEqual(real);
    return real!.stdout;
  }

  async function sameJson(args: (side: Side) => string[]): Promise<unknown> {
    const results = await both((side) => [...args(side), '-w', 'json']);
    const [real, atoll] = results.map((result) => {
      expect(result.stderr.trim(), `${result.side.name}: ${args(result.side).join(' ')}`).toBe('');
      return result.side.masker.json(result.stdout, result.side.base, result.side.headerShift);
    });
    expect(atoll).toEqual(real);
    return real;
  }

  it('put and get: single keys, prefixes, --from-key, revisions, sorting, limits, keys only', async () => {
    for (const [key, value] of [['foo', 'bar'], ['foo2', 'baz'], ['fop', 'x'], ['a', '1'], ['b', '2'], ['c', '3'], ['foo', 'bar2']]) {
      expect(await sameText(() => ['put', key!, value!])).toBe('OK\n');
    }
    await sameJson(() => ['get', 'foo']);
    await sameJson(() => ['get', 'foo', '--prefix']);
    await sameText(() => ['get', '', '--prefix', '--keys-only']);
    await sameText(() => ['get', 'b', '--from-key']);
    await sameText(() => ['get', 'a', 'foo']);
    await sameJson(() => ['get', 'a', 'z', '--sort-by=MODIFY', '--order=DESCEND', '--limit=2']);
    await sameJson(() => ['get', '', '--prefix', '--sort-by=CREATE', '--order=ASCEND', '--limit=3', '--keys-only']);
    await sameJson(() => ['get', '', '--prefix', '--sort-by=KEY', '--order=DESCEND']);
    await sameJson(() => ['get', '', '--prefix', '--sort-by=VALUE']);
    await sameJson((side) => ['get', 'foo', `--rev=${side.base + 1}`]);
    await sameJson((side) => ['get', 'f', '--prefix', `--rev=${side.base + 3}`]);
    await sameText(() => ['get', 'missing']);
  });

  it('del with --prev-kv and --prefix', async () => {
    await sameText(() => ['del', '--prev-kv', 'foo2']);
    await sameText(() => ['del', 'nothing-here']);
    await sameJson(() => ['del', 'fo', '--prefix', '--prev-kv']);
    await sameText(() => ['put', 'foo', 'again']);
  });

  it('txn with compares on value, version, create and mod revisions', async () => {
    const script = (side: Side): string =>
      [`value("a") = "1"`, `version("b") = "1"`, `mod("c") > "${side.base}"`, `create("foo") > "0"`, '', 'put a 10', 'get b', 'del c', '', 'put failed yes', '', ''].join('\n');
    for (const side of sides) {
      const result = await etcdctl(side.endpoint, ['txn'], script(side));
      expect(side.masker.text(result.stdout), `${side.name}: ${result.stderr}`).toBe('SUCCESS\n\nOK\n\nb\n2\n\n1\n');
    }
    const failing = ['value("a") = "nope"', '', 'put x 1', '', 'put failed yes', 'get failed', '', ''].join('\n');
    await sameText(() => ['txn'], failing);
    await sameJson(() => ['get', '', '--prefix']);
  });

  it('watch --rev --prefix --prev-kv replays history in order', async () => {
    const outputs = await Promise.all(
      sides.map((side) => etcdctlWatch(side.endpoint, [`--rev=${side.base + 1}`, '--prefix', '--prev-kv', 'f'], (out) => out.includes('failed\nyes'))),
    );
    expect(outputs[1]).toBe(outputs[0]);
    expect(outputs[0]).toContain('DELETE');
  });

  it('compaction: reads and watches below it fail with etcd\'s error', async () => {
    const compacted = await both((side) => ['compaction', String(side.base + 4)]);
    for (const result of compacted) expect(result.stdout).toBe(`compacted revision ${result.side.base + 4}\n`);
    sides[1]!.headerShift = 1;
    await sameText((side) => ['get', 'foo', `--rev=${side.base + 2}`]);
    await sameText((side) => ['compaction', String(side.base + 3)]);
    await sameJson((side) => ['get', 'foo', `--rev=${side.base + 4}`]);
    // Until etcdctl's last line (it exits once the server cancels its only watch): stopping it at the
    // first "canceled" raced its second line, which one side printed in time and the other not.
    const outputs = await Promise.all(sides.map((side) => etcdctlWatch(side.endpoint, [`--rev=${side.base + 2}`, 'foo'], (out) => out.includes('watch is canceled by the server'))));
    expect(outputs[1]).toBe(outputs[0]);
    expect(outputs[0]).toContain('required revision has been compacted');
  });

  it('leases: grant, attach, timetolive, list, keep-alive, revoke', async () => {
    const granted = await sameText(() => ['lease', 'grant', '60']);
    expect(granted).toBe('lease L1 granted with TTL(60s)\n');
    const ids = await Promise.all(sides.map(async (side) => (await etcdctl(side.endpoint, ['lease', 'list'])).stdout.trim().split('\n')[1] as string));
    await Promise.all(sides.map((side, index) => etcdctl(side.endpoint, ['put', '--lease', ids[index]!, 'leased', 'v'])));
    await sameText((side) => ['lease', 'timetolive', '--keys', ids[sides.indexOf(side)]!]);
    await sameText(() => ['lease', 'list']);
    await sameText((side) => ['lease', 'keep-alive', '--once', ids[sides.indexOf(side)]!]);
    await sameText(() => ['get', 'leased', '--print-value-only']);
    await sameText((side) => ['lease', 'revoke', ids[sides.indexOf(side)]!]);
    await sameText(() => ['get', 'leased']);
    await sameText((side) => ['lease', 'timetolive', ids[sides.indexOf(side)]!]);
    await sameText((side) => ['lease', 'revoke', ids[sides.indexOf(side)]!]);
    await sameText(() => ['put', '--lease', '1234abcd', 'orphan', 'v']);
  });

  it('member list, endpoint status and endpoint health', async () => {
    const [realMembers, atollMembers] = await Promise.all(sides.map(async (side) => JSON.parse((await etcdctl(side.endpoint, ['member', 'list', '-w', 'json'])).stdout) as { members: Array<Record<string, unknown>> }));
    // etcd here is one member, Atoll three nodes: the members have the same fields.
    expect(atollMembers!.members).toHaveLength(3);
    expect(Object.keys(atollMembers!.members[0]!).sort()).toEqual(Object.keys(realMembers!.members[0]!).sort());
    const clientUrls = atollMembers!.members.flatMap((member) => member['clientURLs'] as string[]);
    expect(clientUrls.sort()).toEqual([...cluster!.etcdAddresses.values()].map((address) => `http://${address}`).sort());

    const [realStatus, atollStatus] = await Promise.all(sides.map(async (side) => JSON.parse((await etcdctl(side.endpoint, ['endpoint', 'status', '-w', 'json'])).stdout) as Array<{ Endpoint: string; Status: Record<string, unknown> }>));
    expect(atollStatus![0]!.Endpoint).toBe(sides[1]!.endpoint);
    // The fields etcd reports that Atoll fills (dbSize is 0 on Atoll, so omitted; docs/etcd-api.md).
    for (const field of ['header', 'version', 'leader', 'raftIndex', 'raftTerm', 'raftAppliedIndex']) {
      expect(atollStatus![0]!.Status, field).toHaveProperty(field);
      expect(realStatus![0]!.Status, field).toHaveProperty(field);
    }
    const health = await both(() => ['endpoint', 'health']);
    for (const result of health) expect(result.side.masker.text(result.stderr + result.stdout).trim()).toBe(`${result.side.endpoint} is healthy: successfully committed proposal: took = T`);
  });

  it('endpoint hashkv: every Atoll node reports the same hash of the keyspace, a put changes it, --rev hashes the past', async () => {
    // The numbers are not comparable with etcd's (docs/etcd-api.md); the output's form is.
    const forms = await both(() => ['endpoint', 'hashkv']);
    for (const result of forms) expect(result.stdout, result.side.name).toMatch(new RegExp(`^${result.side.endpoint.replace(/\./g, '\\.')}, \\d+\n$`));
    const atoll = [...cluster!.etcdAddresses.values()].join(',');
    const hashes = async (...extra: string[]): Promise<{ hashes: number[]; revision: number }> => {
      const result = await etcdctl(atoll, ['endpoint', 'hashkv', '-w', 'json', ...extra]);
      expect(result.stderr.trim()).toBe('');
      const answers = JSON.parse(result.stdout) as Array<{ HashKV: { header: { revision: number }; hash: number } }>;
      return { hashes: answers.map((answer) => answer.HashKV.hash), revision: Math.max(...answers.map((answer) => answer.HashKV.header.revision)) };
    };
    const before = await hashes();
    expect(before.hashes).toHaveLength(3);
    expect(new Set(before.hashes).size).toBe(1);
    expect((await etcdctl(sides[1]!.endpoint, ['put', 'hashed', 'changes-it'])).stdout).toBe('OK\n');
    const after = await hashes();
    expect(new Set(after.hashes).size).toBe(1);
    expect(after.hashes[0]).not.toBe(before.hashes[0]);
    expect((await hashes(`--rev=${before.revision}`)).hashes).toEqual(before.hashes);
  });
});
