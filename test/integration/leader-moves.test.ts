/**
 * Leadership changes are invisible through any node: while a loop moves one partition's leadership
 * continuously (TransferLeader on the admin path), plain gRPC clients (only the .proto files, no
 * Atoll client library, so no client-side retries) write increments and puts through nodes that do
 * not lead that partition. Every request succeeds, and every acknowledged increment is counted
 * exactly once: the counter ends at the sum of the acknowledged deltas.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { partitionOf } from '../../src/keys/partition-table.js';
import { LocalCluster } from './local-cluster.js';
import { call, genericKvClient, type GenericKv } from './plain-grpc.js';

const PARTITIONS = 3;
/** At least this long; then until the volume below is reached, at most MAX_RUN_MS (a loaded machine is slow). */
const RUN_MS = 12_000;
const MAX_RUN_MS = 60_000;
const MAX_OPS_PER_WRITER = 5_000;
const WRITERS = 3;
const COUNTER = 'moves/counter';

describe('leader moves under plain gRPC writers', () => {
  let cluster: LocalCluster;

  beforeAll(async () => {
    cluster = await LocalCluster.start({ partitions: PARTITIONS });
  }, 60_000);

  afterAll(async () => {
    await cluster?.stop();
  });

  it('writes through non-leaders see no error and every acknowledged increment counts once', async () => {
    const partition = partitionOf(COUNTER, PARTITIONS);
    const pids = [1, 2, 3].map((id) => cluster.pidOf(id));
    const clients = new Map<number, GenericKv>([1, 2, 3].map((id) => [id, genericKvClient(cluster.addresses.get(id) as string)]));
    const admin = cluster.client();
    let leader = Number((await cluster.clusterInfoOf(1)).partitions[partition]?.leader);
    const startedAt = Date.now();
    let moves = 0;
    const acknowledged: bigint[] = [];
    let puts = 0;
    // Done when the run lasted RUN_MS and did enough to mean something (10 moves, 51 increments, 21
    // puts), or MAX_RUN_MS passed (then the volume assertions below fail and say so).
    const running = (): boolean => {
      const elapsed = Date.now() - startedAt;
      return elapsed < RUN_MS || (elapsed < MAX_RUN_MS && (moves < 10 || acknowledged.length <= 50 || puts <= 20));
    };

    const mover = async (): Promise<void> => {
      while (running()) {
        try {
          const current = Number((await cluster.clusterInfoOf(1 + (moves % 3))).partitions[partition]?.leader);
          if (current !== 0) leader = current;
          const target = 1 + (leader % 3);
          await admin.transferLeader(partition, target);
          moves++;
        } catch {
          // The admin call itself may meet the move in progress; the writers are what is tested.
        }
        await new Promise((r) => setTimeout(r, 150));
      }
    };

    const errors: string[] = [];
    const writer = async (w: number): Promise<void> => {
      for (let i = 0; i < MAX_OPS_PER_WRITER && running(); i++) {
        // A node other than the partition's leader as last seen (it may have moved since: also fine).
        const via = 1 + ((leader + (i % 2)) % 3);
        const client = clients.get(via) as GenericKv;
        const delta = BigInt(1 + ((w * 7 + i) % 5));
        try {
          if (i % 3 === 2) {
            await call(client, 'Put', { key: `moves/put-${w}`, value: Buffer.from(String(i)) });
            puts++;
          } else {
            await call(client, 'Increment', { key: COUNTER, delta: String(delta) });
            acknowledged.push(delta);
          }
        } catch (error) {
          const e = error as { code?: number; details?: string; metadata?: { get(key: string): unknown[] } };
          errors.push(`via node ${via}: status ${e.code} ${String(e.metadata?.get('atoll-code')[0])} ${e.details}`);
        }
      }
    };

    await Promise.all([mover(), ...Array.from({ length: WRITERS }, (_, w) => writer(w))]);
    try {
      expect(errors.length, `${errors.length} errors, first: ${errors.slice(0, 5).join('; ')}`).toBe(0);
      expect(moves).toBeGreaterThanOrEqual(10);
      expect(acknowledged.length).toBeGreaterThan(50);
      expect(puts).toBeGreaterThan(20);
      const sum = acknowledged.reduce((a, b) => a + b, 0n);
      const final = await call(clients.get(1) as GenericKv, 'Get', { key: COUNTER });
      expect(Buffer.from(final['value'] as Uint8Array).toString()).toBe(String(sum));
      expect([1, 2, 3].map((id) => cluster.pidOf(id))).toEqual(pids);
      expect([1, 2, 3].every((id) => cluster.isRunning(id))).toBe(true);
    } finally {
      admin.close();
      for (const client of clients.values()) client.close();
    }
  }, 100_000);
});
