/**
 * The driver's bookkeeping of snapshot imports beside the loop (src/node/snapshot/snapshot-imports.ts), on
 * a fake group so the order of storage writes is exact:
 * - a log record the group staged before its snapshot Ready (here a compaction's snapshot point,
 *   queued for the next iteration's write) reaches the engine before the import writes anything,
 *   so it can never land after the import's final batch and overwrite the snapshot it records;
 * - while the import runs, the group is not ticked, stepped or readied, and its Ready is finished
 *   (staged, applied, advanced) by a later iteration.
 */
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import type { AtollError } from '../../src/errors.js';
import { systemClock, type NodeTimers, type NodeTransport } from '../../src/node/ports.js';
import { RaftDriver, type DrivenGroup } from '../../src/node/replica/raft-driver.js';
import type { Ready, RawNode } from '../../src/raft/rawnode.js';
import type { Snapshot } from '../../src/raft/types.js';
import { MemoryEngine } from '../../src/storage/memory-engine.js';
import type { WriteOperation, WriteOptions } from '../../src/storage/storage-engine.js';

const key = (text: string): Uint8Array => new TextEncoder().encode(text);
const emptyReady = (over: Partial<Ready> = {}): Ready => ({
  softState: undefined,
  hardState: undefined,
  snapshot: undefined,
  entries: [],
  messages: [],
  committedEntries: [],
  readStates: [],
  droppedReads: [],
  ...over,
});

/** A group whose Readys are scripted; it records what the driver does to it. */
class FakeGroup implements DrivenGroup {
  readonly id = 0;
  exporting = false;
  installing = false;
  readonly importsBesideLoop = true;
  readonly events: string[] = [];
  readies: Ready[] = [];
  outstanding: Ready | undefined;
  compactionDue = false;
  finishImport: (() => void) | undefined;
  readonly raw: RawNode;

  constructor(private readonly engine: MemoryEngine & { order: string[] }) {
    const group = this;
    this.raw = {
      hasReady: () => group.readies.length > 0,
      ready: () => (group.outstanding = group.readies.shift() as Ready),
      advance: (ready: Ready) => {
        expect(ready).toBe(group.outstanding);
        group.outstanding = undefined;
        group.events.push(ready.snapshot ? 'advance snapshot' : 'advance');
      },
      tick: () => {
        if (group.installing) group.events.push('tick while installing');
      },
      step: () => group.events.push(group.installing ? 'step while installing' : 'step'),
      isMember: () => true,
      lastIndex: () => 10,
      status: () => ({ lead: 1, role: 'follower' }),
      reportUnreachable: () => undefined,
      // The driver's activity tracking (group-activity.ts): this fake never quiesces; the test's
      // Readys are found because start() marks the group for a visit and the driver revisits a
      // group that still has a Ready after advance.
      attachHost: () => undefined,
      quiesced: false,
    } as unknown as RawNode;
  }

  startReadRound(): void {
    if (this.installing) this.events.push('read round while installing');
  }
  async stage(ready: Ready): Promise<{ ops: WriteOperation[]; mustSync: boolean }> {
    this.events.push(ready.snapshot ? 'stage snapshot' : 'stage');
    return { ops: [], mustSync: ready.snapshot !== undefined };
  }
  async apply(): Promise<void> {}
  needsCompaction(): boolean {
    return this.compactionDue;
  }
  compactLog(): WriteOperation[] {
    this.compactionDue = false;
    return [{ type: 'put', key: key('log/snapshot-point'), value: key('old') }];
  }
  needsSnapshotBuild(): boolean {
    return false;
  }
  async exportSnapshot(): Promise<Snapshot | undefined> {
    return undefined;
  }
  adoptSnapshot(): WriteOperation[] {
    return [];
  }
  failAll(_error: AtollError): void {}
  beginSnapshotImport(): Promise<void> {
    this.events.push('import begins');
    // The import's own writes (its final batch records the new snapshot point), then it waits.
    void this.engine.write([{ type: 'put', key: key('log/snapshot-point'), value: key('new') }]);
    return new Promise<void>((resolve) => (this.finishImport = resolve));
  }
}

/** Runs every timer callback on the next macrotask; `every` never fires (no ticks unless asked). */
const timers: NodeTimers = {
  every: () => ({ cancel: () => undefined }),
  after: (ms, run) => {
    const handle = setTimeout(run, ms);
    return { cancel: () => clearTimeout(handle) };
  },
  soon: (run) => void setImmediate(run),
};
const settle = (): Promise<void> => new Promise((resolve) => setTimeout(resolve, 5));

describe('snapshot imports beside the loop', () => {
  it('start after the iteration has written what the group staged before, and leave the group alone until finished', async () => {
    const engine = Object.assign(new MemoryEngine(), { order: [] as string[] });
    const write = engine.write.bind(engine);
    engine.write = async (operations: WriteOperation[], options?: WriteOptions) => {
      for (const op of operations) if (op.type === 'put') engine.order.push(new TextDecoder().decode(op.value));
      return write(operations, options);
    };
    let deliver: ((from: number, messages: never[]) => void) | undefined;
    const driver = new RaftDriver<FakeGroup>({
      id: 2,
      knownNodes: new Map([[1, 'a'], [2, 'b']]),
      tickMs: 10,
      engine,
      transport: (events) => {
        deliver = events.onMessages as never;
        return { send: () => undefined, isReachable: () => true, close: () => undefined } as unknown as NodeTransport;
      },
      peerSecret: 'p'.repeat(32),
      clock: systemClock,
      timers,
      logger: pino({ level: 'silent' }),
      onFatal: (error) => {
        throw error;
      },
    });
    const group = new FakeGroup(engine);
    driver.groups.set(0, group);
    driver.start(() => undefined);

    // Iteration 1: a plain Ready; at its end the group's log compaction is queued for the next
    // write. Iteration 2 (at once): the snapshot Ready. The queued compaction record is written
    // first, then the import starts (before, it started as the Ready was taken: 'new' then 'old').
    const snapshot: Snapshot = { meta: { index: 20, term: 2, confState: { voters: [1, 2], learners: [] } }, data: new Uint8Array([1]) };
    group.readies.push(emptyReady(), emptyReady({ snapshot }));
    group.compactionDue = true;
    driver.enqueue(() => undefined);
    await settle();
    expect(engine.order).toEqual(['old', 'new']);
    expect(group.installing).toBe(true);

    // While it imports: steps are dropped, no read round; the Ready stays outstanding.
    deliver?.(1, [{ group: 0, message: { type: 'heartbeat', from: 1, to: 2, term: 2 } }] as never);
    driver.enqueue(() => undefined);
    await settle();
    expect(group.events).toEqual(['stage', 'advance', 'import begins']);
    expect(group.outstanding?.snapshot).toBe(snapshot);

    // Finished: a later iteration stages, applies and advances that Ready; the group is back.
    group.finishImport?.();
    await settle();
    await settle();
    expect(group.events).toEqual(['stage', 'advance', 'import begins', 'stage snapshot', 'advance snapshot']);
    expect(group.installing).toBe(false);
    deliver?.(1, [{ group: 0, message: { type: 'heartbeat', from: 1, to: 2, term: 2 } }] as never);
    await settle();
    expect(group.events.at(-1)).toBe('step');
    await driver.close();
  });
});
