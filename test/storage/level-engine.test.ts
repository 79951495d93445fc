import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll } from 'vitest';
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
