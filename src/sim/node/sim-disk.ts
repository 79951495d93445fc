/**
 * A simulated node's disk, and the engine one incarnation of its process sees. The disk is a
 * MemoryEngine kept across incarnations: a crash rolls back every write not yet synced (all of
 * them, or the oldest few survive, as LevelDB's log allows). The incarnation's engine forwards to
 * it while the incarnation lives; at every call it asks the fault schedule whether the process
 * dies right there (before the call reaches the disk, or after it landed but before the caller
 * hears of it), and once dead it never touches the disk again: every later call hangs forever.
 */
import { MemoryEngine } from '../../storage/memory-engine.js';
import type { IterateOptions, KeyRange, StorageEngine, StorageEntry, WriteOperation, WriteOptions } from '../../storage/storage-engine.js';
import type { NodeHost } from './sim-host.js';

/** Where in the engine a crash can strike. */
export type CrashPointKind = 'sync-write' | 'write' | 'delete-range' | 'iterate';
export type CrashTiming = 'before' | 'after';

export class SimDisk {
  readonly engine = new MemoryEngine();
}

/** A promise that never settles: what a dead process's pending I/O looks like from inside it. */
function never<T>(): Promise<T> {
  return new Promise<T>(() => undefined);
}

export class IncarnationEngine implements StorageEngine {
  private closed = false;

  constructor(
    private readonly disk: SimDisk,
    private readonly host: NodeHost,
    /** The fault schedule: whether the process dies at this call, and when. */
    private readonly crashPoint: (kind: CrashPointKind) => CrashTiming | undefined,
    /** Kills the incarnation (the harness crashes the disk and schedules a restart). */
    private readonly crash: (where: string) => void,
  ) {}

  private get usable(): boolean {
    return this.host.alive && !this.closed;
  }

  async get(key: Uint8Array): Promise<Uint8Array | undefined> {
    if (!this.usable) return never();
    return this.disk.engine.get(key);
  }

  getSync(key: Uint8Array): Uint8Array | undefined {
    if (!this.usable) throw new Error('the process is gone');
    return this.disk.engine.getSync(key);
  }

  async getMany(keys: Uint8Array[]): Promise<Array<Uint8Array | undefined>> {
    if (!this.usable) return never();
    return this.disk.engine.getMany(keys);
  }

  iterate(options: IterateOptions): AsyncIterable<StorageEntry> {
    const self = this;
    return {
      async *[Symbol.asyncIterator]() {
        if (!self.usable) await never();
        const below = self.disk.engine.iterate(options)[Symbol.asyncIterator]();
        try {
          for (;;) {
            if (!self.usable) await never();
            const timing = self.crashPoint('iterate');
            if (timing === 'before') {
              self.crash('iterating');
              await never();
            }
            const next = await below.next();
            if (timing === 'after') {
              self.crash('iterating, after a step read');
              await never();
            }
            if (!self.usable) await never();
            if (next.done === true) return;
            yield next.value;
          }
        } finally {
          await below.return?.();
        }
      },
    };
  }

  async write(operations: WriteOperation[], options: WriteOptions = {}): Promise<void> {
    if (!this.usable) return never();
    const kind: CrashPointKind = options.sync === true ? 'sync-write' : 'write';
    const timing = this.crashPoint(kind);
    if (timing === 'before') {
      this.crash(`before a ${kind} of ${operations.length} operations landed`);
      return never();
    }
    await this.disk.engine.write(operations, options);
    if (timing === 'after') {
      this.crash(`after a ${kind} of ${operations.length} operations landed`);
      return never();
    }
  }

  async deleteRange(range: KeyRange, options: WriteOptions = {}): Promise<void> {
    if (!this.usable) return never();
    const timing = this.crashPoint('delete-range');
    if (timing === 'before') {
      this.crash('before a range delete');
      return never();
    }
    await this.disk.engine.deleteRange(range, options);
    if (timing === 'after') {
      this.crash('after a range delete');
      return never();
    }
  }

  /** Closing the process's engine leaves the disk as it is (the next incarnation opens it). */
  async close(): Promise<void> {
    this.closed = true;
  }
}
