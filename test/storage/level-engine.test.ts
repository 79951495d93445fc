import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { LevelEngine } from '../../src/storage/level-engine.js';
import type { WriteOperation } from '../../src/storage/storage-engine.js';
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

describe('LevelEngine.write on the hot path', () => {
  it('hands the caller\'s operations to LevelDB as they are, without copying each one, and keeps its own bytes', async () => {
    const engine = await LevelEngine.open(join(root, `db-${counter++}`));
    try {
      const database = (engine as unknown as { database: { _batch: (operations: unknown, options: unknown) => Promise<void> } }).database;
      const original = database._batch;
      const seen: unknown[] = [];
      database._batch = function (this: unknown, operations: unknown, options: unknown) {
        seen.push(operations);
        return original.call(this, operations, options);
      };
      const value = Uint8Array.of(1, 2, 3);
      const operations: WriteOperation[] = [
        { type: 'put', key: Uint8Array.of(9, 1), value },
        { type: 'del', key: Uint8Array.of(9, 2) },
      ];
      await engine.write(operations, { sync: true });
      // One batch, the very array the caller passed: no per-operation object built for it.
      expect(seen).toHaveLength(1);
      expect(seen[0]).toBe(operations);
      // The engine copied the bytes: changing the caller's buffer afterwards changes nothing stored.
      value[0] = 7;
      expect(await engine.get(Uint8Array.of(9, 1))).toEqual(Uint8Array.of(1, 2, 3));
      // A malformed operation is refused before anything is written.
      await expect(engine.write([{ type: 'put', key: Uint8Array.of(9, 3), value }, { type: 'nope', key: Uint8Array.of(9, 4) } as never])).rejects.toThrow(/put or del/);
      expect(await engine.get(Uint8Array.of(9, 3))).toBeUndefined();
    } finally {
      await engine.close();
    }
  });
});
