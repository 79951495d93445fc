import assert from 'node:assert/strict';
import type { RaftBugs } from '../raft/config.js';
import { isRaftError } from '../raft/errors.js';
import { RawNode, type Ready } from '../raft/rawnode.js';
import { Rng } from '../raft/rng.js';
import { MemoryLogStorage } from '../raft/storage.js';
import { EntryType, type ConfChange, type NodeId } from '../raft/types.js';
import { QuorumContactChecker, SafetyChecker } from './checker.js';
import { CALM_NETWORK, SimNetwork, type NetworkFaults } from './network.js';
import { DigestStateMachine } from './state-machine.js';

/** Everything a run draws from its seed. */
export interface SimScenario {
  seed: number;
  profile: NemesisProfile;
  nodeCount: number;
  readMode: 'safe' | 'lease';
  preVote: boolean;
  quiesceAfterTicks: number;
  /** Batched appends (RaftConfig.batchAppends): odd seeds, so no other draw of the scenario moves. */
  batchAppends: boolean;
  maxMessageBytes: number;
  maxInflightMessages: number;
  snapshotEvery: number;
  snapshotChunkBytes: number;
  network: NetworkFaults;
  /** Per-tick probabilities of each fault. */
  crashRate: number;
  partitionRate: number;
  transferRate: number;
  /** Cut the leader off, let it append a few entries nobody receives, then crash it (Figure 8's raw material). */
  strandRate: number;
  /** Probability that a newly elected leader is killed within a few ticks (before its term settles). */
  newLeaderCrashRate: number;
  /** Probability that a newly elected leader is cut off from everyone within a few ticks. */
  newLeaderIsolateRate: number;
  confChangeRate: number;
  proposeRate: number;
  readRate: number;
  /** Clients go quiet for stretches (so idle groups quiesce) with this probability per busy tick. */
  idleRate: number;
  faultTicks: number;
  /** After faults stop: ticks allowed for a leader to emerge and a proposal to commit. */
  livenessTicks: number;
  bugs: RaftBugs;
}

export const ELECTION_TICKS = 10;

/**
 * Each seed draws a nemesis profile, then its parameters. 'mixed' spreads every fault thinly;
 * 'leader-churn' kills and strands leaders right after elections on five nodes with one-entry
 * messages, the raw material of Figure 8; 'quiet' lets groups go idle and quiesce, then cuts
 * leaders off, where stale reads would hide.
 */
export type NemesisProfile = 'mixed' | 'leader-churn' | 'quiet';

export function scenarioFromSeed(seed: number, bugs: RaftBugs = {}): SimScenario {
  const rng = new Rng(seed ^ 0x5eed);
  const profile: NemesisProfile = rng.pick(['mixed', 'mixed', 'leader-churn', 'quiet'] as const);
  const churn = profile === 'leader-churn';
  const quiet = profile === 'quiet';
  const nodeCount = churn || rng.chance(0.5) ? 5 : 3;
  const lossy = rng.chance(0.6);
  return {
    seed,
    profile,
    nodeCount,
    readMode: rng.chance(0.5) ? 'lease' : 'safe',
    preVote: rng.chance(0.85),
    quiesceAfterTicks: quiet || rng.chance(0.2) ? 5 + rng.int(15) : 0,
    batchAppends: seed % 2 === 1,
    // Small limits split appends into one or two entries each, so pipelining and partial
    // replication (a term's first entry arriving without its successors) get exercised.
    maxMessageBytes: churn ? 32 : rng.pick([32, 64, 4096, 4096]),
    maxInflightMessages: (churn ? 2 : 1) + rng.int(8),
    snapshotEvery: !churn && rng.chance(0.5) ? 5 + rng.int(30) : 1_000_000,
    snapshotChunkBytes: 8 + rng.int(40),
    network: {
      dropRate: lossy ? rng.float() * 0.1 : 0,
      duplicateRate: lossy ? rng.float() * 0.05 : 0,
      maxDelayTicks: rng.int(3),
      longDelayRate: lossy ? rng.float() * 0.02 : 0,
      longDelayTicks: 5 + rng.int(40),
    },
    crashRate: rng.float() * 0.015,
    partitionRate: quiet ? 0.005 + rng.float() * 0.01 : rng.float() * 0.01,
    transferRate: rng.float() * 0.01,
    strandRate: churn ? 0.01 + rng.float() * 0.03 : rng.chance(0.5) ? rng.float() * 0.02 : 0,
    newLeaderCrashRate: churn ? 0.2 + rng.float() * 0.4 : rng.chance(0.5) ? rng.float() * 0.5 : 0,
    newLeaderIsolateRate: churn ? 0.3 + rng.float() * 0.5 : rng.chance(0.5) ? rng.float() * 0.6 : 0,
    confChangeRate: rng.chance(0.5) ? rng.float() * 0.01 : 0,
    proposeRate: 0.2 + rng.float() * 0.6,
    readRate: 0.1 + rng.float() * 0.4,
    idleRate: quiet ? 0.02 + rng.float() * 0.03 : rng.chance(0.3) ? 0.01 + rng.float() * 0.03 : 0,
    faultTicks: 300 + rng.int(300),
    livenessTicks: 30 * ELECTION_TICKS,
    bugs,
  };
}

class SimNode {
  readonly storage: MemoryLogStorage;
  readonly machine = new DigestStateMachine();
  raw: RawNode | undefined;
  /** Proposals this node accepted as leader: index -> {term, id}. Volatile: lost in a crash. */
  proposals = new Map<number, { term: number; id: number }>();
  reads = new Set<string>();
  observedCommit = 0;
  observedLeaderTerm = 0;
  observedQuiesced = false;
  observedVoters = '';

  constructor(
    readonly id: NodeId,
    voters: NodeId[],
  ) {
    this.storage = new MemoryLogStorage();
    if (voters.includes(id)) {
      this.machine.appliedIndex = 1;
      this.storage.bootstrap({ voters, learners: [] }, this.machine.snapshotData());
    }
  }
}

export interface SimResult {
  seed: number;
  ok: boolean;
  error?: string;
  ticks: number;
  stats: {
    writesAcked: number;
    readsChecked: number;
    messages: number;
    dropped: number;
    leaderChanges: number;
    crashes: number;
    quiescences: number;
  };
  trace: string[];
}

/**
 * N nodes of the production Raft code in one process, one seed, fake network and stable storage.
 * A node's MemoryLogStorage and state machine survive a crash; its RawNode (the volatile state)
 * does not, so anything not yet persisted through a Ready is lost, exactly as on a real crash.
 */
export class SimCluster {
  readonly scenario: SimScenario;
  readonly checker = new SafetyChecker();
  private readonly contact = new QuorumContactChecker(2 * ELECTION_TICKS + 1);
  private readonly rng: Rng;
  private readonly network: SimNetwork;
  private readonly nodes = new Map<NodeId, SimNode>();
  /** Node ids that may ever be members: the initial voters plus one spare for membership changes. */
  private readonly pool: NodeId[];
  private now = 0;
  private nextProposalId = 1;
  private nextReadId = 1;
  private maxAckedProposalId = 0;
  private idleUntil = 0;
  private quiescences = 0;
  private readonly crashedUntil = new Map<NodeId, number>();
  private readonly crashAt = new Map<NodeId, number>();
  private readonly isolateAt = new Map<NodeId, number>();
  private partitionedUntil = 0;
  private readonly traceLines: string[] = [];
  private readonly traceEnabled: boolean;
  private leaderChanges = 0;
  private faultsActive = false;
  private crashes = 0;

  constructor(scenario: SimScenario, options: { trace?: boolean } = {}) {
    this.scenario = scenario;
    this.traceEnabled = options.trace ?? false;
    this.rng = new Rng(scenario.seed);
    this.network = new SimNetwork(this.rng.fork());
    const voters = Array.from({ length: scenario.nodeCount }, (_, i) => i + 1);
    this.pool = [...voters, scenario.nodeCount + 1];
    for (const id of this.pool) {
      // The spare starts with an empty configuration: it only joins through a conf change.
      const node = new SimNode(id, voters.includes(id) ? voters : []);
      this.nodes.set(id, node);
      this.start(node);
    }
  }

  run(): SimResult {
    try {
      this.network.faults = this.scenario.network;
      this.faultsActive = true;
      for (let i = 0; i < this.scenario.faultTicks; i++) {
        this.injectFaults();
        this.clientTraffic();
        this.tickAll();
      }
      this.stopFaults();
      this.checkLiveness();
      return this.result(true);
    } catch (error) {
      const message = error instanceof Error ? `${error.message}\n${error.stack ?? ''}` : String(error);
      this.trace(`FAILURE ${message.split('\n')[0]}`);
      return this.result(false, message);
    }
  }

  // ------------------------------------------------------------ time and delivery

  private tickAll(): void {
    this.now++;
    for (const node of this.nodes.values()) {
      if (!node.raw) continue;
      node.raw.tick();
      this.processReady(node);
    }
    for (const message of this.network.takeDue(this.now)) {
      const node = this.nodes.get(message.to);
      if (!node?.raw) continue;
      if (message.type === 'appResp' || message.type === 'heartbeatResp' || message.type === 'snapResp') {
        this.contact.answerDelivered(node.id, message.from, this.now);
      }
      node.raw.step(message);
      this.processReady(node);
    }
    for (const node of this.nodes.values()) {
      const status = node.raw?.status();
      if (status?.role === 'leader' && !status.quiesced) this.contact.check(node.id, status.term, status.confState.voters, this.now);
    }
  }

  /** The host's side of the Ready contract, in the documented order. */
  private processReady(node: SimNode): void {
    const raw = node.raw;
    assert.ok(raw);
    while (raw.hasReady()) {
      const ready = raw.ready();
      this.persist(node, ready);
      for (const message of ready.messages) this.network.send(message, this.now);
      this.apply(node, ready);
      raw.advance(ready);
      this.observe(node);
      this.maybeSnapshot(node);
    }
  }

  private persist(node: SimNode, ready: Ready): void {
    if (ready.snapshot) {
      node.storage.applySnapshot(ready.snapshot);
      node.machine.restore(ready.snapshot.data);
      this.checker.observeApplied(node.id, ready.snapshot.meta.index, node.machine.digest);
      this.trace(`n${node.id} installed snapshot @${ready.snapshot.meta.index}`);
    }
    if (ready.entries.length > 0) {
      const first = ready.entries[0];
      assert.ok(first);
      let previousTerm: number | undefined;
      try {
        previousTerm = node.storage.term(first.index - 1);
      } catch {
        previousTerm = undefined;
      }
      node.storage.append(ready.entries);
      if (previousTerm !== undefined) this.checker.observePersisted(node.id, ready.entries, previousTerm);
    }
    if (ready.hardState) node.storage.setHardState(ready.hardState);
  }

  private apply(node: SimNode, ready: Ready): void {
    for (const entry of ready.committedEntries) {
      const digest = node.machine.apply(entry);
      this.checker.observeApplied(node.id, entry.index, digest);
      if (entry.type !== EntryType.Normal) continue;
      const proposal = node.proposals.get(entry.index);
      if (!proposal) continue;
      node.proposals.delete(entry.index);
      if (proposal.term === entry.term) {
        this.checker.writeAcknowledged(entry.index);
        this.maxAckedProposalId = Math.max(this.maxAckedProposalId, proposal.id);
        this.trace(`n${node.id} ack write #${proposal.id} @${entry.index}`);
      }
    }
    for (const read of ready.readStates) {
      if (!node.reads.delete(read.context)) continue;
      this.checker.readAnswered(node.id, read.context, read.index);
    }
    for (const context of ready.droppedReads) {
      node.reads.delete(context);
      this.checker.readDropped(context);
    }
  }

  private observe(node: SimNode): void {
    const raw = node.raw;
    assert.ok(raw);
    const status = raw.status();
    const termAt = (index: number): number | undefined => {
      try {
        return node.storage.term(index);
      } catch {
        return undefined;
      }
    };
    const voters = status.confState.voters.join(',');
    if (status.quiesced !== node.observedQuiesced || voters !== node.observedVoters) this.contact.grace(node.id, this.now);
    if (status.quiesced !== node.observedQuiesced) {
      this.trace(`n${node.id} ${status.quiesced ? 'quiesced' : 'woke'} (${status.role})`);
      if (status.quiesced) this.quiescences++;
      // A leader that went quiet is the one whose loss nobody notices by missing heartbeats:
      // cut it off now and then to prove the failure detector and the read path still hold.
      if (status.quiesced && status.role === 'leader' && this.faultsActive && this.rng.chance(0.2)) {
        this.isolateAt.set(node.id, this.now + 1 + this.rng.int(10));
      }
    }
    node.observedQuiesced = status.quiesced;
    node.observedVoters = voters;
    if (status.role === 'leader' && status.term !== node.observedLeaderTerm) {
      node.observedLeaderTerm = status.term;
      this.contact.grace(node.id, this.now);
      this.leaderChanges++;
      if (this.faultsActive && this.rng.chance(this.scenario.newLeaderCrashRate)) this.crashAt.set(node.id, this.now + this.rng.int(4));
      if (this.faultsActive && this.rng.chance(this.scenario.newLeaderIsolateRate)) {
        const delay = this.rng.int(4);
        // Delay 0: its first messages (the term's empty entry) never leave, like Figure 8's S5.
        if (delay === 0) this.isolate(node.id, 10 + this.rng.int(50));
        else this.isolateAt.set(node.id, this.now + delay);
      }
      this.trace(`n${node.id} became leader of term ${status.term} (last ${status.lastIndex}, commit ${status.commit})`);
      this.checker.observeBecameLeader(node.id, status.term, node.storage.firstIndex(), termAt);
    }
    if (status.commit > node.observedCommit) {
      this.checker.observeCommit(node.id, Math.max(node.observedCommit, node.storage.firstIndex() - 1), status.commit, termAt);
      node.observedCommit = status.commit;
    }
  }

  private maybeSnapshot(node: SimNode): void {
    const applied = node.machine.appliedIndex;
    const last = node.storage.snapshot().meta.index;
    if (applied - last < this.scenario.snapshotEvery) return;
    const raw = node.raw;
    assert.ok(raw);
    node.storage.createSnapshot(applied, raw.status().confState, node.machine.snapshotData());
    // Keep a few entries so slightly lagging followers still catch up from the log.
    node.storage.compact(Math.max(0, applied - 3));
    this.trace(`n${node.id} snapshot+compact @${applied}`);
  }

  // ------------------------------------------------------------ faults

  private injectFaults(): void {
    const s = this.scenario;
    const rng = this.rng;
    for (const [id, until] of this.crashedUntil) {
      if (this.now >= until) this.restart(id);
    }
    if (this.partitionedUntil > 0 && this.now >= this.partitionedUntil) this.healPartitions();
    for (const [id, at] of this.isolateAt) {
      if (this.now < at) continue;
      this.isolateAt.delete(id);
      this.isolate(id, 10 + rng.int(50));
    }
    for (const [id, at] of this.crashAt) {
      if (this.now < at) continue;
      this.crashAt.delete(id);
      const node = this.nodes.get(id) as SimNode;
      if (node.raw && this.crashedUntil.size < Math.floor((s.nodeCount - 1) / 2)) this.crash(node, 5 + rng.int(40));
    }
    if (rng.chance(s.crashRate)) this.crashSomeone();
    if (this.partitionedUntil === 0 && rng.chance(s.partitionRate)) this.partition();
    if (rng.chance(s.transferRate)) this.transfer();
    if (rng.chance(s.strandRate)) this.strandLeader();
    if (rng.chance(s.confChangeRate)) this.changeMembership();
  }

  private crashSomeone(): void {
    const alive = [...this.nodes.values()].filter((node) => node.raw);
    // Crash at most a minority of the initial voters at once so the run keeps making progress;
    // safety would hold with more, but the run would mostly idle.
    if (this.crashedUntil.size >= Math.floor((this.scenario.nodeCount - 1) / 2) || alive.length === 0) return;
    const leader = this.currentLeaders()[0];
    const victim = leader && this.rng.chance(0.5) ? (this.nodes.get(leader) as SimNode) : this.rng.pick(alive);
    this.crash(victim, 5 + this.rng.int(60));
  }

  private strandLeader(): void {
    if (this.crashedUntil.size >= Math.floor((this.scenario.nodeCount - 1) / 2)) return;
    const leaderId = this.currentLeaders()[0];
    if (leaderId === undefined) return;
    const leader = this.nodes.get(leaderId) as SimNode;
    for (const other of this.pool) if (other !== leaderId) this.blockBoth(leaderId, other);
    const count = 1 + this.rng.int(3);
    for (let i = 0; i < count; i++) this.proposeAt(leader);
    this.trace(`STRAND n${leaderId} with ${count} unreplicated proposals`);
    this.crash(leader, 5 + this.rng.int(40));
    this.partitionedUntil = this.partitionedUntil === 0 ? this.now + 1 : this.partitionedUntil;
  }

  private crash(node: SimNode, downTicks: number): void {
    node.raw = undefined;
    node.proposals.clear();
    for (const context of node.reads) this.checker.readDropped(context);
    node.reads.clear();
    this.crashedUntil.set(node.id, this.now + downTicks);
    this.crashes++;
    this.trace(`n${node.id} CRASH for ${downTicks} ticks`);
    // The transport on the other nodes notices the lost connection.
    for (const other of this.nodes.values()) other.raw?.reportUnreachable(node.id);
  }

  private restart(id: NodeId): void {
    this.crashedUntil.delete(id);
    const node = this.nodes.get(id) as SimNode;
    this.start(node);
    this.trace(`n${id} RESTART (applied ${node.machine.appliedIndex})`);
  }

  private start(node: SimNode): void {
    const s = this.scenario;
    node.raw = new RawNode({
      id: node.id,
      storage: node.storage,
      rng: this.rng.fork(),
      applied: node.machine.appliedIndex,
      electionTicks: ELECTION_TICKS,
      heartbeatTicks: 1,
      preVote: s.preVote,
      checkQuorum: true,
      readMode: s.readMode,
      leaseMarginTicks: 2,
      maxMessageBytes: s.maxMessageBytes,
      maxInflightMessages: s.maxInflightMessages,
      maxInflightBytes: Math.max(s.maxMessageBytes, 16 * 1024),
      maxUncommittedBytes: 1024 * 1024,
      snapshotChunkBytes: Math.min(s.snapshotChunkBytes, s.maxMessageBytes),
      quiesceAfterTicks: s.quiesceAfterTicks,
      batchAppends: s.batchAppends,
      bugs: s.bugs,
    });
    node.observedLeaderTerm = 0;
  }

  private partition(): void {
    const ids = this.pool.filter((id) => this.nodes.get(id)?.raw);
    const kind = this.rng.int(3);
    const duration = 10 + this.rng.int(80);
    if (kind === 0) {
      // Isolate one node (often the leader) from everyone, both ways.
      const leader = this.currentLeaders()[0];
      const victim = leader !== undefined && this.rng.chance(0.6) ? leader : this.rng.pick(this.pool);
      for (const other of this.pool) if (other !== victim) this.blockBoth(victim, other);
      this.trace(`PARTITION isolate n${victim} for ${duration}`);
    } else if (kind === 1) {
      // Split into two sides.
      const side = new Set(this.pool.filter(() => this.rng.chance(0.5)));
      for (const a of this.pool) for (const b of this.pool) if (side.has(a) && !side.has(b)) this.blockBoth(a, b);
      this.trace(`PARTITION split {${[...side].join(',')}} | rest for ${duration}`);
    } else {
      // One-way: a node can send but not receive (or the reverse) from some peers.
      const victim = this.rng.pick(ids.length > 0 ? ids : this.pool);
      const inbound = this.rng.chance(0.5);
      for (const other of this.pool) {
        if (other === victim || !this.rng.chance(0.7)) continue;
        if (inbound) this.network.block(other, victim);
        else this.network.block(victim, other);
        this.nodes.get(inbound ? victim : other)?.raw?.reportUnreachable(inbound ? other : victim);
      }
      this.trace(`PARTITION one-way ${inbound ? 'into' : 'out of'} n${victim} for ${duration}`);
    }
    this.partitionedUntil = this.now + duration;
  }

  private isolate(id: NodeId, duration: number): void {
    for (const other of this.pool) if (other !== id) this.blockBoth(id, other);
    this.partitionedUntil = Math.max(this.partitionedUntil, this.now + duration);
    this.trace(`ISOLATE n${id} for ${duration}`);
  }

  private blockBoth(a: NodeId, b: NodeId): void {
    this.network.block(a, b);
    this.network.block(b, a);
    this.nodes.get(a)?.raw?.reportUnreachable(b);
    this.nodes.get(b)?.raw?.reportUnreachable(a);
  }

  private healPartitions(): void {
    this.network.heal();
    this.partitionedUntil = 0;
    this.trace('HEAL');
  }

  private transfer(): void {
    const leaderId = this.currentLeaders()[0];
    if (leaderId === undefined) return;
    const leader = this.nodes.get(leaderId) as SimNode;
    const voters = leader.raw?.status().confState.voters.filter((id) => id !== leaderId) ?? [];
    if (voters.length === 0) return;
    const target = this.rng.pick(voters);
    try {
      leader.raw?.transferLeadership(target);
      this.trace(`n${leaderId} TRANSFER to n${target}`);
      this.processReady(leader);
    } catch (error) {
      if (!isRaftError(error, 'PROPOSAL_DROPPED')) throw error;
    }
  }

  private changeMembership(): void {
    const leaderId = this.currentLeaders()[0];
    if (leaderId === undefined) return;
    const leader = this.nodes.get(leaderId) as SimNode;
    const conf = leader.raw?.status().confState;
    if (!conf) return;
    const outside = this.pool.filter((id) => !conf.voters.includes(id) && !conf.learners.includes(id));
    let change: ConfChange;
    const learner = conf.learners[0];
    if (learner !== undefined) change = { type: 'addVoter', node: learner };
    else if (conf.voters.length > this.scenario.nodeCount) change = { type: 'removeNode', node: this.rng.pick(conf.voters) };
    else if (outside.length > 0) change = { type: 'addLearner', node: this.rng.pick(outside) };
    else return;
    try {
      leader.raw?.proposeConfChange(change);
      this.trace(`n${leaderId} CONF ${change.type} n${change.node}`);
      this.processReady(leader);
    } catch (error) {
      if (!isRaftError(error, 'PROPOSAL_DROPPED')) throw error;
    }
  }

  private stopFaults(): void {
    this.faultsActive = false;
    this.crashAt.clear();
    this.isolateAt.clear();
    this.network.faults = CALM_NETWORK;
    this.healPartitions();
    for (const id of [...this.crashedUntil.keys()]) this.restart(id);
    this.trace('FAULTS STOPPED');
  }

  // ------------------------------------------------------------ clients

  /**
   * Clients each remember a leader and keep talking to it until told otherwise, so every node that
   * believes it leads gets traffic, stale leaders included: exactly where stale reads would show.
   */
  private clientTraffic(): void {
    if (this.now < this.idleUntil) return;
    if (this.rng.chance(this.scenario.idleRate)) {
      this.idleUntil = this.now + 20 + this.rng.int(80);
      this.trace(`clients idle until ${this.idleUntil}`);
      return;
    }
    for (const id of this.currentLeaders()) {
      const node = this.nodes.get(id) as SimNode;
      if (this.rng.chance(this.scenario.proposeRate)) this.proposeAt(node);
      if (this.rng.chance(this.scenario.readRate)) this.readAt(node);
    }
    if (this.rng.chance(this.scenario.readRate / 2)) {
      const alive = [...this.nodes.values()].filter((node) => node.raw);
      if (alive.length > 0) this.readAt(this.rng.pick(alive));
    }
  }

  private proposeSomewhere(): { node: NodeId; index: number } | undefined {
    const leaders = this.currentLeaders();
    if (leaders.length === 0) return undefined;
    // Clients that follow leader hints end up at the newest leader; some still talk to a stale one.
    const newest = leaders.reduce((a, b) => (this.termOf(b) > this.termOf(a) ? b : a));
    const target = this.rng.chance(0.8) ? newest : this.rng.pick(leaders);
    return this.proposeAt(this.nodes.get(target) as SimNode);
  }

  private termOf(id: NodeId): number {
    return this.nodes.get(id)?.raw?.status().term ?? 0;
  }

  private proposeAt(node: SimNode): { node: NodeId; index: number } | undefined {
    const id = this.nextProposalId++;
    try {
      const { index, term } = (node.raw as RawNode).propose(new TextEncoder().encode(`w${id}`));
      node.proposals.set(index, { term, id });
      this.processReady(node);
      return { node: node.id, index };
    } catch (error) {
      if (!isRaftError(error, 'PROPOSAL_DROPPED')) throw error;
      return undefined;
    }
  }

  private readAt(node: SimNode): void {
    const context = `r${this.nextReadId++}`;
    this.checker.readStarted(context);
    try {
      (node.raw as RawNode).readIndex(context);
      node.reads.add(context);
      this.processReady(node);
    } catch (error) {
      if (!isRaftError(error, 'PROPOSAL_DROPPED')) throw error;
      this.checker.readDropped(context);
    }
  }

  private currentLeaders(): NodeId[] {
    const leaders: NodeId[] = [];
    for (const node of this.nodes.values()) {
      if (node.raw && node.raw.status().role === 'leader') leaders.push(node.id);
    }
    return leaders;
  }

  // ------------------------------------------------------------ liveness

  /** Once faults stop, a leader must emerge and a fresh proposal must commit within a bound. */
  private checkLiveness(): void {
    const deadline = this.now + this.scenario.livenessTicks;
    const firstId = this.nextProposalId;
    const start = this.now;
    let pending: { node: NodeId; index: number } | undefined;
    while (this.now < deadline) {
      this.tickAll();
      if (this.maxAckedProposalId >= firstId) {
        this.trace(`LIVE after ${this.now - start} ticks`);
        return;
      }
      const holder = pending ? this.nodes.get(pending.node) : undefined;
      // A proposal at a node that lost leadership may never resolve: ask the current leader.
      if (pending && (!holder?.proposals.has(pending.index) || holder.raw?.status().role !== 'leader')) pending = undefined;
      if (!pending) pending = this.proposeSomewhere();
    }
    const statuses = [...this.nodes.values()].map((node) => {
      const s = node.raw?.status();
      const progress = [...(s?.progress ?? new Map()).entries()].map(([id, p]) => `${id}=${p.state}:${p.match}/${p.next}`).join(',');
      return s ? `n${node.id}:${s.role}/t${s.term}/c${s.commit}/l${s.lastIndex}/f${s.firstIndex}/lead${s.lead}/q${s.quiesced}${progress ? `{${progress}}` : ''}` : `n${node.id}:down`;
    });
    throw new Error(`liveness: no proposal committed within ${this.scenario.livenessTicks} ticks after faults stopped [${statuses.join(' ')}]`);
  }

  // ------------------------------------------------------------ reporting

  private trace(line: string): void {
    if (this.traceEnabled) this.traceLines.push(`t=${this.now} ${line}`);
  }

  private result(ok: boolean, error?: string): SimResult {
    return {
      seed: this.scenario.seed,
      ok,
      ...(error !== undefined ? { error } : {}),
      ticks: this.now,
      stats: {
        writesAcked: this.checker.writesAcked,
        readsChecked: this.checker.readsChecked,
        messages: this.network.sent,
        dropped: this.network.dropped,
        leaderChanges: this.leaderChanges,
        crashes: this.crashes,
        quiescences: this.quiescences,
      },
      trace: this.traceLines,
    };
  }
}

export function runSeed(seed: number, options: { bugs?: RaftBugs; trace?: boolean } = {}): SimResult {
  return new SimCluster(scenarioFromSeed(seed, options.bugs), { trace: options.trace ?? false }).run();
}
