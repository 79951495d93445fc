/**
 * A small scripted network for Raft scenario tests: messages queue until a test delivers them,
 * drops them, or lets `stabilize()` run the group until nothing is left to say. Each node persists
 * its Ready into a MemoryLogStorage exactly as a host must (persist, send, apply, advance).
 */
import type { RaftConfig } from '../../src/raft/config.js';
import { RawNode } from '../../src/raft/rawnode.js';
import { Rng } from '../../src/raft/rng.js';
import { MemoryLogStorage } from '../../src/raft/storage.js';
import { EntryType, type Entry, type Message, type NodeId, type ReadState } from '../../src/raft/types.js';

export interface HarnessNode {
  readonly id: NodeId;
  raw: RawNode;
  readonly storage: MemoryLogStorage;
  applied: Entry[];
  readStates: ReadState[];
  droppedReads: string[];
  appliedIndex: number;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

export function text(entry: Entry): string {
  return decoder.decode(entry.data);
}

export class Harness {
  readonly nodes = new Map<NodeId, HarnessNode>();
  queue: Message[] = [];
  /** Directed links that lose every message: "from>to". */
  private readonly cut = new Set<string>();
  sentCount = 0;

  constructor(
    voters: NodeId[],
    private readonly overrides: Partial<RaftConfig> = {},
    extra: NodeId[] = [],
  ) {
    for (const id of [...voters, ...extra]) {
      const storage = new MemoryLogStorage();
      if (voters.includes(id)) storage.bootstrap({ voters, learners: [] }, new Uint8Array(0));
      const node: HarnessNode = { id, storage, raw: this.makeRaw(id, storage, voters.includes(id) ? 1 : 0), applied: [], readStates: [], droppedReads: [], appliedIndex: voters.includes(id) ? 1 : 0 };
      this.nodes.set(id, node);
    }
  }

  private makeRaw(id: NodeId, storage: MemoryLogStorage, applied: number): RawNode {
    return new RawNode({
      id,
      storage,
      rng: new Rng(id * 7919),
      applied,
      electionTicks: 10,
      heartbeatTicks: 1,
      ...this.overrides,
    });
  }

  node(id: NodeId): HarnessNode {
    const node = this.nodes.get(id);
    if (!node) throw new Error(`no node ${id}`);
    return node;
  }

  status(id: NodeId) {
    return this.node(id).raw.status();
  }

  /** Persist, send, apply and advance every pending Ready of one node. */
  flush(id: NodeId): void {
    const node = this.node(id);
    while (node.raw.hasReady()) {
      const ready = node.raw.ready();
      if (ready.snapshot) {
        node.storage.applySnapshot(ready.snapshot);
        node.appliedIndex = ready.snapshot.meta.index;
      }
      node.storage.append(ready.entries);
      if (ready.hardState) node.storage.setHardState(ready.hardState);
      for (const message of ready.messages) {
        this.sentCount++;
        if (!this.cut.has(`${message.from}>${message.to}`)) this.queue.push(message);
      }
      for (const entry of ready.committedEntries) {
        if (entry.type === EntryType.Normal && entry.data.length > 0) node.applied.push(entry);
        node.appliedIndex = entry.index;
      }
      node.readStates.push(...ready.readStates);
      node.droppedReads.push(...ready.droppedReads);
      node.raw.advance(ready);
    }
  }

  flushAll(): void {
    for (const id of this.nodes.keys()) this.flush(id);
  }

  /** Delivers queued messages (optionally only those matching) and flushes receivers. */
  deliver(filter: (message: Message) => boolean = () => true): number {
    const now = this.queue.filter(filter);
    this.queue = this.queue.filter((message) => !filter(message));
    for (const message of now) {
      if (this.cut.has(`${message.from}>${message.to}`)) continue;
      const node = this.nodes.get(message.to);
      if (!node) continue;
      node.raw.step(message);
      this.flush(message.to);
    }
    return now.length;
  }

  /** Delivers until no message is left (bounded). */
  stabilize(maxRounds = 100): void {
    this.flushAll();
    for (let round = 0; round < maxRounds; round++) {
      if (this.deliver() === 0) return;
    }
    throw new Error('stabilize: still talking after many rounds');
  }

  drop(filter: (message: Message) => boolean): Message[] {
    const dropped = this.queue.filter(filter);
    this.queue = this.queue.filter((message) => !filter(message));
    return dropped;
  }

  tick(id: NodeId, times = 1): void {
    for (let i = 0; i < times; i++) {
      this.node(id).raw.tick();
      this.flush(id);
    }
  }

  tickAll(times = 1): void {
    for (let i = 0; i < times; i++) for (const id of this.nodes.keys()) this.tick(id);
  }

  /** Ticks everyone and delivers, `times` rounds. */
  run(times: number): void {
    for (let i = 0; i < times; i++) {
      this.tickAll();
      this.deliver();
    }
  }

  campaign(id: NodeId): void {
    this.node(id).raw.campaign();
    this.flush(id);
  }

  propose(id: NodeId, data: string): { index: number; term: number } {
    const result = this.node(id).raw.propose(encoder.encode(data));
    this.flush(id);
    return result;
  }

  /**
   * Proposes `count` entries (v0, v1, ...) at `id` without draining it in between (one loop
   * iteration's proposals), then flushes it once.
   */
  proposeMany(id: NodeId, count: number): void {
    for (let i = 0; i < count; i++) this.node(id).raw.propose(encoder.encode(`v${i}`));
    this.flush(id);
  }

  /** Three voters with node 1 leading and one entry of its term committed everywhere; nothing queued. */
  static led(overrides: Partial<RaftConfig> = {}): Harness {
    const h = new Harness([1, 2, 3], overrides);
    h.campaign(1);
    h.stabilize();
    h.propose(1, 'first');
    h.stabilize();
    h.queue = [];
    return h;
  }

  readIndex(id: NodeId, context: string): void {
    this.node(id).raw.readIndex(context);
    this.flush(id);
  }

  /** Cuts both directions between the two groups. */
  partition(a: NodeId[], b: NodeId[]): void {
    for (const x of a) {
      for (const y of b) {
        this.cut.add(`${x}>${y}`);
        this.cut.add(`${y}>${x}`);
      }
    }
  }

  cutOneWay(from: NodeId, to: NodeId): void {
    this.cut.add(`${from}>${to}`);
  }

  heal(): void {
    this.cut.clear();
  }

  /** Simulates a crash and restart: volatile state is lost, storage survives. */
  restart(id: NodeId): void {
    const node = this.node(id);
    this.queue = this.queue.filter((message) => message.to !== id);
    node.raw = this.makeRaw(id, node.storage, node.appliedIndex);
  }

  /**
   * Replaces node `id` with a new, empty replica under the same id (a host that deleted its
   * replica and opened a fresh one for a later addition), built with `overrides` (a voteFloor).
   */
  reincarnate(id: NodeId, overrides: Partial<RaftConfig> = {}): void {
    const node = this.node(id);
    this.queue = this.queue.filter((message) => message.to !== id);
    const storage = new MemoryLogStorage();
    const raw = new RawNode({ id, storage, rng: new Rng(id * 7919 + 1), electionTicks: 10, heartbeatTicks: 1, ...this.overrides, ...overrides });
    this.nodes.set(id, { ...node, raw, storage, applied: [], readStates: [], droppedReads: [], appliedIndex: 0 });
  }

  leader(): NodeId | undefined {
    for (const [id, node] of this.nodes) if (node.raw.status().role === 'leader') return id;
    return undefined;
  }

  appliedTexts(id: NodeId): string[] {
    return this.node(id).applied.map(text);
  }

  logTerms(id: NodeId): number[] {
    const storage = this.node(id).storage;
    const terms: number[] = [];
    for (let i = storage.firstIndex(); i <= storage.lastIndex(); i++) terms.push(storage.term(i));
    return terms;
  }
}
