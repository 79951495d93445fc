/**
 * The multi-Raft driver: owns the node's Raft groups and the one loop that drives them all (tasks,
 * ticks, Ready handling with ONE storage write per iteration, message sends, apply, advance,
 * snapshot builds), and steps what peers send. It knows nothing of keys, values or requests: a
 * group is anything with the DrivenGroup shape, and clock, timers, transport and storage come in
 * through the ports of src/node/ports.ts.
 *
 * The loop owns the RawNodes: timers, incoming frames and client requests only queue tasks; an
 * iteration runs the tasks, then handles the Readys of the groups with work (group-activity.ts:
 * the ones touched since their last visit, never all groups) with ONE write (synced when any group
 * has entries, a snapshot or a new term or vote), sends one frame per peer (leaders' appends
 * before the write, everything else after), applies, and advances. Nothing touches a RawNode
 * between ready() and advance(). A node tick ticks only the awake groups (quiesced ones are
 * parked); node heartbeats to peers keep quiesced groups' liveness (liveness.ts).
 */
import { AtollError } from '../../errors.js';
import type { Ready } from '../../raft/rawnode.js';
import type { Message } from '../../raft/types.js';
import type { WriteOperation } from '../../storage/storage-engine.js';
import { GroupActivity } from './group-activity.js';
import { startGroupJobs, type GroupJobsHost } from './group-jobs.js';
import { PeerLiveness } from '../peers/liveness.js';
import { fromLeaderAtTerm, refusalOf } from '../peers/peer-message-check.js';
import { PeerRefusals } from '../peers/peer-refusals.js';
import { noMetrics, type NodeMetrics } from '../metrics.js';
import type { NodeTransport, TimerHandle } from '../ports.js';
import type { GroupMessage } from '../raft-wire.js';
import { CoalescingOutbox, expandBatch } from './node-batch.js';
import { SnapshotImports } from '../snapshot/snapshot-imports.js';
import { maxSnapshotChunkBytes } from '../snapshot/snapshot-transfer.js';
import { SnapshotTransfers } from '../snapshot/snapshot-transfers.js';
import { isExpectedTaskError, sendableBeforeSync, writeBytes, type DrivenGroup, type RaftDriverOptions } from './driven-group.js';

export { isExpectedTaskError, type DrivenGroup, type RaftDriverOptions };

type Task = () => void;

const MAX_CATCH_UP_TICKS = 50;
/** A storage write the loop waits on for longer than this is logged at warn level. */
const SLOW_WRITE_MS = 1_000;
/** Iterations of one loop run before it yields to the event loop. */
const MAX_ITERATIONS_PER_RUN = 1_000;

export class RaftDriver<G extends DrivenGroup> {
  readonly groups = new Map<number, G>();
  readonly transport: NodeTransport;
  /** Log records of adopted snapshots, for the next iteration's synced write. */
  private pendingLogOps: WriteOperation[] = [];
  private tasks: Task[] = [];
  private loopRunning = false;
  private loopScheduled = false;
  private tickTimer: TimerHandle | undefined;
  private lastTickAtMs: number;
  private closedFlag = false;
  private fatal: Error | undefined;
  /** Peer messages dropped (sender not a member, malformed content). */
  private readonly refusals: PeerRefusals;
  private readonly metrics: NodeMetrics;
  /** The leader each group last reported in a Ready's soft state (metrics: leader changes). */
  private readonly knownLeaders = new Map<number, number>();
  /** Which groups have work and which tick (see group-activity.ts for the invariants). */
  readonly activity = new GroupActivity();
  readonly liveness: PeerLiveness;
  private readonly jobsHost: GroupJobsHost;
  /** Snapshot imports running beside the loop (snapshot-imports.ts). */
  private readonly imports: SnapshotImports<G>;
  /** Snapshot chunks streamed beside Raft, both ways (snapshot-transfer.ts). */
  readonly transfers: SnapshotTransfers;
  /** Set by start(): groups added later are attached to `activity` as they come. */
  private started = false;
  /** Called in the loop when the first frame ever comes from a peer (onFirstFrameFrom). */
  private readonly firstFrameListeners: Array<(peer: number) => void> = [];
  /** Coalescing (options.coalesce): every frame goes through it (node-batch.ts). */
  private readonly outbox: CoalescingOutbox | undefined;

  constructor(private readonly options: RaftDriverOptions) {
    this.metrics = options.metrics ?? noMetrics;
    if (options.coalesce === true) this.outbox = new CoalescingOutbox({ ...options, from: options.id, enqueue: (task) => this.enqueue(task), send: (peer, items) => this.sendFrame(peer, items) });
    this.imports = new SnapshotImports<G>({
      ...options,
      metrics: this.metrics,
      enqueue: (task) => this.enqueue(task),
      closing: () => this.closedFlag,
      fail: (error) => this.stopOnFatal(error),
    });
    this.refusals = new PeerRefusals(options.clock, options.logger);
    this.transfers = new SnapshotTransfers({ ...options, maxChunkBytes: options.maxSnapshotChunkBytes ?? maxSnapshotChunkBytes(), group: (id) => this.groups.get(id), send: (peer, items) => this.transport.send(peer, items), refuse: (from, group, why) => this.refusals.note(from, group, why) });
    this.lastTickAtMs = options.clock.monotonicMs();
    const peers = [...options.knownNodes.keys()].filter((peer) => peer !== options.id);
    this.liveness = new PeerLiveness(peers, options.electionTicks ?? 10);
    const { logger, clock } = options;
    this.jobsHost = { logger, clock, metrics: this.metrics, isClosed: () => this.closedFlag, addLogOps: (ops) => this.pendingLogOps.push(...ops), enqueue: (task) => this.enqueue(task), revisit: (group) => this.revisit(group) };
    this.transport = options.transport(
      {
        onMessages: (from, messages) => this.enqueue(() => this.stepMessages(from, messages)),
        onPeerUnreachable: (peer) => this.enqueue(() => this.reportUnreachable(peer)),
      },
      options.peerSecret,
      options.clusterId,
    );
  }

  /** A member joined or left (membership.ts): the transport's links and the liveness follow. */
  addPeer(peer: number, address: string): void {
    if (peer === this.options.id) return;
    this.transport.addPeer?.(peer, address);
    this.liveness.addPeer(peer, this.activity.ticks);
  }

  dropPeer(peer: number): void {
    this.transport.dropPeer?.(peer);
    this.liveness.dropPeer(peer);
  }

  get closed(): boolean {
    return this.closedFlag;
  }

  get failure(): Error | undefined {
    return this.fatal;
  }

  /** Peer messages dropped since the node started (tests). */
  get refusedPeerMessageCount(): number {
    return this.refusals.total;
  }

  /** Tasks waiting for the next loop iteration (metrics). */
  get tasksQueued(): number {
    return this.tasks.length;
  }

  /** Starts ticking; `firstTask` runs in the first iteration (preferred leaders campaign there). */
  start(firstTask: Task): void {
    this.started = true;
    for (const [id, group] of this.groups) this.activity.attach(id, group.raw);
    this.tickTimer = this.options.timers.every(this.options.tickMs, () => this.enqueue(() => this.catchUpTicks()));
    this.enqueue(firstTask);
  }

  /**
   * Adds a group while the node runs (a replica a move opened, replica-moves.ts): from now on the
   * loop visits and ticks it like the others. Before start(), start() attaches it.
   */
  addGroup(group: G): void {
    if (this.groups.has(group.id) && this.groups.get(group.id) !== group) this.options.onGroupDropped?.(this.groups.get(group.id)!);
    this.groups.set(group.id, group);
    if (this.started) {
      this.activity.attach(group.id, group.raw);
      this.scheduleLoop();
    }
  }

  /** Removes a group (a replica moved away): the loop no longer visits, ticks or steps it. */
  removeGroup(id: number): void {
    if (this.groups.has(id)) this.options.onGroupDropped?.(this.groups.get(id)!);
    this.groups.delete(id);
  }

  /**
   * Queues a task for the loop. Never refuses: the queue's client tasks are bounded upstream (each
   * request admitted by src/node/service/admission.ts queues one), and internal tasks (ticks, Raft frames,
   * snapshot adoption) come at the pace of their timers and peers.
   */
  enqueue(task: Task): void {
    if (this.closedFlag || this.fatal !== undefined) return;
    this.tasks.push(task);
    this.scheduleLoop();
  }

  private scheduleLoop(): void {
    if (this.loopRunning || this.loopScheduled || this.fatal !== undefined) return;
    this.loopScheduled = true;
    this.options.timers.soon(() => {
      this.loopScheduled = false;
      void this.runLoop();
    });
  }

  private async runLoop(): Promise<void> {
    if (this.loopRunning || this.closedFlag || this.fatal !== undefined) return;
    this.loopRunning = true;
    try {
      for (let guard = 0; guard < MAX_ITERATIONS_PER_RUN && !this.closedFlag && this.fatal === undefined; guard++) {
        if (!(await this.iteration())) break;
      }
    } catch (error) {
      this.stopOnFatal(error);
    } finally {
      this.loopRunning = false;
    }
    if ((this.tasks.length > 0 || this.activity.hasDirty) && !this.closedFlag) this.scheduleLoop();
  }

  /**
   * A failed synced write leaves memory ahead of disk, and a task that broke an invariant leaves a
   * state nobody can trust: the only safe move is to stop (no further iteration).
   */
  private stopOnFatal(error: unknown): void {
    if (this.fatal !== undefined) return;
    this.tasks = [];
    this.fatal = error instanceof Error ? error : new Error(String(error));
    this.options.logger.fatal({ err: this.fatal }, 'node loop failed; stopping');
    this.options.onFatal(this.fatal);
  }

  /** One pass: run queued tasks, then persist, send, apply and advance every ready group. */
  private async iteration(): Promise<boolean> {
    const { logger, clock } = this.options;
    const iterationStartedMs = clock.monotonicMs();
    const tasks = this.tasks;
    this.tasks = [];
    for (const task of tasks) {
      try {
        task();
      } catch (error) {
        // The rest of this batch is dropped with the node; its waiters fail on close.
        if (!isExpectedTaskError(error)) throw error;
        logger.warn({ err: error }, 'loop task failed with an expected error; skipped');
      }
    }
    // Only the groups touched since their last visit (group-activity.ts); one with work left after
    // this iteration is touched again below.
    // Imports that finished beside the loop rejoin here: their Ready is staged (its entries and
    // hard state; the snapshot is already on disk), sent, applied and advanced like any other. A
    // group still installing is not visited (snapshot-imports.ts); it is touched when it is done.
    const visited: G[] = [];
    // A group removed while its import ran (merged away, merge-apply.ts) is not staged again: its
    // records are deleted, and staging its Ready would write some back.
    const ready = this.imports.takeFinished().filter(({ group }) => this.groups.get(group.id) === group);
    for (const id of this.activity.takeDirty()) {
      const group = this.groups.get(id);
      if (group === undefined || group.installing === true) continue;
      visited.push(group);
      group.startReadRound();
      if (!group.raw.hasReady()) continue;
      const r = group.raw.ready();
      if (this.imports.claim(group, r)) continue;
      ready.push({ group, ready: r });
    }
    if (ready.length === 0 && this.pendingLogOps.length === 0) {
      this.imports.startClaimed();
      this.startJobs(visited);
      if (tasks.length > 0) this.metrics.loopIteration((clock.monotonicMs() - iterationStartedMs) / 1000, tasks.length);
      return tasks.length > 0 || this.pendingLogOps.length > 0;
    }
    // Adopted snapshots' log records (and compaction) ride along, synced.
    const ops: WriteOperation[] = this.pendingLogOps;
    this.pendingLogOps = [];
    let mustSync = ops.length > 0;
    for (const { group, ready: r } of ready) {
      // A snapshot imported beside the loop (installing) is already on disk; stage() installs the others.
      const installsHere = r.snapshot !== undefined && group.installing !== true;
      if (installsHere && r.snapshot) logger.info({ partition: group.id, index: r.snapshot.meta.index, bytes: r.snapshot.data.length }, 'installing a snapshot from the leader');
      const stageStartedMs = installsHere ? clock.monotonicMs() : 0;
      const staged = await group.stage(r);
      if (installsHere) this.metrics.snapshot('installed', (clock.monotonicMs() - stageStartedMs) / 1000);
      ops.push(...staged.ops);
      mustSync ||= staged.mustSync;
    }
    // A leader's appends and heartbeats promise nothing about its own disk, so they go out before
    // its synced write (Raft thesis 10.2.1): followers persist while the leader does. The leader
    // counts its own copy only when it steps their answers, in a later iteration, after this
    // write. Everything else (votes, acknowledgements) waits for the write.
    this.sendMessages(ready, true);
    if (ops.length > 0) {
      const startedMs = clock.monotonicMs();
      await this.options.engine.write(ops, { sync: mustSync });
      const tookMs = clock.monotonicMs() - startedMs;
      this.metrics.storageWrite(tookMs / 1000, ops.length, writeBytes(ops), mustSync);
      // Every write the loop waits on delays every partition on this node: a slow one is news.
      if (tookMs > SLOW_WRITE_MS) logger.warn({ tookMs: Math.round(tookMs), operations: ops.length, sync: mustSync }, 'slow storage write held the node loop');
    }
    // Claimed imports start only now: every log record staged before them is written (snapshot-imports.ts).
    this.imports.startClaimed();
    this.sendMessages(ready, false);

    await Promise.all(ready.map(({ group, ready: r }) => group.apply(r)));
    for (const { group, ready: r } of ready) {
      group.raw.advance(r);
      if (group.installing === true) {
        // The import's Ready is advanced: the group is back under the loop's normal care, awake
        // and visited (its inbound messages were dropped meanwhile; its leader resends).
        group.installing = false;
        this.activity.touch(group.id);
      }
      if (r.softState) {
        logger.debug({ partition: group.id, role: r.softState.role, lead: r.softState.lead }, 'raft role changed');
        this.noteSoftState(group.id, r.softState.role, r.softState.lead);
      }
      // More committed entries than one Ready carries, or work queued while it was out: next iteration.
      if (group.raw.hasReady()) this.activity.visit(group.id);
    }
    this.startJobs(visited);
    this.metrics.loopIteration((clock.monotonicMs() - iterationStartedMs) / 1000, tasks.length);
    return true;
  }

  /** Counts elections and leader changes from a Ready's soft state (metrics only). */
  private noteSoftState(partition: number, role: string, lead: number): void {
    if (role === 'candidate') this.metrics.electionStarted(partition);
    if (this.knownLeaders.get(partition) !== lead) {
      this.knownLeaders.set(partition, lead);
      this.metrics.leaderChanged(partition, lead);
    }
  }

  /** Sends the Readys' messages that may go before the synced write (`early`), or the others. */
  private sendMessages(ready: ReadonlyArray<{ group: G; ready: Ready }>, early: boolean): void {
    const outgoing = new Map<number, GroupMessage[]>();
    for (const { group, ready: r } of ready) {
      for (const message of r.messages) {
        const beforeSync = this.options.followerAckBeforeSync === true || sendableBeforeSync(message);
        if (beforeSync !== early || !this.transfers.outgoing(group.id, message)) continue;
        this.metrics.raftMessages('sent', message.type, 1);
        let list = outgoing.get(message.to);
        if (!list) outgoing.set(message.to, (list = []));
        list.push({ group: group.id, message });
      }
    }
    for (const [peer, messages] of outgoing) {
      if (this.outbox !== undefined) this.outbox.send(peer, messages);
      else this.sendFrame(peer, messages);
    }
  }

  private sendFrame(peer: number, messages: GroupMessage[]): void {
    this.liveness.sent(peer, this.activity.ticks);
    this.transport.send(peer, messages);
  }

  /** Marks a group for the next iteration and makes sure one runs. */
  private revisit(group: number): void {
    this.activity.visit(group);
    this.scheduleLoop();
  }

  /** Starts the visited groups' log compaction, snapshot exports and storage compaction steps (group-jobs.ts). */
  private startJobs(visited: readonly G[]): void {
    // A group removed in this iteration (merged away) starts nothing: its records are deleted.
    for (const group of visited) if (group.installing !== true && this.groups.get(group.id) === group) startGroupJobs(group, this.jobsHost);
  }

  private catchUpTicks(): void {
    // Ticks follow the monotonic clock: after a stall (GC, SIGSTOP) every missed tick is replayed,
    // so election timers and CheckQuorum see the time that really passed.
    const { tickMs } = this.options;
    const now = this.options.clock.monotonicMs();
    const due = Math.min(MAX_CATCH_UP_TICKS, Math.floor((now - this.lastTickAtMs) / tickMs));
    if (due <= 0) return;
    this.lastTickAtMs += due * tickMs;
    // Capped: the rest of a long stall is dropped, never owed. Invariant (the lease's voter side,
    // read-barrier.ts): after a catch-up the tick clock lags the monotonic clock by less than one
    // tick, and it never runs ahead of it.
    if (now - this.lastTickAtMs >= tickMs) this.lastTickAtMs = now;
    // Awake groups only; quiesced ones are parked and settle their ticks when next used.
    this.activity.tick(due, this.groups);
    // Commit notices held for a frame that did not come (node-batch.ts) leave now, at the latest.
    this.outbox?.flush();
    this.transfers.tick();
    const silent = this.liveness.onTick(this.activity.ticks, (peer) => this.transport.send(peer, []));
    // A quiesced follower runs no election timer: when its leader's node falls silent, it must.
    for (const peer of silent) {
      this.options.logger.debug({ peer }, 'no frame from peer for an election timeout; waking the groups it leads');
      this.reportUnreachable(peer);
    }
  }

  /**
   * Steps messages from peer `from` into their groups. A message is dropped, and counted, when its
   * sender is not a member of the group (voter or learner; fromLeaderAtTerm excepted), or when its content would break an
   * invariant the Raft core asserts (peer-message-check.ts): a peer that holds the secret still
   * cannot stop this node with a forged message.
   */
  private stepMessages(from: number, messages: GroupMessage[]): void {
    // Ticks first: a heartbeat restarts a voter's election timer, and the ticks a stalled loop owes
    // must not count as time after it (the lease's voter side, read-barrier.ts).
    this.catchUpTicks();
    // Any frame from a known peer, an empty one (a node heartbeat) included, says its node is alive.
    if (this.liveness.heard(from, this.activity.ticks)) for (const listener of this.firstFrameListeners) listener(from);
    for (const { group: id, message, transfer, batch } of messages) {
      if (transfer !== undefined) {
        this.transfers.onItem(from, id, transfer);
        continue;
      }
      // A node-level batch (node-batch.ts): its groups' messages, stepped in one pass like any other.
      if (batch !== undefined) for (const one of expandBatch(batch)) this.stepOne(from, one.group, one.message);
      else this.stepOne(from, id, message);
    }
  }

  private stepOne(from: number, id: number, message: Message): void {
    this.metrics.raftMessages('received', message.type, 1);
    const group = this.groups.get(id);
    if (!group || message.to !== this.options.id || message.from !== from) {
      this.refusals.note(from, id, 'not addressed to this node');
      return;
    }
    if (!group.raw.isMember(from) && group.awaitingFirstSnapshot?.() !== true && !fromLeaderAtTerm(message, group.raw.status().term)) {
      this.refusals.note(from, id, 'sender is not a member of the group');
      return;
    }
    const refusal = refusalOf(message, { lastIndex: group.raw.lastIndex() });
    if (refusal !== undefined) {
      this.refusals.note(from, id, refusal);
      return;
    }
    // Dropped while its snapshot imports (snapshot-imports.ts); the leader resends what matters.
    if (group.installing === true) return;
    group.raw.step(message);
  }

  /**
   * `listener` runs in the loop, before the frame's messages are stepped, when the first frame ever
   * comes from a peer (maintenance.ts: preferred leaders whose start-up campaign found it down).
   */
  onFirstFrameFrom(listener: (peer: number) => void): void {
    this.firstFrameListeners.push(listener);
  }

  /** Tells every group that `peer` cannot be reached (call from a loop task). */
  reportUnreachable(peer: number): void {
    for (const group of this.groups.values()) if (group.installing !== true) group.raw.reportUnreachable(peer);
  }

  /** True when every group knows its leader. */
  allGroupsLed(): boolean {
    for (const group of this.groups.values()) if (group.raw.status().lead === 0) return false;
    return true;
  }

  /** Stops the loop after its current iteration, fails every waiter, closes transport and storage. */
  async close(): Promise<void> {
    this.closedFlag = true;
    this.tickTimer?.cancel();
    // Let the current iteration finish its write before closing the database under it.
    for (let i = 0; i < 200 && (this.loopRunning || this.imports.running > 0); i++) await new Promise<void>((resolve) => this.options.timers.after(10, resolve));
    const shutdown = new AtollError('UNAVAILABLE', `node ${this.options.id} is shutting down`);
    for (const group of this.groups.values()) group.failAll(shutdown);
    this.transport.close();
    await this.options.engine.close();
  }
}
