/**
 * The repository's docker-compose.yml, brought up by testcontainers, under container faults: one
 * cluster, the faults in sequence. A client container on the cluster's network runs the workload
 * (workload.mjs, with the image's own build of the client) so the service names the nodes
 * advertise resolve, as they do for any application deployed beside the cluster.
 *
 * 1. Writes through every node's published port (the host cannot resolve the service names, so
 *    each node forwards to the leaders), and `atoll cluster status` shows every leader.
 * 2. `docker kill` of a partition's leader while writing to every partition: every write is
 *    acknowledged, the survivors lead every partition and hold every acknowledged write; after
 *    `docker start` writes go on and the node catches up with the leaders' commit indexes.
 * 3. `docker network disconnect` of a leader while writing, then `docker network connect`.
 * 4. `docker pause` of a leader while writing, then `docker unpause`.
 *    A node that vanishes without closing its connections (a paused process, whose kernel still
 *    acknowledges TCP; a cut link) is noticed by the keepalive of the channels to it (nodes' peer
 *    links and the client's, src/wire/channel-options.ts): the survivors elect new leaders for
 *    its partitions, quiet ones included, and the writes go on during the fault, as for a kill.
 * 5. Every node ends healthy (`atoll health --leaders`).
 *
 * Needs Docker, the Compose v2 plugin and the image: scripts/docker-setup.sh.
 */
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { DockerComposeEnvironment, GenericContainer, Wait, type StartedDockerComposeEnvironment, type StartedTestContainer } from 'testcontainers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AtollClient, partitionOfBucket, type ClusterInfoResponse } from '../../src/index.js';
import { atollImage, docker, freePort, requireDocker } from './docker-env.js';

// No registry may be reachable, so testcontainers' reaper image cannot be pulled; afterAll cleans up.
process.env['TESTCONTAINERS_RYUK_DISABLED'] = 'true';

const repositoryRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const nodeIds = [1, 2, 3] as const;
const partitionCount = 12;

/** One bucket per partition (`buckets[p]` lives in partition p), so a phase writes to all of them. */
function bucketPerPartition(count: number): string[] {
  const byPartition = new Map<number, string>();
  // Bounded: with 12 partitions a few dozen names cover them all.
  for (let n = 0; byPartition.size < count && n < 10_000; n++) {
    const bucket = `b${n}`;
    const partition = partitionOfBucket(bucket, count);
    if (!byPartition.has(partition)) byPartition.set(partition, bucket);
  }
  return Array.from({ length: count }, (_, partition) => byPartition.get(partition) as string);
}
const buckets = bucketPerPartition(partitionCount);
const projectName = `atolltest${process.pid}`;
const networkName = `${projectName}_default`;
const workloadPath = '/tmp/workload.mjs';
const endpoints = nodeIds.map((id) => `node${id}:7001`);

const limits = Object.freeze({
  /** Pulls nothing, but starts three nodes and waits for every partition to have a leader. */
  startupMs: 150_000,
  /** One fault phase: its writes, the checks and the catch-up (the bounds below, and some). */
  phaseMs: 180_000,
  /** Every key of a phase must be acknowledged within this long. */
  writeDeadlineMs: 40_000,
  /** A restarted or reconnected node must reach the leaders' commit indexes within this long. */
  catchUpMs: 40_000,
  /** The survivors must elect leaders for the victim's partitions within this long. */
  failoverMs: 20_000,
  /** Writes per fault phase, spread over every partition (and a third as many after the heal). */
  writesPerPhase: 120,
  /** One write starts every this long: 120 writes take about 10 s, most of them after the fault. */
  writePaceMs: 80,
  /** How long the fault waits after the writer's first write, so writes are in flight when it strikes. */
  faultDelayMs: 1_500,
});

const log = (line: string): void => console.log(`docker: ${line}`);

interface Ack {
  readonly key: string;
  readonly startMs: number;
  readonly ackMs: number;
  readonly attempts: number;
}
interface WriteReport {
  /** The writer's wall clock when it started (the container shares the host's clock). */
  readonly startedAtMs: number;
  readonly acked: readonly Ack[];
  readonly unacked: readonly string[];
  readonly errors: Readonly<Record<string, number>>;
}

const availability = await requireDocker('container tests');

describe.skipIf(!availability.available)('a three-node cluster from docker-compose.yml under container faults', () => {
  let cluster: StartedDockerComposeEnvironment | undefined;
  let client: StartedTestContainer | undefined;
  /** Every key any phase saw acknowledged; all must read back at the end. */
  const acknowledged = new Set<string>();

  const containerOf = (id: number): StartedTestContainer => (cluster as StartedDockerComposeEnvironment).getContainer(`node${id}-1`);

  async function workload<T>(command: string, argument: object): Promise<T> {
    const result = await (client as StartedTestContainer).exec(['node', workloadPath, command, JSON.stringify(argument)]);
    const lastLine = result.stdout.trim().split('\n').at(-1) ?? '';
    if (result.exitCode !== 0) throw new Error(`workload ${command} exited ${result.exitCode}: ${lastLine} ${result.stderr.slice(-2_000)}`);
    return JSON.parse(lastLine) as T;
  }

  /** Writes `count` keys spread over every partition; records the acknowledged ones. */
  async function writeKeys(phase: string, count: number, deadlineMs: number = limits.writeDeadlineMs): Promise<WriteReport> {
    const keys = Array.from({ length: count }, (_, index) => `${buckets[index % buckets.length]}/${phase}-${index}`);
    const started = Date.now();
    const report = await workload<WriteReport>('write', { endpoints, keys, paceMs: limits.writePaceMs, concurrency: 8, deadlineMs });
    for (const ack of report.acked) acknowledged.add(ack.key);
    const slowest = Math.max(0, ...report.acked.map((ack) => ack.ackMs - ack.startMs));
    log(`${phase}: ${report.acked.length}/${count} writes acknowledged in ${Date.now() - started} ms, slowest ${slowest} ms, errors ${JSON.stringify(report.errors)}`);
    return report;
  }

  async function infoFrom(id: number): Promise<ClusterInfoResponse> {
    return workload<ClusterInfoResponse>('info', { address: `node${id}:7001` });
  }

  /** The node leading a partition, asked of node `askId`. */
  async function leaderOf(partition: number, askId: number): Promise<number> {
    const leader = (await infoFrom(askId)).partitions.find((entry) => entry.id === partition)?.leader ?? 0;
    expect(leader, `partition ${partition} has a leader`).not.toBe(0);
    return leader;
  }

  /** Partitions that a survivor still sees led by `victim`. */
  async function partitionsLedBy(victim: number): Promise<number[]> {
    const survivor = nodeIds.find((id) => id !== victim) as number;
    return (await infoFrom(survivor)).partitions.filter((partition) => partition.leader === victim).map((partition) => partition.id);
  }

  /** Waits until a survivor sees a leader, other than the victim, for every partition. */
  async function awaitFailover(victim: number): Promise<number> {
    const survivor = nodeIds.find((id) => id !== victim) as number;
    const answer = await workload<{ elapsedMs: number }>('await-failover', { address: `node${survivor}:7001`, victim, timeoutMs: limits.failoverMs });
    return answer.elapsedMs;
  }

  /** Waits until node `id` has applied what the other nodes report committed now. */
  async function awaitCatchUp(id: number): Promise<number> {
    const others = nodeIds.filter((other) => other !== id).map((other) => `node${other}:7001`);
    const answer = await workload<{ elapsedMs: number }>('await-catch-up', { address: `node${id}:7001`, others, timeoutMs: limits.catchUpMs });
    return answer.elapsedMs;
  }

  /** Reads every bucket back; each acknowledged key must be there with its own name as value. */
  async function expectAcknowledgedKeysPresent(): Promise<void> {
    const { keys } = await workload<{ keys: Record<string, string> }>('read', { endpoints, buckets });
    const missing = [...acknowledged].filter((key) => keys[key] !== key);
    expect(missing, 'acknowledged writes missing or wrong').toEqual([]);
    log(`all ${acknowledged.size} acknowledged writes read back (${Object.keys(keys).length} keys stored)`);
  }

  /** Waits (bounded) until `key` reads back through the published port of a node other than `victim`. */
  async function awaitFirstWrite(key: string, victim: number): Promise<void> {
    const id = nodeIds.find((other) => other !== victim) as number;
    const hostClient = new AtollClient({ endpoints: [`127.0.0.1:${containerOf(id).getMappedPort(7001)}`], defaultTimeoutMs: 2_000 });
    try {
      for (const until = Date.now() + limits.writeDeadlineMs; Date.now() < until; await sleep(100)) {
        if ((await hostClient.get(key).catch(() => undefined))?.found === true) return;
      }
      throw new Error(`the writer's first key ${key} never appeared`);
    } finally {
      hostClient.close();
    }
  }

  interface Fault {
    readonly phase: string;
    /** The victim is this partition's leader. */
    readonly partition: number;
    strike(victim: number): Promise<unknown>;
    heal(victim: number): Promise<unknown>;
  }

  /**
   * The shared shape of every fault: strike the leader of a partition while writing to every
   * partition, check what the fault must not break, heal, then check that writes to every
   * partition succeed, the victim catches up and nothing acknowledged was lost.
   */
  async function faultPhase(fault: Fault): Promise<void> {
    const { phase } = fault;
    const victim = await leaderOf(fault.partition, 1);
    log(`${phase}: node ${victim} leads partition ${fault.partition}`);
    try {
      const writes = writeKeys(phase, limits.writesPerPhase);
      // Strike once the writer is under way (starting it in its container can take seconds on a
      // loaded machine, longer than any fixed delay): its first key is readable, then a pause.
      await awaitFirstWrite(`${buckets[0]}/${phase}-0`, victim);
      await sleep(limits.faultDelayMs);
      const strikingAt = Date.now();
      await fault.strike(victim);
      const struckAt = Date.now();
      const report = await writes;
      expect(report.unacked).toEqual([]);
      // The fault struck while writes went on: some were acknowledged before it, and writes begun
      // after it, the victim's own partition among them, were acknowledged too.
      expect(report.acked.filter((ack) => report.startedAtMs + ack.ackMs < strikingAt).length, 'writes acknowledged before the fault').toBeGreaterThanOrEqual(1);
      const afterStrike = report.acked.filter((ack) => report.startedAtMs + ack.startMs >= struckAt);
      const victimBucket = buckets[fault.partition] as string;
      log(`${phase}: ${afterStrike.length} writes begun after the fault were acknowledged, ${afterStrike.filter((ack) => ack.key.startsWith(`${victimBucket}/`)).length} of them to partition ${fault.partition}`);
      expect(afterStrike.length, 'writes begun after the fault struck and acknowledged').toBeGreaterThanOrEqual(limits.writesPerPhase / 4);
      expect(afterStrike.filter((ack) => ack.key.startsWith(`${victimBucket}/`)).length, `writes to partition ${fault.partition} begun after the fault and acknowledged`).toBeGreaterThanOrEqual(1);
      log(`${phase}: the survivors lead every partition ${await awaitFailover(victim)} ms after the writes ended`);
      await expectAcknowledgedKeysPresent();
    } finally {
      // Heal even when a check failed, so the next phase starts from a whole cluster.
      await fault.heal(victim);
    }
    expect((await writeKeys(`${phase}-healed`, limits.writesPerPhase / 3)).unacked).toEqual([]);
    log(`${phase}: node ${victim} caught up in ${await awaitCatchUp(victim)} ms`);
    await expectAcknowledgedKeysPresent();
  }

  beforeAll(async () => {
    const started = Date.now();
    const ports = await Promise.all(nodeIds.map(() => freePort()));
    cluster = await new DockerComposeEnvironment(repositoryRoot, 'docker-compose.yml')
      .withProjectName(projectName)
      .withEnvironment({
        ATOLL_IMAGE: atollImage,
        ATOLL_PARTITIONS: String(partitionCount),
        ATOLL_LOG_LEVEL: 'warn',
        // Every check is a node process; on two cores beside the rest of the suite, 15 s will do.
        ATOLL_HEALTHCHECK_INTERVAL: '15s',
        ...Object.fromEntries(nodeIds.map((id, index) => [`ATOLL_NODE${id}_PORT`, String(ports[index])])),
        // The etcd ports are published too: free ones, so two compose projects never collide.
        ...Object.fromEntries(await Promise.all(nodeIds.map(async (id) => [`ATOLL_NODE${id}_ETCD_PORT`, String(await freePort())]))),
      })
      .withDefaultWaitStrategy(Wait.forHealthCheck())
      .withStartupTimeout(limits.startupMs)
      .up();
    log(`compose up: three healthy nodes in ${Date.now() - started} ms`);
    client = await new GenericContainer(atollImage)
      .withNetworkMode(networkName)
      .withEntrypoint(['node'])
      .withCommand(['-e', "process.on('SIGTERM', () => process.exit(0)); setInterval(() => {}, 1 << 30);"])
      // The image's health check asks a node on 127.0.0.1; this container runs none, so never ask.
      .withHealthCheck({ test: ['CMD-SHELL', 'exit 0'], interval: 3_600_000 })
      .withCopyFilesToContainer([{ source: path.join(repositoryRoot, 'test', 'docker', 'workload.mjs'), target: workloadPath }])
      .start();
  }, limits.startupMs + 30_000);

  afterAll(async () => {
    // Without the reaper nothing else removes them: the client, then the project with its volumes.
    await client?.stop({ timeout: 0 }).catch((error: unknown) => log(`stopping the client container: ${String(error)}`));
    const started = Date.now();
    await cluster?.down({ timeout: 0, removeVolumes: true }).catch((error: unknown) => log(`compose down: ${String(error)}`));
    log(`compose down in ${Date.now() - started} ms`);
  }, 60_000);

  it('serves writes through every node and shows a leader for every partition', async () => {
    const status = await containerOf(1).exec(['atoll', 'cluster', 'status']);
    expect(status.exitCode).toBe(0);
    expect(status.stdout).toContain(`${partitionCount} partitions`);
    expect(status.stdout).not.toContain('(none)');
    for (const id of nodeIds) {
      // Only this node's published port: the host cannot resolve the names the nodes advertise,
      // so the client falls back to its endpoint, and this node forwards to each leader.
      const hostClient = new AtollClient({ endpoints: [`127.0.0.1:${containerOf(id).getMappedPort(7001)}`], defaultTimeoutMs: 10_000 });
      try {
        for (const bucket of buckets.slice(0, 4)) {
          const key = `${bucket}/through-node${id}`;
          await hostClient.put(key, key);
          acknowledged.add(key);
          expect((await hostClient.get(key)).text()).toBe(key);
        }
      } finally {
        hostClient.close();
      }
    }
    log(`wrote and read through every node's published port`);
  }, limits.phaseMs);

  const idOf = (id: number): string => containerOf(id).getId();

  it('kill -9 of a leader: writes resume on the survivors, nothing acknowledged is lost; restarted, it catches up', async () => {
    await faultPhase({ phase: 'kill', partition: 0, strike: (victim) => docker('kill', idOf(victim)), heal: (victim) => docker('start', idOf(victim)) });
  }, limits.phaseMs);

  it('a leader disconnected from the network: nothing acknowledged is lost; reconnected, writes go on and it catches up', async () => {
    await faultPhase({
      phase: 'disconnect',
      partition: 1,
      strike: (victim) => docker('network', 'disconnect', networkName, idOf(victim)),
      // The service name is an alias on the network: reconnecting must bring it back.
      heal: (victim) => docker('network', 'connect', '--alias', `node${victim}`, networkName, idOf(victim)),
    });
  }, limits.phaseMs);

  it('a paused leader: nothing acknowledged is lost; unpaused, writes go on and it catches up', async () => {
    await faultPhase({
      phase: 'pause',
      partition: 2,
      strike: (victim) => docker('pause', idOf(victim)),
      heal: (victim) => docker('unpause', idOf(victim)),
    });
  }, limits.phaseMs);

  it('ends with every node healthy, knowing every partition\'s leader', async () => {
    // Right after the last heal a node may still be learning a leader: give the cluster 20 s to settle.
    for (const id of nodeIds) {
      let answer = '';
      for (const until = Date.now() + 20_000; Date.now() < until; await new Promise((r) => setTimeout(r, 500))) {
        answer = (await containerOf(id).exec(['atoll', 'health', '--leaders', '127.0.0.1:7001'])).stdout.trim();
        if (answer === '127.0.0.1:7001 SERVING') break;
      }
      expect(answer, `node ${id}`).toBe('127.0.0.1:7001 SERVING');
    }
  }, limits.phaseMs);
});
