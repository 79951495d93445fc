/**
 * MVCC snapshot transactions and script transactions against three real atoll-server processes:
 * the isolation anomalies each level must prevent or allow, partition confinement, the stateless
 * handle (commit after a leader change, expiry, compaction), a concurrent bank workload through
 * every node, the plain gRPC surface, and scripts through the client and the CLI.
 */
import { spawnSync } from 'node:child_process';
import { join, resolve } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AtollClientError, type AtollClient } from '../../src/client/index.js';
import { partitionOf, partitionOfBucket } from '../../src/keys/partition-table.js';
import { decodeTxnHandle, encodeTxnHandle, TxnHandleKeys } from '../../src/txn/txn-handle.js';
import { LocalCluster } from './local-cluster.js';
import { call, genericKvClient } from './plain-grpc.js';
import { seedExample, seedExampleAsDescribed } from '../script/harness.js';

const root = resolve(import.meta.dirname, '../..');
const PARTITIONS = 8;

async function failure(promise: Promise<unknown>): Promise<AtollClientError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(AtollClientError);
  return error as AtollClientError;
}

/** A bucket whose partition differs from `bucket`'s. */
function otherBucket(bucket: string): string {
  for (let i = 0; ; i++) if (partitionOfBucket(`other${i}`, PARTITIONS) !== partitionOfBucket(bucket, PARTITIONS)) return `other${i}`;
}

function cli(cluster: LocalCluster, args: string[]): { status: number | null; stdout: string; stderr: string } {
  const result = spawnSync(process.execPath, [join(root, 'dist/src/cli/atoll.js'), '--endpoints', cluster.endpoints.join(','), ...args], {
    encoding: 'utf8',
    timeout: 20_000,
  });
  return { status: result.status, stdout: result.stdout.trim(), stderr: result.stderr.trim() };
}

describe('transactions on a three-node cluster', () => {
  let cluster: LocalCluster;
  let client: AtollClient;

  beforeAll(async () => {
    cluster = await LocalCluster.start({ partitions: PARTITIONS, retentionRevisions: 20 });
    client = cluster.client();
  }, 60_000);

  afterAll(async () => {
    client?.close();
    await cluster?.stop();
  });

  it('prevents lost updates: the second of two overlapping read-modify-writes aborts with ABORTED / TXN_CONFLICT', async () => {
    await client.put('lost/counter', '0');
    const t1 = await client.beginTransaction('lost');
    const t2 = await client.beginTransaction('lost');
    for (const tx of [t1, t2]) {
      const current = Number((await tx.get('lost/counter')).text());
      await tx.put('lost/counter', String(current + 1));
    }
    await t1.commit();
    const conflict = await failure(t2.commit());
    expect(conflict.code).toBe('TXN_CONFLICT');
    expect(conflict.grpcStatusCode).toBe(grpc.status.ABORTED);
    expect((await client.get('lost/counter')).text()).toBe('1');

    // With the retrying helper, concurrent read-modify-writes through every node all count.
    const clients = cluster.endpoints.map((endpoint) => cluster.client([endpoint]));
    try {
      const runs = await Promise.all(
        Array.from({ length: 12 }, (_, i) =>
          clients[i % clients.length]!.transaction('lost', async (tx) => {
            const current = Number((await tx.get('lost/counter')).text());
            await tx.put('lost/counter', String(current + 1));
          }),
        ),
      );
      expect(runs.every((run) => run.committed)).toBe(true);
      expect(runs.some((run) => run.attempts > 1)).toBe(true);
    } finally {
      for (const c of clients) c.close();
    }
    expect((await client.get('lost/counter')).text()).toBe('13');
  });

  it('allows write skew under SNAPSHOT and prevents it under SERIALIZABLE', async () => {
    for (const isolation of ['snapshot', 'serializable'] as const) {
      await client.put('oncall/alice', 'on');
      await client.put('oncall/bob', 'on');
      const [t1, t2] = await Promise.all([client.beginTransaction('oncall', { isolation }), client.beginTransaction('oncall', { isolation })]);
      // Each sees two doctors on call and lets one go: the invariant "someone is on call" needs both reads.
      for (const [tx, me] of [
        [t1, 'alice'],
        [t2, 'bob'],
      ] as const) {
        const onCall = (await tx.getByPrefix('oncall')).filter((entry) => entry.text() === 'on').length;
        expect(onCall).toBe(2);
        await tx.put(`oncall/${me}`, 'off');
      }
      await t1.commit();
      if (isolation === 'snapshot') {
        await t2.commit();
        expect((await client.getByPrefix('oncall')).items.map((entry) => entry.text())).toEqual(['off', 'off']);
      } else {
        expect((await failure(t2.commit())).code).toBe('TXN_CONFLICT');
        expect((await client.getByPrefix('oncall')).items.map((entry) => entry.text())).toEqual(['off', 'on']);
      }
    }
  });

  it('reads its own writes, in gets and prefix reads, and nobody else sees them before commit', async () => {
    const tx = await client.beginTransaction('ryw/anything');
    expect((await tx.get('ryw/a')).found).toBe(false);
    await tx.put('ryw/a', 'mine');
    expect(await tx.increment('ryw/n', 5)).toBe(5n);
    expect((await tx.get('ryw/a')).text()).toBe('mine');
    expect((await tx.getByPrefix('ryw')).map((entry) => [entry.key, entry.text()])).toEqual([
      ['ryw/a', 'mine'],
      ['ryw/n', '5'],
    ]);
    expect((await client.get('ryw/a')).found).toBe(false);
    const { revision } = await tx.commit();
    const after = await client.get('ryw/a');
    expect(after.text()).toBe('mine');
    expect(after.modRevision).toBe(revision);
    expect((await client.get('ryw/n')).modRevision).toBe(revision);
  });

  it('keeps its snapshot still while others commit', async () => {
    await client.put('still/x', 'before');
    const tx = await client.beginTransaction('still');
    const first = await tx.getByPrefix('still');
    await client.put('still/x', 'after');
    await client.put('still/y', 'new');
    await client.delete('still/x');
    expect((await tx.get('still/x')).text()).toBe('before');
    expect((await tx.getByPrefix('still')).map((entry) => entry.key)).toEqual(first.map((entry) => entry.key));
    expect(await tx.exists('still/y')).toBe(false);
    tx.rollback();
    await expect(tx.get('still/x')).rejects.toMatchObject({ code: 'INVALID_TRANSACTION' });
  });

  it('prevents phantoms under SERIALIZABLE (and allows them under SNAPSHOT)', async () => {
    for (const isolation of ['snapshot', 'serializable'] as const) {
      const bucket = `rooms-${isolation}`;
      await client.put(`${bucket}/101`, 'booked');
      const tx = await client.beginTransaction(bucket, { isolation });
      const booked = (await tx.getByPrefix(bucket)).length;
      // Someone books another room: a key that did not exist when the transaction read the range.
      await client.put(`${bucket}/102`, 'booked');
      await tx.put(`${bucket}/summary`, String(booked));
      if (isolation === 'snapshot') await tx.commit();
      else expect((await failure(tx.commit())).code).toBe('TXN_CONFLICT');
    }
  });

  it('confines a transaction to its partition: FAILED_PRECONDITION naming both buckets', async () => {
    const other = otherBucket('fence');
    const tx = await client.beginTransaction('fence');
    for (const attempt of [tx.get(`${other}/k`), tx.put(`${other}/k`, 'v'), tx.getByPrefix(other)]) {
      const error = await failure(attempt);
      expect(error.code).toBe('OUTSIDE_TRANSACTION');
      expect(error.grpcStatusCode).toBe(grpc.status.FAILED_PRECONDITION);
      expect(error.message).toContain(`"${other}"`);
      expect(error.message).toContain('"fence"');
    }
    // The server checks too: a hand-made commit carrying a foreign key changes nothing.
    const kv = genericKvClient(cluster.endpoints[0]!);
    try {
      const begun = await call(kv, 'BeginTransaction', { key: 'fence' });
      const refused = await call(kv, 'Commit', {
        transaction: begun['transaction'],
        writes: [{ key: 'fence/ok', value: Buffer.from('1') }, { key: `${other}/k`, value: Buffer.from('1') }],
      }).catch((e: grpc.ServiceError) => e);
      expect((refused as grpc.ServiceError).code).toBe(grpc.status.FAILED_PRECONDITION);
      expect((refused as grpc.ServiceError).metadata.get('atoll-code')).toEqual(['OUTSIDE_TRANSACTION']);
      const readRefused = await call(kv, 'Get', { key: `${other}/k`, transaction: begun['transaction'] }).catch((e: grpc.ServiceError) => e);
      expect((readRefused as grpc.ServiceError).code).toBe(grpc.status.FAILED_PRECONDITION);
    } finally {
      kv.close();
    }
    expect((await client.get('fence/ok')).found).toBe(false);
  });

  it('commits after the partition changed leader between begin and commit (no server state)', async () => {
    const tx = await client.beginTransaction('handover');
    await tx.put('handover/k', 'v');
    const info = await client.clusterInfo();
    const partition = info.partitions[partitionOf('handover', PARTITIONS)]!;
    const target = partition.replicas.find((id) => id !== partition.leader)!;
    await client.transferLeader(partition.id, target);
    // The leader balancer may hand leadership back to the preferred replica within a second, so
    // the proof that leadership changed is a new term (or seeing the target lead), not the target
    // still leading when we look.
    const deadline = Date.now() + 10_000;
    let changed = false;
    while (Date.now() < deadline && !changed) {
      const now = (await client.clusterInfo()).partitions[partition.id]!;
      changed = now.leader === target || now.term > partition.term;
      if (!changed) await new Promise((r) => setTimeout(r, 50));
    }
    expect(changed).toBe(true);
    await tx.commit();
    expect((await client.get('handover/k')).text()).toBe('v');
  });

  it('refuses an expired transaction and a snapshot older than the retention window, changing nothing', async () => {
    const kv = genericKvClient(cluster.endpoints[1]!);
    try {
      const begun = await call(kv, 'BeginTransaction', { key: 'aged', isolation: 'SERIALIZABLE' });
      const handle = decodeTxnHandle(begun['transaction']);
      // Re-signed with the cluster's own key (derived from its peer secret), as a node would sign it.
      const old = encodeTxnHandle({ ...handle, startedAtMs: handle.startedAtMs - 120_000 }, TxnHandleKeys.derive({ peerSecrets: [cluster.peerSecret()] }));
      const expired = (await call(kv, 'Commit', { transaction: old, writes: [{ key: 'aged/k', value: Buffer.from('x') }] }).catch((e: unknown) => e)) as grpc.ServiceError;
      expect(expired.code).toBe(grpc.status.FAILED_PRECONDITION);
      expect(expired.metadata.get('atoll-code')).toEqual(['TXN_EXPIRED']);
      const garbage = (await call(kv, 'Commit', { transaction: 'not-a-handle' }).catch((e: unknown) => e)) as grpc.ServiceError;
      expect(garbage.code).toBe(grpc.status.INVALID_ARGUMENT);
      expect(garbage.metadata.get('atoll-code')).toEqual(['INVALID_TRANSACTION']);

      // 60 writes after the snapshot with a 20-revision window: the snapshot is compacted away.
      // Reads at the snapshot say when (compaction runs about once a second); then the commit fails.
      for (let i = 0; i < 60; i++) await client.put(`aged/filler`, String(i));
      const deadline = Date.now() + 15_000;
      let readCode: unknown;
      while (Date.now() < deadline && readCode !== 'COMPACTED') {
        readCode = await call(kv, 'Get', { key: 'aged/k', transaction: begun['transaction'] }).then(
          () => 'ok',
          (e: grpc.ServiceError) => e.metadata.get('atoll-code')[0],
        );
        if (readCode !== 'COMPACTED') await new Promise((r) => setTimeout(r, 300));
      }
      expect(readCode).toBe('COMPACTED');
      const compacted = (await call(kv, 'Commit', { transaction: begun['transaction'], writes: [{ key: 'aged/k', value: Buffer.from('x') }] }).catch((e: unknown) => e)) as grpc.ServiceError;
      expect(compacted.code).toBe(grpc.status.OUT_OF_RANGE);
      expect(compacted.metadata.get('atoll-code')).toEqual(['COMPACTED']);
    } finally {
      kv.close();
    }
    expect((await client.get('aged/k')).found).toBe(false);
  });

  it('works from a plain gRPC client through a node that does not lead the partition', async () => {
    const info = await client.clusterInfo();
    const leader = info.partitions[partitionOf('plain', PARTITIONS)]!.leader;
    const address = [...cluster.addresses].find(([id]) => id !== leader)![1];
    const kv = genericKvClient(address);
    try {
      await client.put('plain/a', '1');
      const begun = await call(kv, 'BeginTransaction', { key: 'plain/a' });
      // (This loader keeps enums numeric: 0 is SNAPSHOT.)
      expect(begun).toMatchObject({ bucket: 'plain', partition: partitionOf('plain', PARTITIONS), isolation: 0 });
      const read = await call(kv, 'Get', { key: 'plain/a', transaction: begun['transaction'] });
      expect(Buffer.from(read['value'] as Uint8Array).toString()).toBe('1');
      expect(read['revision']).toBe(begun['snapshotRevision']);
      const page = await call(kv, 'GetByPrefix', { prefix: 'plain', transaction: begun['transaction'] });
      expect((page['items'] as unknown[]).length).toBe(1);
      const committed = await call(kv, 'Commit', {
        transaction: begun['transaction'],
        writes: [{ key: 'plain/b', value: Buffer.from('2') }, { key: 'plain/a', delete: true }],
        requestId: 'plain-commit-1',
      });
      // A retry of the same commit (same request id) is answered, not applied again.
      const again = await call(kv, 'Commit', { transaction: begun['transaction'], writes: [{ key: 'plain/b', value: Buffer.from('2') }, { key: 'plain/a', delete: true }], requestId: 'plain-commit-1' });
      expect(again['revision']).toBe(committed['revision']);
      const conflicting = (await call(kv, 'Commit', { transaction: begun['transaction'], writes: [{ key: 'plain/b', value: Buffer.from('3') }] }).catch((e: unknown) => e)) as grpc.ServiceError;
      expect(conflicting.code).toBe(grpc.status.ABORTED);
      expect(conflicting.metadata.get('atoll-code')).toEqual(['TXN_CONFLICT']);
    } finally {
      kv.close();
    }
    expect((await client.get('plain/a')).found).toBe(false);
    expect((await client.get('plain/b')).text()).toBe('2');
  });

  it('conserves the total of a bank under concurrent transfers through every node, at every snapshot', async () => {
    const accounts = Array.from({ length: 6 }, (_, i) => `bank/acct-${i}`);
    const total = accounts.length * 100;
    for (const account of accounts) await client.put(account, '100');
    const clients = cluster.endpoints.map((endpoint) => cluster.client([endpoint]));
    const snapshots: number[] = [];
    let stop = false;
    const auditor = (async () => {
      while (!stop) {
        const outcome = await client.transaction('bank', async (tx) => (await tx.getByPrefix('bank')).reduce((sum, entry) => sum + Number(entry.text()), 0));
        snapshots.push(outcome.value);
      }
    })();
    let committed = 0;
    try {
      await Promise.all(
        clients.flatMap((c, worker) =>
          Array.from({ length: 3 }, async (_, lane) => {
            for (let i = 0; i < 12; i++) {
              const from = accounts[(worker * 7 + lane * 3 + i) % accounts.length]!;
              const to = accounts[(worker * 5 + lane + i * 2 + 1) % accounts.length]!;
              if (from === to) continue;
              const amount = 1 + ((worker + lane + i) % 25);
              const outcome = await c.transaction(
                'bank',
                async (tx) => {
                  const balance = BigInt((await tx.get(from)).text());
                  if (balance < BigInt(amount)) return false;
                  await tx.increment(from, -amount);
                  await tx.increment(to, amount);
                  return true;
                },
                { retries: 50 },
              );
              if (outcome.value) committed++;
            }
          }),
        ),
      );
    } finally {
      stop = true;
      await auditor;
      for (const c of clients) c.close();
    }
    expect(committed).toBeGreaterThan(50);
    expect(snapshots.length).toBeGreaterThan(3);
    expect(new Set(snapshots)).toEqual(new Set([total]));
    const final = await client.getByPrefix('bank');
    expect(final.items.reduce((sum, entry) => sum + Number(entry.text()), 0)).toBe(total);
    expect(final.items.every((entry) => Number(entry.text()) >= 0)).toBe(true);
  });

  describe('scripts', () => {
    const seed = seedExample;

    it('runs the seed example exactly as written, and its "if not contains" spelling', async () => {
      await client.put('services/auth', 'localhost:8081');
      await client.put('services/matchmaking', 'localhost:8082');
      await client.put('services/inventory', 'localhost:8083');
      const asWritten = await client.executeScript(seed);
      expect(asWritten).toMatchObject({ value: false, committed: true });
      expect((await client.get('services/users')).found).toBe(false);
      const absentFirst = await client.executeScript(seedExampleAsDescribed);
      expect(absentFirst).toMatchObject({ value: true, committed: true });
      expect((await client.get('services/users')).text()).toBe('localhost:8084');
      // Now present: the page's text spelling adds nothing and reports it.
      expect((await client.executeScript(seed)).value).toBe(true);
    });

    it('runs through the CLI with parameters, prints JSON, and names the line and column of a parse error', async () => {
      const ok = cli(cluster, ['txn', '-e', 'incr @key by 2\nreturn [get @key, @n * 2]', '--param', 'key=cli/n', '--param-json', 'n=21']);
      expect(ok.status, ok.stderr).toBe(0);
      const [entry, doubled] = JSON.parse(ok.stdout) as [{ key: string; value: string }, number];
      expect(entry).toMatchObject({ key: 'cli/n', value: '2' });
      expect(doubled).toBe(42);
      expect((await client.get('cli/n')).text()).toBe('2');
      const bad = cli(cluster, ['txn', '-e', 'let x = 1\nset "cli/a" (1 +']);
      expect(bad.status).toBe(2);
      expect(bad.stderr).toMatch(/SCRIPT_PARSE_ERROR/);
      expect(bad.stderr).toMatch(/line 2, column \d+/);
      const thrown = cli(cluster, ['txn', '--bucket', 'cli', '-e', 'throw "no way"']);
      expect(thrown.status).toBe(2);
      expect(thrown.stderr).toMatch(/SCRIPT_ERROR.*no way/);
      const rolledBack = cli(cluster, ['txn', '-e', 'set "cli/r" "x"\nrollback']);
      expect(rolledBack.status).toBe(1);
      expect((await client.get('cli/r')).found).toBe(false);
    });

    it('commits a script at most once per request id, returning the first result to a retry', async () => {
      const script = 'let n = incr "once/n"\nreturn n';
      const first = await client.executeScript(script, { requestId: 'script-once-1' });
      const retry = await client.executeScript(script, { requestId: 'script-once-1' });
      expect(first.value).toBe(1);
      expect(retry).toMatchObject({ value: 1, committed: true, revision: first.revision });
      expect((await client.get('once/n')).text()).toBe('1');
    });

    it('re-runs a script that loses conflicts, so concurrent scripts through every node all count', async () => {
      const clients = cluster.endpoints.map((endpoint) => cluster.client([endpoint]));
      try {
        await client.put('race/n', '0');
        const script = 'let n = to_int(get "race/n") + 1\nset "race/n" n\nreturn n';
        const results = await Promise.all(Array.from({ length: 15 }, (_, i) => clients[i % clients.length]!.executeScript(script)));
        expect(results.map((r) => r.value).sort((a, b) => Number(a) - Number(b))).toEqual(Array.from({ length: 15 }, (_, i) => i + 1));
      } finally {
        for (const c of clients) c.close();
      }
      expect((await client.get('race/n')).text()).toBe('15');
    });
  });
});
