/**
 * Watch at the node (src/node/service/watch-service.ts) on three in-process nodes: only the leader serves
 * a watch (a follower answers NOT_LEADER with the leader), a watch without a start revision starts
 * at a linearizable read, a leader that loses its leadership ends its watches with NOT_LEADER, a
 * cancelled watch frees its slot, watchers per tenant are bounded, and so are the bytes they hold:
 * a stream that is never written is cut off, and its slot comes back only with its bytes.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { KvExecutor } from '../../src/node/service/kv-executor.js';
import { MvccStore } from '../../src/mvcc/mvcc-store.js';
import { AtollError } from '../../src/errors.js';
import { newToken } from '../../src/tenancy/token.js';
import { preferredLeaderOf } from '../../src/keys/placement.js';
import type { WatchMessage } from '../../src/api/node-api.js';
import { FakeTransport } from '../watch/fake-transport.js';
import { CollectingSink, InProcessCluster, waitFor } from './in-process-cluster.js';

/** The leader once it is the preferred one (the leader balancer moves it there otherwise, mid-test). */
async function settledLeader(cluster: InProcessCluster): Promise<number> {
  const preferred = preferredLeaderOf(0, [1, 2, 3], 3);
  expect(await waitFor(() => cluster.leaderId() === preferred, 10_000)).toBe(true);
  return cluster.waitForLeader();
}

class Sink extends CollectingSink {
  keys(): string[] {
    return this.messages.flatMap((m) => m.events.map((e) => `${e.type}:${e.key}`));
  }
}

const deadline = (): { deadlineMs: number } => ({ deadlineMs: Date.now() + 5_000 });

let cluster: InProcessCluster | undefined;
afterEach(async () => {
  for (const node of cluster?.nodes.values() ?? []) await node.close();
  cluster = undefined;
});

describe('watch service', () => {
  it('serves at the leader only, starts at the current revision, and ends with NOT_LEADER when leadership moves', async () => {
    cluster = new InProcessCluster({ snapshotEveryEntries: 10_000, logEntriesKeptAfterSnapshot: 1_000 });
    await cluster.start();
    const leader = await settledLeader(cluster);
    const follower = [1, 2, 3].find((id) => id !== leader)!;
    await cluster.put('svc/before', 'x');

    const refused = await cluster.node(follower).watch({ prefix: 'svc' }, deadline(), new Sink()).catch((e: unknown) => e);
    expect((refused as AtollError).code).toBe('NOT_LEADER');
    expect((refused as AtollError).details?.['leaderHint']).toMatchObject({ nodeId: leader });

    const sink = new Sink();
    const abort = new AbortController();
    const watching = cluster.node(leader).watch({ prefix: 'svc', progress: true }, { ...deadline(), signal: abort.signal }, sink).catch((e: unknown) => e);
    expect(await waitFor(() => sink.messages.length > 0, 10_000)).toBe(true);
    // The first message names the start: the revision of the linearizable read, after svc/before.
    const startRevision = sink.messages[0]!.revision;
    expect(sink.messages[0]!.progress).toBe(true);
    expect(startRevision).toBeGreaterThan(0);
    await cluster.put('svc/a', '1');
    await cluster.put('other/b', '2');
    expect(await waitFor(() => sink.keys().length > 0, 10_000)).toBe(true);
    expect(sink.keys()).toEqual(['put:svc/a']);
    expect(cluster.node(leader).openWatchers).toBe(1);

    const target = [1, 2, 3].find((id) => id !== leader)!;
    await cluster.node(leader).transferLeader({ partition: 0, targetNode: target }, { deadlineMs: Date.now() + 5_000 }).catch(() => undefined);
    const ended = await Promise.race([watching, new Promise((resolve) => setTimeout(() => resolve('still running'), 3_000))]);
    expect((ended as AtollError).code).toBe('NOT_LEADER');
    expect(cluster.node(leader).openWatchers).toBe(0);
  });

  it('bounds watchers per tenant, and a cancelled watch frees its slot', async () => {
    cluster = new InProcessCluster({ snapshotEveryEntries: 10_000, logEntriesKeptAfterSnapshot: 1_000, limits: { maxWatchersPerTenant: 2 } });
    await cluster.start();
    const leader = await settledLeader(cluster);
    const node = cluster.node(leader);
    const aborts = [new AbortController(), new AbortController()];
    const running = aborts.map((abort) => node.watch({ key: 'svc/a' }, { ...deadline(), signal: abort.signal }, new Sink()).catch((e: unknown) => e));
    expect(await waitFor(() => node.openWatchers === 2, 10_000)).toBe(true);
    const third = await node.watch({ key: 'svc/a' }, deadline(), new Sink()).catch((e: unknown) => e);
    expect((third as AtollError).code).toBe('RESOURCE_EXHAUSTED');
    aborts[0]!.abort();
    await running[0];
    expect(node.openWatchers).toBe(1);
    const abort = new AbortController();
    const fourth = node.watch({ key: 'svc/a' }, { ...deadline(), signal: abort.signal }, new Sink()).catch((e: unknown) => e);
    expect(await waitFor(() => node.openWatchers === 2, 10_000)).toBe(true);
    abort.abort();
    aborts[1]!.abort();
    expect(await Promise.all([fourth, running[0], running[1]])).toEqual([undefined, undefined, undefined]);
    expect(node.openWatchers).toBe(0);
  });

  it('refuses bad requests with a stable code and no slot taken', async () => {
    cluster = new InProcessCluster({ snapshotEveryEntries: 10_000, logEntriesKeptAfterSnapshot: 1_000 });
    await cluster.start();
    const node = cluster.node(await settledLeader(cluster));
    const codeOf = async (request: Parameters<typeof node.watch>[0]): Promise<string> =>
      ((await node.watch(request, deadline(), new Sink()).catch((e: unknown) => e)) as AtollError).code;
    expect(await codeOf({})).toBe('INVALID_ARGUMENT');
    expect(await codeOf({ key: 'a/b', prefix: 'a' })).toBe('INVALID_ARGUMENT');
    expect(await codeOf({ prefix: 'svc', startRevision: -1 })).toBe('INVALID_ARGUMENT');
    expect(await codeOf({ prefix: 'svc', startRevision: 1_000_000 })).toBe('FUTURE_REVISION');
    expect(await codeOf({ key: '' + '\u0000x' })).toMatch(/INVALID/);
    expect(node.openWatchers).toBe(0);
  });

  it('keeps tenants apart: a watcher sees only the keys of its own tenant, without the tenant tag', async () => {
    const adminToken = newToken();
    cluster = new InProcessCluster({ snapshotEveryEntries: 10_000, logEntriesKeptAfterSnapshot: 1_000, adminToken });
    await cluster.start();
    const node = cluster.node(await settledLeader(cluster));
    const admin = { ...deadline(), authorization: `Bearer ${adminToken}` };
    const acme = `Bearer ${(await node.createToken({ tenant: 'acme', role: 'readwrite', name: 'a' }, admin)).token}`;
    const beta = `Bearer ${(await node.createToken({ tenant: 'beta', role: 'readwrite', name: 'b' }, admin)).token}`;
    const sink = new Sink();
    const abort = new AbortController();
    const watching = node.watch({ prefix: 'svc', progress: true }, { ...deadline(), authorization: acme, signal: abort.signal }, sink).catch((e: unknown) => e);
    expect(await waitFor(() => sink.messages.length > 0, 10_000)).toBe(true);
    const put = (authorization: string, key: string): Promise<unknown> => node.put({ key, value: new TextEncoder().encode('v') }, { ...deadline(), authorization });
    await put(beta, 'svc/beta-only');
    await put(acme, 'svc/acme');
    expect(await waitFor(() => sink.keys().length > 0, 10_000)).toBe(true);
    await put(beta, 'svc/beta-again');
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(sink.keys()).toEqual(['put:svc/acme']);
    const anonymous = await node.watch({ prefix: 'svc' }, deadline(), new Sink()).catch((e: unknown) => e);
    expect((anonymous as AtollError).code).toBe('UNAUTHENTICATED');
    abort.abort();
    expect(await watching).toBeUndefined();
  });
});

/** A gRPC-like sink whose transport never writes (no `written` callback is ever called). */
class StalledSink extends Sink {
  readonly transport: FakeTransport;
  constructor(connection: string) {
    super();
    this.transport = new FakeTransport(connection);
  }
  override write(message: WatchMessage): boolean {
    this.messages.push(message);
    return true;
  }
}

describe('watch service memory', () => {
  const KiB = 1024;
  const limits = { watchReadBytes: 64 * KiB, watchReadChanges: 16, watchStreamBytes: 128 * KiB, watchConnectionBytes: 256 * KiB, watchTenantBytes: 256 * KiB, watchNodeBytes: 512 * KiB, watchStallMs: 300 };
  const heldOf = (node: { metricsView(): { memory?: ReadonlyArray<{ consumer: string; bytes: number }> } }): number => node.metricsView().memory?.find((m) => m.consumer === 'watch')?.bytes ?? -1;

  it('cuts off a stream that is never written, and frees its slot only when its bytes are gone; a full tenant refuses watches by bytes', async () => {
    cluster = new InProcessCluster({ snapshotEveryEntries: 10_000, logEntriesKeptAfterSnapshot: 1_000, limits });
    await cluster.start();
    const node = cluster.node(await settledLeader(cluster));
    for (let i = 0; i < 8; i++) await node.put({ key: `svc/k${i}`, value: new Uint8Array(20 * KiB) }, deadline());
    // As the gRPC layer does: the call's signal aborts when its stream closes.
    const open = (sink: StalledSink): { abort: AbortController; ended: Promise<unknown> } => {
      const abort = new AbortController();
      sink.transport.onClosed(() => abort.abort());
      return { abort, ended: node.watch({ prefix: 'svc', startRevision: 0 }, { ...deadline(), signal: abort.signal }, sink).catch((e: unknown) => e) };
    };
    const stalled = new StalledSink('conn-1');
    const first = open(stalled);
    expect(await waitFor(() => stalled.transport.cutOffs === 1, 10_000)).toBe(true);
    // Cut off (its queued bytes were not written for watchStallMs) but not yet closed: the bytes
    // are still held, and so is the slot.
    expect(stalled.messages.length).toBeGreaterThan(0);
    expect(heldOf(node)).toBeGreaterThan(0);
    expect(heldOf(node)).toBeLessThanOrEqual(limits.watchStreamBytes);
    expect(node.openWatchers).toBe(1);
    stalled.transport.close();
    expect(await first.ended).toBeUndefined();
    expect(node.openWatchers).toBe(0);
    expect(heldOf(node)).toBe(0);

    // Two stalled streams of one tenant, on connections of their own, fill its bound: a third
    // watch is refused with RESOURCE_EXHAUSTED, reason watch-memory, and holds nothing.
    const [a, b, c] = [new StalledSink('conn-2'), new StalledSink('conn-3'), new StalledSink('conn-4')];
    const running = [open(a), open(b)];
    expect(await waitFor(() => a.transport.cutOffs + b.transport.cutOffs === 2, 10_000)).toBe(true);
    const third = await open(c).ended;
    expect((third as AtollError).code).toBe('RESOURCE_EXHAUSTED');
    expect((third as AtollError).details).toMatchObject({ reason: 'watch-memory', scope: 'tenant' });
    expect(c.messages.filter((m) => m.events.length > 0)).toEqual([]);
    expect(heldOf(node)).toBeLessThanOrEqual(limits.watchTenantBytes);
    a.transport.close();
    b.transport.close();
    await Promise.all(running.map((r) => r.ended));
    expect(node.openWatchers).toBe(0);
    expect(heldOf(node)).toBe(0);
  });

  it('refuses a burst of watches from before the ring at admission, before their read barriers, past the room for their first reads', async () => {
    cluster = new InProcessCluster({ snapshotEveryEntries: 10_000, logEntriesKeptAfterSnapshot: 1_000, limits });
    await cluster.start();
    const node = cluster.node(await settledLeader(cluster));
    for (let i = 0; i < 8; i++) await node.put({ key: `svc/k${i}`, value: new Uint8Array(20 * KiB) }, deadline());
    const barriers = vi.spyOn(KvExecutor.prototype, 'readBarrier');
    try {
      // Ten at once from revision 0, each on a connection of its own: the tenant's bound
      // (256 KiB) has room for three reads' reservations (64 KiB and 16 changes' overhead each).
      const sinks = Array.from({ length: 10 }, (_, i) => new StalledSink(`burst-${i}`));
      const ended = sinks.map((sink) => {
        const abort = new AbortController();
        sink.transport.onClosed(() => abort.abort());
        return node.watch({ prefix: 'svc', startRevision: 0 }, { ...deadline(), signal: abort.signal }, sink).catch((e: unknown) => e);
      });
      expect(await waitFor(() => sinks.filter((sink) => sink.transport.cutOffs > 0).length === 3, 10_000)).toBe(true);
      for (const sink of sinks) sink.transport.close();
      const outcomes = await Promise.all(ended);
      const refused = outcomes.filter((outcome) => outcome instanceof AtollError);
      expect(refused.map((error) => [(error as AtollError).code, (error as AtollError).details?.['scope']])).toEqual(Array(7).fill(['RESOURCE_EXHAUSTED', 'tenant']));
      // Only the three admitted took a read barrier (every one of the ten did before the reservation moved to admission).
      expect(barriers).toHaveBeenCalledTimes(3);
      expect(node.openWatchers).toBe(0);
      expect(heldOf(node)).toBe(0);
    } finally {
      barriers.mockRestore();
    }
  });
});

describe('watch service history reads', () => {
  it('runs at most maxHistoryReadsPerNode reads of history at once; the others wait their turn and miss nothing', async () => {
    cluster = new InProcessCluster({ snapshotEveryEntries: 10_000, logEntriesKeptAfterSnapshot: 1_000, limits: { maxHistoryReadsPerNode: 1, watchReadChanges: 2 } });
    await cluster.start();
    const node = cluster.node(await settledLeader(cluster));
    for (let i = 0; i < 6; i++) await node.put({ key: `svc/k${i}`, value: new Uint8Array(10) }, deadline());
    let reading = 0;
    let most = 0;
    const read = MvccStore.prototype.changesSince;
    const spy = vi.spyOn(MvccStore.prototype, 'changesSince').mockImplementation(async function (this: MvccStore, ...args) {
      reading++;
      most = Math.max(most, reading);
      try {
        // A read that takes a while: without turns every watcher's would overlap.
        await new Promise((resolve) => setTimeout(resolve, 20));
        return await read.apply(this, args);
      } finally {
        reading--;
      }
    });
    try {
      const sinks = Array.from({ length: 5 }, () => new Sink());
      const abort = new AbortController();
      const ended = sinks.map((sink) => node.watch({ prefix: 'svc', startRevision: 0 }, { ...deadline(), signal: abort.signal }, sink).catch((e: unknown) => e));
      expect(await waitFor(() => sinks.every((sink) => sink.keys().length === 6), 10_000)).toBe(true);
      abort.abort();
      expect(await Promise.all(ended)).toEqual(Array(5).fill(undefined));
      for (const sink of sinks) expect(sink.keys()).toEqual([0, 1, 2, 3, 4, 5].map((i) => `put:svc/k${i}`));
      // Five watchers, three pages of history each (two changes a read): one read at a time.
      expect(spy.mock.calls.length).toBeGreaterThanOrEqual(15);
      expect(most).toBe(1);
    } finally {
      spy.mockRestore();
    }
  });
});

describe('watch service shutdown', () => {
  it('a closing node ends its watches and refuses new ones', async () => {
    const local = new InProcessCluster({ snapshotEveryEntries: 10_000, logEntriesKeptAfterSnapshot: 1_000 });
    await local.start();
    try {
      // A watch runs at the leader only: should leadership move before it is open (a loaded
      // machine), it ends NOT_LEADER and the test opens it at the new leader (bounded).
      let node = local.node(await settledLeader(local));
      let watching = node.watch({ prefix: 'svc' }, deadline(), new Sink()).catch((e: unknown) => e);
      for (let attempt = 0; attempt < 5 && !(await waitFor(() => node.openWatchers === 1, 10_000)); attempt++) {
        node = local.node(await settledLeader(local));
        watching = node.watch({ prefix: 'svc' }, deadline(), new Sink()).catch((e: unknown) => e);
      }
      expect(node.openWatchers).toBe(1);
      await node.close();
      expect(await watching).toBeUndefined();
      expect(node.openWatchers).toBe(0);
      expect(((await node.watch({ prefix: 'svc' }, deadline(), new Sink()).catch((e: unknown) => e)) as AtollError).code).toBe('UNAVAILABLE');
    } finally {
      for (const node of local.nodes.values()) await node.close();
    }
  });
});
