import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { LevelEngine } from '../../src/storage/level-engine.js';
import { runEngineConformance } from './engine-conformance.js';

const root = mkdtempSync(join(tmpdir(), 'atoll-level-engine-'));
let counter = 0;
afterAll(() => rmSync(root, { recursive: true, force: true }));

runEngineConformance('LevelEngine', async () => LevelEngine.open(join(root, `db-${counter++}`)), {
  reopen: async (engine) => {
    const location = (engine as LevelEngine).location;
    await engine.close();
    return LevelEngine.open(location, { createIfMissing: false });
  },
});

describe('LevelEngine memory', () => {
  it('keeps LevelDB memory within the block cache plus two memtables it was opened with, and reports it', async () => {
    const cacheSize = 1024 * 1024;
    const writeBufferSize = 1024 * 1024;
    const engine = await LevelEngine.open(join(root, `db-${counter++}`), { cacheSize, writeBufferSize });
    try {
      const limit = cacheSize + 2 * writeBufferSize;
      let peak = 0;
      const value = new Uint8Array(1_000).fill(7);
      // 16 MiB of writes: far more than the bound, so memtables must be flushed to stay in it.
      for (let batch = 0; batch < 64; batch++) {
        const operations = Array.from({ length: 256 }, (_, i) => ({ type: 'put' as const, key: new TextEncoder().encode(`k/${batch}/${i}`), value }));
        await engine.write(operations);
        const [report] = engine.memoryUsage();
        expect(report).toMatchObject({ consumer: 'leveldb', limitBytes: limit });
        peak = Math.max(peak, report?.bytes ?? 0);
      }
      for (let i = 0; i < 2_000; i++) await engine.get(new TextEncoder().encode(`k/${i % 64}/${i % 256}`));
      peak = Math.max(peak, engine.memoryUsage()[0]?.bytes ?? 0);
      // LevelDB's estimate may pass the bound by an arena block or a cache entry's charge.
      expect(peak).toBeLessThanOrEqual(limit + 64 * 1024);
      expect(peak).toBeGreaterThan(writeBufferSize / 2);
    } finally {
      await engine.close();
    }
  });
});
