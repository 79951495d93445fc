/**
 * The rebalancer's replicated record (the system tenant's `membership/rebalance`, in the member
 * table's bucket, so the same partition holds both): whether it is paused, the replica moves it
 * assigned and not yet seen finished, and each partition's preferred leader. One job: the record's
 * shape, its encoding, and the pure decisions of one planning round (nextRound), so they are
 * unit-tested without a node. rebalancer.ts reads, plans and writes it; every partition leader runs
 * the moves assigned to its partitions.
 *
 * Invariants (checkState enforces them on every decoded and produced record):
 * - at most maxInFlightCap moves, at most one per partition, each from one node to another;
 * - leaders has one entry per partition of the founding table (0: no preference) or is empty (not
 *   planned yet); a partition made by a split (its id is its first hash, far past the founding ids,
 *   partition-table.ts) gets no preferred leader: an array indexed by such ids would be billions long;
 * - version grows by one with every change (writes are compare-and-set on the record).
 */
import { AtollError } from '../../errors.js';
import { limits } from '../../limits.js';
import { systemTenant, toInternalKey } from '../../keys/tenant-keys.js';
import { planLeaders, planMoves, type PlanMember, type PlannedMove } from '../../keys/placement.js';

export const rebalanceKey = toInternalKey(systemTenant, 'membership/rebalance');
/** Moves in flight cluster-wide are bounded by the node's option, and never more than this. */
export const maxInFlightCap = 16;
const maxPartitions = 1 << 20;
/** Partition ids a preferred leader is planned for: the founding table's (at most limits.maxPartitionCount). */
const maxLeaderIds = limits.maxPartitionCount;

export interface RebalanceMove extends PlannedMove {
  /** When the planner assigned it (the planner's wall clock; only the planner reads it). */
  readonly sinceMs: number;
}

export interface RebalanceState {
  readonly version: number;
  readonly paused: boolean;
  readonly moves: readonly RebalanceMove[];
  /** Preferred leader per partition (index), 0 for none; empty until the first plan. */
  readonly leaders: readonly number[];
  /** The planner's wall clock when it last assigned a move (the pause between moves). */
  readonly lastStartMs: number;
}

export const initialState: RebalanceState = { version: 0, paused: false, moves: [], leaders: [], lastStartMs: 0 };

export type RebalancerState = 'running' | 'paused' | 'idle';

/** What `atoll cluster status` prints: paused, running (moves assigned), or idle. */
export function stateOf(state: RebalanceState): RebalancerState {
  if (state.paused) return 'paused';
  return state.moves.length > 0 ? 'running' : 'idle';
}

function checkState(state: RebalanceState): void {
  const fail = (why: string): never => {
    throw new Error(`malformed rebalance record: ${why}`);
  };
  const id = (value: unknown): boolean => Number.isSafeInteger(value) && (value as number) >= 0;
  if (!id(state.version) || typeof state.paused !== 'boolean' || !Number.isFinite(state.lastStartMs)) fail('fields');
  if (!Array.isArray(state.moves) || state.moves.length > maxInFlightCap) fail('moves');
  const partitions = new Set<number>();
  for (const move of state.moves) {
    if (!id(move.partition) || !id(move.from) || !id(move.to) || move.from === move.to || !Number.isFinite(move.sinceMs)) fail('move');
    if (partitions.has(move.partition)) fail(`two moves of partition ${move.partition}`);
    partitions.add(move.partition);
  }
  if (!Array.isArray(state.leaders) || state.leaders.length > maxPartitions || !state.leaders.every(id)) fail('leaders');
}

export function encodeState(state: RebalanceState): Uint8Array {
  checkState(state);
  return new TextEncoder().encode(JSON.stringify({ format: 'atoll-rebalance', ...state }));
}

export function decodeState(bytes: Uint8Array): RebalanceState {
  try {
    const parsed = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes)) as RebalanceState & { format?: unknown };
    if (parsed.format !== 'atoll-rebalance') throw new Error('wrong format tag');
    const state: RebalanceState = {
      version: parsed.version,
      paused: parsed.paused,
      moves: parsed.moves.map((m) => ({ partition: m.partition, from: m.from, to: m.to, sinceMs: m.sinceMs })),
      leaders: parsed.leaders,
      lastStartMs: parsed.lastStartMs,
    };
    checkState(state);
    return state;
  } catch (error) {
    throw new AtollError('INTERNAL', `the rebalancer's record is unreadable: ${error instanceof Error ? error.message : String(error)}`);
  }
}

/** One partition as the planner sees it: its voters and learners (applied configuration at its leader), leader and load. */
export interface PartitionView {
  readonly id: number;
  readonly voters: readonly number[];
  readonly learners: readonly number[];
  readonly leader: number;
  /** Requests per second over all replicas (the hot-key tracker's rates). */
  readonly load: number;
}

export interface RoundInput {
  readonly state: RebalanceState;
  /** Every partition, first-hand (its leader's report); the planner does not plan on a partial view. */
  readonly view: readonly PartitionView[];
  readonly members: readonly PlanMember[];
  readonly replicationFactor: number;
  readonly nowMs: number;
  readonly maxInFlight: number;
  /** The pause between two assigned moves. */
  readonly pauseMs: number;
  /** A move not seen finished this long is dropped (its partition's leader gave up; the next plan decides again). */
  readonly moveTimeoutMs: number;
}

/**
 * One planning round: drops assigned moves that finished (the partition's voters have `to` and not
 * `from`), were overtaken (neither), or timed out; then, unless paused or a member is joining or
 * leaving (add-node / remove-node run their own moves), assigns at most one new move (the first of
 * planMoves over the view with the assigned moves counted as done) when fewer than maxInFlight are
 * assigned and pauseMs passed since the last; then, once no move is assigned or planned, plans
 * leaders. Returns the state unchanged (the same object) when nothing changed.
 * Invariants of a new move: its partition has no other move assigned and is not mid-change (RF
 * voters, no learner); planMoves' own (distinct nodes, never fewer zones, never below RF).
 */
export function nextRound(input: RoundInput): RebalanceState {
  const { state, view, members, replicationFactor: rf, nowMs } = input;
  const byId = new Map(view.map((partition) => [partition.id, partition]));
  const kept = state.moves.filter((move) => {
    const partition = byId.get(move.partition);
    if (partition === undefined) return false;
    const hasTo = partition.voters.includes(move.to);
    const hasFrom = partition.voters.includes(move.from) || partition.learners.includes(move.from);
    if (hasTo && !hasFrom) return false; // finished
    if (!hasTo && !hasFrom) return false; // overtaken: another move took `from` away
    return nowMs - move.sinceMs < input.moveTimeoutMs;
  });
  let moves: RebalanceMove[] = kept;
  let lastStartMs = state.lastStartMs;
  const changing = members.some((member) => member.state === 'joining' || member.state === 'leaving');
  const planned = state.paused || changing ? [] : planMoves(afterMoves(view, kept), members);
  if (planned.length > 0 && kept.length < Math.min(input.maxInFlight, maxInFlightCap) && nowMs - state.lastStartMs >= input.pauseMs) {
    const busy = new Set(kept.map((move) => move.partition));
    const next = planned.find((move) => {
      const partition = byId.get(move.partition);
      return !busy.has(move.partition) && partition !== undefined && partition.voters.length === rf && partition.learners.length === 0;
    });
    if (next !== undefined) {
      moves = [...kept, { ...next, sinceMs: nowMs }];
      lastStartMs = nowMs;
    }
  }
  let leaders = state.leaders;
  if (!state.paused && moves.length === 0 && planned.length === 0) {
    const plan = planLeaders(
      view.map((partition) => ({ id: partition.id, replicas: partition.voters, leader: partition.leader })),
      members,
    );
    // Founding ids only (below maxLeaderIds): split partitions keep the leader they elect.
    const size = Math.max(0, ...view.filter((partition) => partition.id < maxLeaderIds).map((partition) => partition.id + 1));
    const next = Array.from({ length: size }, (_, partition) => plan.get(partition) ?? 0);
    if (next.length !== leaders.length || next.some((node, index) => node !== leaders[index])) leaders = next;
  }
  const changed = moves.length !== state.moves.length || moves.some((move, index) => move !== state.moves[index]) || leaders !== state.leaders;
  if (!changed) return state;
  return { version: state.version + 1, paused: state.paused, moves, leaders, lastStartMs };
}

/** The view's replicas with the assigned moves counted as done (what planMoves plans from). */
function afterMoves(view: readonly PartitionView[], moves: readonly PlannedMove[]): Array<{ id: number; replicas: number[]; load: number }> {
  const pending = new Map(moves.map((move) => [move.partition, move]));
  return view.map((partition) => {
    const move = pending.get(partition.id);
    const replicas = partition.voters.filter((node) => move === undefined || node !== move.from);
    if (move !== undefined && !replicas.includes(move.to)) replicas.push(move.to);
    return { id: partition.id, replicas, load: partition.load };
  });
}
