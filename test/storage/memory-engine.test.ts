import { describe, expect, it } from 'vitest';
import { MemoryEngine } from '../../src/storage/memory-engine.js';
import { runEngineConformance } from './engine-conformance.js';

runEngineConformance('MemoryEngine', async () => new MemoryEngine(), {
  reopen: async (engine) => {
    await engine.close();
    (engine as MemoryEngine).reopen();
    return engine;
  },
});

const text = (value: string): Uint8Array => new TextEncoder().encode(value);

describe('MemoryEngine crash simulation', () => {
  it('loses un-synced batches and keeps synced ones', async () => {
    const engine = new MemoryEngine();
    await engine.write([{ type: 'put', key: text('a'), value: text('1') }]);
    await engine.write([{ type: 'put', key: text('b'), value: text('2') }], { sync: true });
    await engine.write([{ type: 'put', key: text('a'), value: text('changed') }, { type: 'del', key: text('b') }]);
    await engine.write([{ type: 'put', key: text('c'), value: text('3') }]);
    expect(engine.unsyncedBatchCount).toBe(2);
    expect(engine.crash()).toBe(2);
    // 'a' was written un-synced, but the synced write after it made it durable.
    expect(await engine.get(text('a'))).toEqual(text('1'));
    expect(await engine.get(text('b'))).toEqual(text('2'));
    expect(await engine.get(text('c'))).toBeUndefined();
    expect(engine.size).toBe(2);
  });

  it('can keep a prefix of the un-synced batches, never a later one without an earlier one', async () => {
    const engine = new MemoryEngine();
    for (const value of ['1', '2', '3']) await engine.write([{ type: 'put', key: text('k'), value: text(value) }]);
    expect(engine.crash({ keepUnsyncedBatches: 2 })).toBe(1);
    expect(await engine.get(text('k'))).toEqual(text('2'));
    expect(engine.crash()).toBe(0);
    expect(await engine.get(text('k'))).toEqual(text('2'));
  });

  it('rolls back an un-synced deleteRange', async () => {
    const engine = new MemoryEngine();
    await engine.write(['a', 'b', 'c'].map((key) => ({ type: 'put' as const, key: text(key), value: text(key) })), { sync: true });
    await engine.deleteRange({ gte: text('a'), lt: text('c') });
    expect(engine.size).toBe(1);
    engine.crash();
    expect(engine.size).toBe(3);
  });

  it('asserts on use after close', async () => {
    const engine = new MemoryEngine();
    await engine.close();
    await expect(engine.get(text('a'))).rejects.toThrow(/after close/);
  });
});
