/**
 * The `etcd3` npm client (a client nobody here wrote) against Atoll's etcd port: put/get, byte
 * keys, ranges and counts, a transaction with compares, a watch and a lease, and etcd's errors as
 * the client maps them. One Atoll cluster for the file; no etcd binary needed.
 */
import { Etcd3, EtcdLeaseInvalidError, type IKeyValue } from 'etcd3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LocalCluster } from '../integration/local-cluster.js';

describe('the etcd3 npm client against Atoll', () => {
  let cluster: LocalCluster;
  let client: Etcd3;

  beforeAll(async () => {
    cluster = await LocalCluster.start({ partitions: 4, etcd: true });
    client = new Etcd3({ hosts: [...cluster.etcdAddresses.values()].map((address) => `http://${address}`) });
  }, 60_000);

  afterAll(async () => {
    client?.close();
    await cluster?.stop();
  });

  it('puts and gets strings and byte keys, ranges over prefixes in byte order, counts', async () => {
    await client.put('svc/a').value('1');
    await client.put('svc/b').value('2');
    await client.put(Buffer.from([0x00, 0xff])).value('binary');
    await client.put(Buffer.from([0x00, 0x01])).value('low');
    expect(await client.get('svc/a').string()).toBe('1');
    expect(await client.get('absent').string()).toBeNull();
    expect(await client.getAll().prefix('svc/').strings()).toEqual({ 'svc/a': '1', 'svc/b': '2' });
    expect(await client.getAll().prefix('svc/').count()).toBe(2);
    const binary = await client.getAll().prefix(Buffer.from([0x00])).exec();
    expect(binary.kvs.map((kv: IKeyValue) => [...kv.key])).toEqual([[0x00, 0x01], [0x00, 0xff]]);
    expect(binary.count).toBe('2');
    const all = await client.getAll().sort('Key', 'Descend').limit(2).keys();
    expect(all).toEqual(['svc/b', 'svc/a']);
  });

  it('commits a transaction only when its compares hold', async () => {
    const applied = await client.if('svc/a', 'Value', '==', '1').then(client.put('svc/a').value('10'), client.get('svc/b')).else(client.put('lost').value('x')).commit();
    expect(applied.succeeded).toBe(true);
    expect(applied.responses[1]?.response_range?.kvs[0]?.value.toString()).toBe('2');
    const refused = await client.if('svc/a', 'Value', '==', '1').then(client.put('svc/a').value('11')).else(client.get('svc/a')).commit();
    expect(refused.succeeded).toBe(false);
    expect(refused.responses[0]?.response_range?.kvs[0]?.value.toString()).toBe('10');
    const modRevision = Number((await client.get('svc/a').exec()).kvs[0]!.mod_revision);
    const cas = await client.if('svc/a', 'Mod', '==', modRevision).then(client.delete().key('svc/b')).commit();
    expect(cas.succeeded).toBe(true);
    expect(await client.get('svc/b').string()).toBeNull();
  });

  it('watches a prefix and sees puts and deletes in order', async () => {
    const watcher = await client.watch().prefix('w/').create();
    const seen: string[] = [];
    const done = new Promise<void>((resolve) => {
      watcher.on('put', (kv) => seen.push(`put ${kv.key.toString()}=${kv.value.toString()}`));
      watcher.on('delete', (kv) => {
        seen.push(`delete ${kv.key.toString()}`);
        resolve();
      });
    });
    await client.put('w/1').value('a');
    await client.put('w/2').value('b');
    await client.put('other').value('c');
    await client.delete().key('w/1');
    await done;
    expect(seen).toEqual(['put w/1=a', 'put w/2=b', 'delete w/1']);
    await watcher.cancel();
  });

  it('grants a lease, attaches keys, keeps it alive, and its keys go with its revocation', async () => {
    const lease = client.lease(30, { autoKeepAlive: false });
    const id = await lease.grant();
    await lease.put('leased/x').value('v');
    await lease.keepaliveOnce();
    const ttl = await client.lease(30, { autoKeepAlive: false }).grant().then(async (other) => {
      await client.leaseClient.leaseRevoke({ ID: other });
      return client.leaseClient.leaseTimeToLive({ ID: id, keys: true });
    });
    expect(Number(ttl.grantedTTL)).toBe(30);
    expect(ttl.keys.map((key: Buffer) => key.toString())).toEqual(['leased/x']);
    expect(Number((await client.get('leased/x').exec()).kvs[0]!.lease)).toBe(Number(id));
    await lease.revoke();
    expect(await client.get('leased/x').string()).toBeNull();
    await expect(client.put('leased/y').value('v').lease(id).exec()).rejects.toBeInstanceOf(EtcdLeaseInvalidError);
  });
});
