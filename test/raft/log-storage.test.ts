import { MemoryLogStorage } from '../../src/raft/storage.js';
import type { ConfState, Entry, HardState, SnapshotMeta } from '../../src/raft/types.js';
import { conformanceSnapshotData, runLogStorageConformance, type LogStorageHarness } from './log-storage-conformance.js';

/** MemoryLogStorage behind the uniform harness: its mutators are called directly, nothing to reload. */
class MemoryHarness implements LogStorageHarness {
  private readonly storage = new MemoryLogStorage();

  initialState() {
    return this.storage.initialState();
  }
  entries(lo: number, hi: number, maxBytes: number) {
    return this.storage.entries(lo, hi, maxBytes);
  }
  term(index: number) {
    return this.storage.term(index);
  }
  firstIndex() {
    return this.storage.firstIndex();
  }
  lastIndex() {
    return this.storage.lastIndex();
  }
  snapshot() {
    return this.storage.snapshot();
  }

  async append(entries: readonly Entry[]): Promise<void> {
    this.storage.append(entries);
  }
  async setHardState(hardState: HardState): Promise<void> {
    this.storage.setHardState(hardState);
  }
  async applySnapshot(meta: SnapshotMeta): Promise<void> {
    this.storage.applySnapshot({ meta, data: conformanceSnapshotData(meta) });
  }
  async createSnapshotMeta(index: number, confState: ConfState): Promise<void> {
    const meta = { index, term: this.storage.term(index), confState };
    this.storage.createSnapshot(index, confState, conformanceSnapshotData(meta));
  }
  async compact(index: number): Promise<void> {
    this.storage.compact(index);
  }
  async bootstrap(confState: ConfState): Promise<void> {
    this.storage.bootstrap(confState, conformanceSnapshotData({ index: 1, term: 1, confState }));
  }
}

runLogStorageConformance('MemoryLogStorage', async () => new MemoryHarness());
