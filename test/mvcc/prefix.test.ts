/** Get by prefix: one revision, pages, ordering and tricky characters. */
import { describe, expect, it } from 'vitest';
import { makeLimits } from '../../src/limits.js';
import { keyOf, keyPrefixOf } from '../../src/keys/structured-key.js';
import { prefixBucket } from '../../src/keys/prefix-bucket.js';
import type { PrefixPage } from '../../src/mvcc/mvcc-store.js';
import { engineKinds, fromBytes, Partition } from './harness.js';

const keysOf = (page: PrefixPage): string[] => page.items.map((item) => item.key);

describe.each(engineKinds)('MvccStore getByPrefix on $name', (kind) => {
  it('returns live keys under a bucket, in order, without the bucket key itself', async () => {
    const partition = await Partition.create(kind);
    for (const key of ['services/inventory', 'services/auth', 'services', 'servicesX/a', 'services/matchmaking', 'other/x']) {
      await partition.put(key, key);
    }
    await partition.apply({ type: 'delete', key: 'services/matchmaking' });
    const { keyPrefix } = prefixBucket('services');
    const page = await partition.store.getByPrefix(keyPrefix, { nowMs: partition.nowMs });
    expect(keysOf(page)).toEqual(['services/auth', 'services/inventory']);
    expect(page).toMatchObject({ more: false, revision: 7 });
    expect(fromBytes(page.items[0]!.value)).toBe('services/auth');
    expect(page.items[0]).toMatchObject({ createRevision: 2, modRevision: 2, version: 1 });
  });

  it('hides expired keys at once', async () => {
    const partition = await Partition.create(kind);
    await partition.put('b/short', 'x', { ttlMs: 10 });
    await partition.put('b/long', 'y', { ttlMs: 1000 });
    expect(keysOf(await partition.store.getByPrefix('b/', { nowMs: partition.nowMs + 9 }))).toEqual(['b/long', 'b/short']);
    expect(keysOf(await partition.store.getByPrefix('b/', { nowMs: partition.nowMs + 10 }))).toEqual(['b/long']);
  });

  it('pages through one revision while writes continue', async () => {
    const partition = await Partition.create(kind);
    for (let index = 0; index < 25; index++) await partition.put(`b/${String(index).padStart(2, '0')}`, `v${index}`);
    const first = await partition.store.getByPrefix('b/', { nowMs: partition.nowMs, limit: 10 });
    expect(keysOf(first)).toHaveLength(10);
    expect(first).toMatchObject({ more: true, continueAfter: 'b/09', revision: 25 });
    // Writes after the first page: a new key in the unread range, a delete, an update.
    await partition.put('b/15x', 'new');
    await partition.apply({ type: 'delete', key: 'b/20' });
    await partition.put('b/21', 'changed');
    const collected = [...keysOf(first)];
    let page = first;
    while (page.more) {
      page = await partition.store.getByPrefix('b/', { nowMs: partition.nowMs, limit: 10, after: page.continueAfter!, revision: first.revision });
      expect(page.revision).toBe(first.revision);
      collected.push(...keysOf(page));
      if (page.items.some((item) => item.key === 'b/21')) expect(fromBytes(page.items.find((item) => item.key === 'b/21')!.value)).toBe('v21');
    }
    expect(collected).toEqual(Array.from({ length: 25 }, (_, index) => `b/${String(index).padStart(2, '0')}`));
    const latest = await partition.store.getByPrefix('b/', { nowMs: partition.nowMs, limit: 1000 });
    expect(keysOf(latest)).toContain('b/15x');
    expect(keysOf(latest)).not.toContain('b/20');
  });

  it('reports more: false when the last page is exactly full', async () => {
    const partition = await Partition.create(kind);
    for (const key of ['b/1', 'b/2']) await partition.put(key, key);
    expect(await partition.store.getByPrefix('b/', { nowMs: 0, limit: 2 })).toMatchObject({ more: false });
    expect(await partition.store.getByPrefix('b/', { nowMs: 0, limit: 1 })).toMatchObject({ more: true, continueAfter: 'b/1' });
  });

  it('keeps keys with U+0000, U+FFFF, emoji and separators apart, in code point order', async () => {
    const partition = await Partition.create(kind);
    const keys = ['t/a', 't/a\u0000', 't/a\u0000b', 't/a\u0001', 't/a/b', 't/a:b', 't/a\uffff', 't/a😀', 't/ab', 't/\u0000', 't/\uffff', 't/😀'];
    for (const key of keys) await partition.put(key, key);
    await partition.put('t\u0000/x', 'other bucket');
    await partition.put('t', 'bucket key');
    const utf8Order = [...keys].sort((left, right) => Buffer.compare(Buffer.from(left), Buffer.from(right)));
    const page = await partition.store.getByPrefix('t/', { nowMs: 0 });
    expect(keysOf(page)).toEqual(utf8Order);
    for (const item of page.items) expect(fromBytes(item.value)).toBe(item.key);
    expect(keysOf(await partition.store.getByPrefix('t/a\u0000', { nowMs: 0 }))).toEqual(['t/a\u0000', 't/a\u0000b']);
    expect(keysOf(await partition.store.getByPrefix('t/a', { nowMs: 0, limit: 3 }))).toEqual(utf8Order.filter((key) => key.startsWith('t/a')).slice(0, 3));
    for (const key of keys) expect(await partition.value(key)).toBe(key);
  });

  it('scans structured keys by their leading parts', async () => {
    const partition = await Partition.create(kind);
    await partition.put(keyOf('assets', 'north', 'P1'), '0');
    await partition.put(keyOf('assets', 'north', 'P2'), '3');
    await partition.put(keyOf('assets', 'north:x', 'P1'), '9');
    await partition.put(keyOf('assets', 'south', 'P1'), '7');
    const north = await partition.store.getByPrefix(keyPrefixOf('assets', 'north'), { nowMs: 0 });
    expect(keysOf(north)).toEqual([keyOf('assets', 'north', 'P1'), keyOf('assets', 'north', 'P2')]);
    expect(fromBytes(north.items[0]!.value)).toBe('0');
  });

  it('reads a past revision and refuses a compacted one', async () => {
    const partition = await Partition.create(kind);
    await partition.put('b/1', 'a');
    await partition.put('b/2', 'b');
    await partition.apply({ type: 'delete', key: 'b/1' });
    expect(keysOf(await partition.store.getByPrefix('b/', { nowMs: 0, revision: 2 }))).toEqual(['b/1', 'b/2']);
    expect(keysOf(await partition.store.getByPrefix('b/', { nowMs: 0, revision: 1 }))).toEqual(['b/1']);
    await partition.applyOk({ type: 'compact', belowRevision: 2 });
    await expect(partition.store.getByPrefix('b/', { nowMs: 0, revision: 1 })).rejects.toMatchObject({ code: 'COMPACTED' });
    expect(keysOf(await partition.store.getByPrefix('b/', { nowMs: 0, revision: 2 }))).toEqual(['b/1', 'b/2']);
  });

  it('stops a page after maxScanVersions and continues correctly', async () => {
    const limits = makeLimits({ maxScanVersions: 1000, maxPageSize: 1000, defaultPageSize: 100 });
    const partition = await Partition.create(kind, { limits });
    // 1200 deleted keys (2 versions each) before the one live key.
    for (let batch = 0; batch < 12; batch++) {
      const keys = Array.from({ length: 100 }, (_, index) => `b/a${String(batch * 100 + index).padStart(5, '0')}`);
      await partition.applyOk({ type: 'batch', writes: keys.map((key) => ({ type: 'put' as const, key, value: new Uint8Array(0) })) });
      await partition.applyOk({ type: 'batch', writes: keys.map((key) => ({ type: 'delete' as const, key })) });
    }
    await partition.put('b/z', 'live');
    const first = await partition.store.getByPrefix('b/', { nowMs: 0 });
    expect(first.items).toEqual([]);
    expect(first.more).toBe(true);
    const collected: string[] = [];
    let page = first;
    let pages = 1;
    while (page.more) {
      page = await partition.store.getByPrefix('b/', { nowMs: 0, after: page.continueAfter!, revision: first.revision });
      collected.push(...keysOf(page));
      pages++;
    }
    expect(collected).toEqual(['b/z']);
    // 2400 versions at about 1000 per page.
    expect(pages).toBe(3);
  });

  it('rejects bad page arguments', async () => {
    const partition = await Partition.create(kind);
    for (const limit of [0, -1, 1001, 1.5]) {
      await expect(partition.store.getByPrefix('b/', { nowMs: 0, limit })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    }
    await expect(partition.store.getByPrefix('\ud800', { nowMs: 0 })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    await expect(partition.store.getByPrefix('b/', { nowMs: 0, after: '' })).rejects.toMatchObject({ code: 'INVALID_KEY' });
  });
});
