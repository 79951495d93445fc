/**
 * `etcdctl make-mirror` from a real etcd into Atoll's etcd port, while a writer keeps changing the
 * source: the mirror's first copy and its watch of what follows must leave Atoll's keyspace equal
 * to etcd's (keys and values; revisions differ by design, docs/etcd-api.md).
 * One Atoll cluster and one etcd for the file; the writer is the `etcd3` npm client, bounded.
 */
import { Etcd3 } from 'etcd3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LocalCluster } from '../integration/local-cluster.js';
import { etcdctl, EtcdctlProcess, RealEtcd, requireEtcdTools } from './etcd-harness.js';

const tools = requireEtcdTools('etcdctl make-mirror into Atoll');

/** Every key and value of a keyspace, as etcdctl prints them (base64), in key order. */
async function keyspaceOf(endpoint: string): Promise<Array<[string, string]>> {
  const result = await etcdctl(endpoint, ['get', '--prefix', '', '-w', 'json']);
  if (result.status !== 0) throw new Error(`etcdctl get on ${endpoint} failed: ${result.stderr}`);
  const kvs = (JSON.parse(result.stdout) as { kvs?: Array<{ key: string; value?: string }> }).kvs ?? [];
  return kvs.map((kv) => [kv.key, kv.value ?? '']);
}

/** Waits (bounded) until `key` exists at `endpoint`. */
async function untilPresent(endpoint: string, key: string, mirror: EtcdctlProcess): Promise<void> {
  const deadline = Date.now() + 30_000;
  while ((await etcdctl(endpoint, ['get', key, '--print-value-only'])).stdout === '') {
    if (mirror.exitCode !== undefined || Date.now() > deadline) throw new Error(`${key} never reached ${endpoint}; make-mirror printed: ${mirror.stdout}; its client logged: ${mirror.clientLog.join('\n')}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe.skipIf(!tools.available)('etcdctl make-mirror from etcd into Atoll', () => {
  let cluster: LocalCluster | undefined;
  let etcd: RealEtcd | undefined;
  let source: Etcd3 | undefined;

  beforeAll(async () => {
    [cluster, etcd] = await Promise.all([LocalCluster.start({ partitions: 2, etcd: true }), RealEtcd.start()]);
    source = new Etcd3({ hosts: `http://${etcd.endpoint}` });
  }, 60_000);

  afterAll(async () => {
    source?.close();
    await Promise.all([cluster?.stop(), etcd?.stop()]);
  });

  it('ends with equal keyspaces after a first copy and writes made while mirroring', async () => {
    const target = cluster!.etcdAddresses.get(2) as string;
    // Keys before the mirror starts: its first copy.
    for (let i = 0; i < 60; i++) await source!.put(`pre/${String(i).padStart(3, '0')}`).value(`v${i}`);
    await source!.put(Buffer.from([0x00, 0xff, 0x10])).value(Buffer.from([0xde, 0xad]));
    const mirror = new EtcdctlProcess(etcd!.endpoint, ['make-mirror', target]);
    try {
      // Writes while it copies and then watches: updates, deletes, multi-key transactions.
      for (let i = 0; i < 200; i++) {
        const key = `live/${String(i % 37).padStart(2, '0')}`;
        if (i % 9 === 8) await source!.delete().key(key);
        else if (i % 11 === 10) await source!.if(key, 'Version', '>', -1).then(source!.put(`txn/a${i % 5}`).value(`t${i}`), source!.put(`txn/b${i % 5}`).value(`t${i}`)).commit();
        else await source!.put(key).value(`w${i}`);
        if (i % 50 === 0) await source!.delete().key(`pre/${String(i).padStart(3, '0')}`);
        // Halfway, once the first copy reached Atoll: the rest can only arrive through the mirror's watch.
        if (i === 100) await untilPresent(target, 'pre/059', mirror);
      }
      await source!.put('zz/last').value('done');
      const expected = await keyspaceOf(etcd!.endpoint);
      expect(expected.length).toBeGreaterThan(100);
      // The mirror applies the last write shortly: wait for it (bounded), then compare everything.
      const deadline = Date.now() + 30_000;
      let mirrored = await keyspaceOf(target);
      while (JSON.stringify(mirrored) !== JSON.stringify(expected) && Date.now() < deadline) {
        if (mirror.exitCode !== undefined) throw new Error(`make-mirror exited (${String(mirror.exitCode)}): ${mirror.stdout}`);
        await new Promise((resolve) => setTimeout(resolve, 100));
        mirrored = await keyspaceOf(target);
      }
      expect(mirrored).toEqual(expected);
    } finally {
      await mirror.stop('SIGTERM');
    }
  }, 90_000);
});
