/** Helpers of the membership integration tests (membership-grow, membership-replace): a node started with --join, a write load, placement checks. */
import { spawn } from 'node:child_process';
import { join, resolve } from 'node:path';
import { expect } from 'vitest';
import { AtollClient } from '../../src/client/index.js';
import { freePort } from '../../src/chaos/local-cluster.js';
import type { ClusterInfoMessage, LocalCluster } from './local-cluster.js';

export const PARTITIONS = 3;
export const RF = 3;
const serverMain = resolve(import.meta.dirname, '../../dist/src/server/main.js');


/** Starts node `id` empty with --join, registered with the cluster so that stop() kills it. */
export async function startJoiner(cluster: LocalCluster, id: number, logs: Map<number, string[]>): Promise<{ address: string; peerAddress: string; adminAddress: string }> {
  const address = cluster.addresses.get(id) ?? `127.0.0.1:${await freePort()}`;
  const adminAddress = `127.0.0.1:${await freePort()}`;
  const peerAddress = cluster.peerAddresses.get(id) ?? `127.0.0.1:${await freePort()}`;
  cluster.addresses.set(id, address);
  cluster.peerAddresses.set(id, peerAddress);
  const join = [1, 2, 3].map((peer) => cluster.peerAddresses.get(peer)).join(',');
  const argv = [
    serverMain,
    ...['--id', String(id), '--listen', address, '--peer-listen', peerAddress, '--admin-listen', adminAddress, '--join', join],
    ...['--peer-secret-file', cluster.peerSecretFile, '--data-dir', join_(cluster.dataRoot, `node${id}`), '--tick-ms', '50', '--snapshot-every', '100'],
  ];
  const child = spawn(process.execPath, argv, { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ATOLL_LOG_LEVEL: 'info', ATOLL_LOG_FORMAT: 'json' } });
  const log: string[] = [];
  logs.set(id, log);
  const keep = (chunk: Buffer): void => {
    log.push(chunk.toString());
    if (log.length > 400) log.shift();
  };
  child.stdout.on('data', keep);
  child.stderr.on('data', keep);
  cluster.processes.set(id, child);
  return { address, peerAddress, adminAddress };
}
const join_ = join;

export async function until(condition: () => Promise<boolean>, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await condition().catch(() => false)) return true;
    await new Promise((r) => setTimeout(r, 200));
  }
  return false;
}

export function statesOf(info: ClusterInfoMessage): string {
  return info.nodes.map((node) => `${node.id}:${(node as { state?: string }).state}`).join(',');
}

/** Every partition has exactly RF voters, on distinct nodes, all among `members`. */
export function checkPlacement(info: ClusterInfoMessage, members: number[]): void {
  for (const partition of info.partitions) {
    const replicas = partition.replicas.map(Number);
    expect(new Set(replicas).size, `partition ${partition.id}`).toBe(replicas.length);
    expect(replicas.length, `partition ${partition.id}: ${replicas.join(',')}`).toBe(RF);
    for (const node of replicas) expect(members).toContain(node);
  }
}

/** A bounded write load through every node's endpoint: keys it acknowledged, with their values. */
export class WriteLoad {
  readonly acked = new Map<string, string>();
  private stopped = false;
  private readonly lanes: Promise<void>[] = [];
  private readonly clients: AtollClient[] = [];

  start(endpoints: string[]): void {
    endpoints.forEach((endpoint, lane) => {
      const client = new AtollClient({ endpoints: [endpoint], defaultTimeoutMs: 5_000 });
      this.clients.push(client);
      this.lanes.push(
        (async () => {
          for (let i = 0; i < 100_000 && !this.stopped; i++) {
            const key = `load${lane}/k${i}`;
            try {
              await client.put(key, `v${i}`);
              this.acked.set(key, `v${i}`);
            } catch {
              // Not acknowledged (a node was killed, a move in progress): not checked.
            }
            await new Promise((r) => setTimeout(r, 20));
          }
        })(),
      );
    });
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await Promise.all(this.lanes);
    for (const client of this.clients) client.close();
  }
}

export async function expectAllReadable(client: AtollClient, acked: ReadonlyMap<string, string>): Promise<void> {
  for (const [key, value] of acked) {
    const got = await client.get(key);
    expect(got.found, key).toBe(true);
    expect(new TextDecoder().decode(got.value), key).toBe(value);
  }
}

