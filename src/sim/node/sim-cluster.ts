/**
 * The simulated cluster: 3 or 5 real AtollNodes (AtollNode.open, as production opens them) on
 * simulated disks, network, clocks and timers. It starts nodes, crashes them (at any moment, or
 * at a crash point inside the storage engine), restarts them on the same disk, pauses them, and
 * records every crash, restart and fatal stop for the restart checker. Membership changes add
 * nodes (empty, as --join starts them) and retire removed or lost ones (membership-driver.ts).
 */
import type { BucketHashName } from '../../keys/bucket-hash.js';
import { AtollNode, type AtollNodeConfig, type NodeTestBugs } from '../../node/atoll-node.js';
import type { JoinedCluster } from '../../node/node-config.js';
import { Rng } from '../../raft/rng.js';
import { WriteBehindEngine } from '../../storage/write-behind-engine.js';
import type { Scheduler } from './scheduler.js';
import { IncarnationEngine, SimDisk, type CrashPointKind, type CrashTiming } from './sim-disk.js';
import { NodeHost, type ClockModel } from './sim-host.js';
import type { SimNetwork } from './sim-network.js';
import { traceLogger, type Trace } from './trace.js';
import { simWatchLimits } from './watch-limits.js';

export interface ClusterSettings {
  readonly nodeIds: readonly number[];
  /** Each node's --zone label (default none). */
  readonly zones?: ReadonlyMap<number, string>;
  readonly partitions: number;
  readonly tickMs: number;
  readonly electionTicks: number;
  readonly snapshotEveryEntries: number;
  readonly logEntriesKeptAfterSnapshot: number;
  readonly retentionRevisions: number;
  readonly cacheBytes: number;
  readonly clocks: ReadonlyMap<number, ClockModel>;
  readonly testBugs: NodeTestBugs;
  /** --read-mode of every node (default: the node's default, lease). */
  readonly readMode?: 'safe' | 'lease';
  /** Which nodes send node-level batches (AtollNodeConfig.coalesceRaftMessages; default every node). */
  readonly coalesceRaftMessages?: (node: number) => boolean;
}

/** One thing that went wrong with a node's process, for the restart checker. */
export interface NodeFailure {
  readonly node: number;
  readonly incarnation: number;
  readonly kind: 'open-failed' | 'fatal-stop';
  readonly atMs: number;
  readonly message: string;
}

/** A crash the fault schedule armed: it strikes at the `countdown`-th matching engine call. */
interface ArmedCrash {
  readonly kinds: ReadonlySet<CrashPointKind>;
  countdown: number;
  readonly timing: CrashTiming;
  readonly why: string;
}

interface NodeSlot {
  readonly id: number;
  readonly disk: SimDisk;
  host: NodeHost | undefined;
  api: AtollNode | undefined;
  incarnation: number;
  opening: boolean;
  /** Gave up: its open failed (a restart that cannot succeed). */
  broken: boolean;
  armed: ArmedCrash | undefined;
  /** Fatal stops since the node last stayed up through a restart; at MAX_FATAL_STREAK it is given up. */
  fatalStreak: number;
  crashes: number;
  restarts: number;
  /** Set for a node added at run time (--join): what it learned of the cluster (its first open records it). */
  readonly joined: JoinedCluster | undefined;
  /** Removed from the cluster (or its disk lost for good): never started again, no longer one of nodeIds. */
  retired: boolean;
}

/** A node that stops on a fatal error this many times in a row is not restarted again (bounded work). */
const MAX_FATAL_STREAK = 3;

export const PEER_SECRET = 'atoll-sim-peer-secret-0123456789';
/**
 * The bucket hash of the simulated clusters: the one their seeds were chosen under (the negative
 * controls and the install-crash seeds need a workload whose keys land where they did then).
 */
export const SIM_BUCKET_HASH: BucketHashName = 'fnv1a32';

export class SimCluster {
  private readonly slots = new Map<number, NodeSlot>();
  /** The nodes that are members now: the founding ones, plus added ones, minus retired ones (ascending). */
  private members: number[];
  readonly failures: NodeFailure[] = [];
  /** Restart delay after a crash, ms of virtual time; undefined: crashed nodes stay down until restartAll. */
  restartDelay: (() => number) | undefined;
  /** Told of every info-or-worse log line (the fault schedule reacts to snapshot installs). */
  onLog: (node: number, level: string, message: string) => void = () => undefined;

  constructor(
    private readonly scheduler: Scheduler,
    private readonly network: SimNetwork,
    private readonly trace: Trace,
    private readonly rng: Rng,
    readonly settings: ClusterSettings,
  ) {
    for (const id of settings.nodeIds) this.slots.set(id, newSlot(id, undefined));
    this.members = [...settings.nodeIds];
  }

  /** The current members' ids (the founding ones unless membership changed). */
  get nodeIds(): readonly number[] {
    return this.members;
  }

  /** Every node that ever ran, retired ones too. */
  get everyNodeId(): readonly number[] {
    return [...this.slots.keys()];
  }

  isRetired(node: number): boolean {
    return this.slots.get(node)?.retired === true;
  }

  /**
   * A new node on an empty disk, started with what --join would have learned (`joined`). The caller
   * first added it to the member table (Cluster.ChangeMember add), as `atoll cluster add-node` does.
   */
  addNode(node: number, joined: JoinedCluster): void {
    if (this.slots.has(node)) throw new Error(`node ${node} exists already`);
    this.slots.set(node, newSlot(node, joined));
    this.members = [...this.members, node].sort((a, b) => a - b);
    this.trace.add(`n${node} JOINS empty (members ${this.members.join(',')})`);
    this.start(node);
  }

  /** `node` was removed from the member table: clients stop using it; it runs on until retired. */
  leaveMembers(node: number): void {
    this.members = this.members.filter((id) => id !== node);
  }

  /**
   * Stops `node` for good: it was removed from the cluster, or its disk is lost (a replace: the
   * disk is never read again, which is what a wiped one is to the cluster). It leaves nodeIds and
   * is never restarted.
   */
  retire(node: number, why: string): void {
    const slot = this.slot(node);
    slot.retired = true;
    this.members = this.members.filter((id) => id !== node);
    this.crash(node, why);
    this.trace.add(`n${node} RETIRED (${why}); members ${this.members.join(',')}`);
  }

  /** The node's open incarnation, or undefined while it is down or opening. */
  apiOf(node: number): AtollNode | undefined {
    const slot = this.slots.get(node);
    return slot?.host?.alive === true ? slot.api : undefined;
  }

  hostOf(node: number): NodeHost | undefined {
    const slot = this.slots.get(node);
    return slot?.host?.alive === true ? slot.host : undefined;
  }

  isUp(node: number): boolean {
    return this.apiOf(node) !== undefined;
  }

  isBroken(node: number): boolean {
    return this.slots.get(node)?.broken === true;
  }

  crashCount(node: number): number {
    return this.slots.get(node)?.crashes ?? 0;
  }

  /** Starts a new incarnation of `node` on its disk. */
  start(node: number): void {
    const slot = this.slot(node);
    if (slot.host?.alive === true || slot.opening || slot.broken || slot.retired) return;
    slot.incarnation++;
    if (slot.incarnation > 1) slot.restarts++;
    const host = new NodeHost(this.scheduler, node, slot.incarnation, this.settings.clocks.get(node) ?? { skewMs: 0, drift: 0 });
    slot.host = host;
    slot.api = undefined;
    slot.opening = true;
    const incarnation = slot.incarnation;
    const engine = new WriteBehindEngine(
      new IncarnationEngine(slot.disk, host, (kind) => this.crashPoint(slot, host, kind), (where) => this.crash(node, `crash point: ${where}`)),
      { timers: host.timers },
    );
    const config: AtollNodeConfig = {
      id: node,
      peers: new Map((slot.joined === undefined ? this.settings.nodeIds : slot.joined.members.map((member) => member.id)).map((id) => [id, simAddress(id)])),
      dataDir: `/sim/n${node}`,
      partitions: this.settings.partitions,
      replicationFactor: 3,
      tickMs: this.settings.tickMs,
      electionTicks: this.settings.electionTicks,
      retentionRevisions: this.settings.retentionRevisions,
      snapshotEveryEntries: this.settings.snapshotEveryEntries,
      logEntriesKeptAfterSnapshot: this.settings.logEntriesKeptAfterSnapshot,
      cacheBytes: this.settings.cacheBytes,
      // The seeds with the small version cache also keep a tiny Raft log window (no rng draw, so no
      // seed's schedule moves): followers that lag read their entries back from the engine.
      ...(this.settings.cacheBytes <= 16 * 1024 && { raftLogMemoryBytes: 2 * 1024 }),
      peerSecrets: [PEER_SECRET],
      bucketHash: SIM_BUCKET_HASH,
      ...(this.settings.zones?.get(node) !== undefined && { zone: this.settings.zones.get(node) as string }),
      testBugs: this.settings.testBugs,
      // Watch limits only (watch-workload.ts): small, so rings overflow and stalls end watches within a seed.
      limits: simWatchLimits,
      ...(slot.joined !== undefined && { joined: slot.joined }),
      ...(this.settings.readMode !== undefined && { readMode: this.settings.readMode }),
      coalesceRaftMessages: this.settings.coalesceRaftMessages?.(node) ?? true,
      logger: traceLogger(node, this.trace, (level, message) => {
        if (host.alive) this.onLog(node, level, message);
      }),
    };
    this.trace.add(`n${node} start incarnation ${incarnation}`);
    AtollNode.open(config, {
      transport: (events) => this.network.attach(host, events),
      clock: host.clock,
      timers: host.timers,
      random: new Rng(this.rng.nextUint32()),
      engine,
      onFatal: (error) => {
        if (!host.alive) return;
        this.failures.push({ node, incarnation, kind: 'fatal-stop', atMs: this.scheduler.now, message: error.stack ?? error.message });
        this.trace.add(`n${node} FATAL ${error.message}`);
        slot.fatalStreak++;
        if (slot.fatalStreak >= MAX_FATAL_STREAK) {
          slot.broken = true;
          this.trace.add(`n${node} stopped ${slot.fatalStreak} times in a row: not restarted again`);
        }
        this.crash(node, 'stopped on a fatal error');
      },
    }).then(
      (api) => {
        if (!host.alive) {
          void api.close().catch(() => undefined);
          return;
        }
        slot.opening = false;
        slot.api = api;
        // Up for a while without a fatal stop ends the streak.
        this.scheduler.after(5_000, () => {
          if (host.alive) slot.fatalStreak = 0;
        });
        this.network.serve(node, api);
        this.trace.add(`n${node} open (incarnation ${incarnation})`);
      },
      (error: unknown) => {
        if (!host.alive) return;
        slot.opening = false;
        const message = error instanceof Error ? (error.stack ?? error.message) : String(error);
        this.failures.push({ node, incarnation, kind: 'open-failed', atMs: this.scheduler.now, message });
        this.trace.add(`n${node} OPEN FAILED ${message.split('\n')[0]}`);
        host.alive = false;
        slot.broken = true;
        this.network.processDied(node);
      },
    );
  }

  /**
   * Kills the node's process now: it never runs again, its unsynced writes are lost (the oldest
   * few may survive, as a prefix), its calls in flight break. A restart follows if enabled.
   */
  crash(node: number, why: string): void {
    const slot = this.slot(node);
    const host = slot.host;
    if (host === undefined || !host.alive) return;
    host.alive = false;
    slot.api = undefined;
    slot.opening = false;
    slot.armed = undefined;
    slot.crashes++;
    const keep = this.rng.chance(0.3) ? this.rng.int(3) : 0;
    const lost = slot.disk.engine.crash({ keepUnsyncedBatches: keep });
    this.trace.add(`n${node} CRASH (${why}); ${lost} unsynced batches lost`);
    this.network.processDied(node);
    const delay = this.restartDelay?.();
    if (delay !== undefined && !slot.broken && !slot.retired) this.scheduler.after(delay, () => this.start(node));
  }

  /** Arms a crash at the `countdown`-th engine call of one of `kinds` on the node's current incarnation. */
  armCrash(node: number, kinds: readonly CrashPointKind[], countdown: number, timing: CrashTiming, why: string): void {
    const slot = this.slot(node);
    if (slot.host?.alive !== true) return;
    slot.armed = { kinds: new Set(kinds), countdown, timing, why };
    this.trace.add(`n${node} crash armed: ${why} (${timing} the ${countdown}th ${kinds.join('/')})`);
  }

  /** Faults stop: no armed crash point strikes any more. */
  disarmAll(): void {
    for (const slot of this.slots.values()) slot.armed = undefined;
  }

  isArmed(node: number): boolean {
    return this.slot(node).armed !== undefined;
  }

  pause(node: number, forMs: number): void {
    if (!this.isUp(node)) return;
    this.trace.add(`n${node} PAUSE ${forMs.toFixed(0)} ms`);
    this.scheduler.pause(node, this.scheduler.now + forMs);
  }

  /** Starts every node that is down (and not broken). */
  restartAll(): void {
    for (const id of this.members) {
      const slot = this.slot(id);
      if (!slot.broken && slot.host?.alive !== true && !slot.opening) this.start(id);
    }
  }

  private crashPoint(slot: NodeSlot, host: NodeHost, kind: CrashPointKind): CrashTiming | undefined {
    const armed = slot.armed;
    if (armed === undefined || slot.host !== host || !armed.kinds.has(kind)) return undefined;
    armed.countdown--;
    if (armed.countdown > 0) return undefined;
    slot.armed = undefined;
    this.trace.add(`n${slot.id} crash point reached: ${armed.why}`);
    return armed.timing;
  }

  private slot(node: number): NodeSlot {
    const slot = this.slots.get(node);
    if (slot === undefined) throw new Error(`no node ${node}`);
    return slot;
  }
}

/** A simulated node's client address (the sim network routes by node id; the member table records this). */
export function simAddress(node: number): string {
  return `n${node}:7000`;
}

function newSlot(id: number, joined: JoinedCluster | undefined): NodeSlot {
  return { id, disk: new SimDisk(), host: undefined, api: undefined, incarnation: 0, opening: false, broken: false, armed: undefined, fatalStreak: 0, crashes: 0, restarts: 0, joined, retired: false };
}
