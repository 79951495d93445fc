/**
 * Linearizability of a register-per-key workload: `read` (returns the value, null when absent),
 * `write v` and `cas {expected, next}` (returns true if it swapped). A history is linearizable if
 * every operation can be given one instant inside its [invoke, complete] interval so that, taken
 * in that order, the operations behave like a single register.
 *
 * Registers are independent objects, and linearizability is local (Herlihy & Wing 1990, the
 * locality theorem), so each key is checked on its own, as Porcupine does; that keeps each search
 * small. Per key the search is Wing & Gong's, with Lowe's memoization ("Testing for
 * linearizability", 2017): walk the time-ordered list of call and return events; at a call, try
 * to linearize that operation now (if the register allows it) and remove it from the list; at a
 * return whose operation is not yet linearized, the current prefix is a dead end, so undo the
 * last choice and try the next call. A cache of (set of linearized operations, register value)
 * skips any configuration reached before, since what can follow depends only on those two.
 * (The cache is a little stronger than that; see `push`.)
 *
 * Outcomes: a failed operation never took effect and is dropped, as are reads that did not
 * return ok (they observed nothing). An indeterminate ('info') write or cas may take effect at any
 * time after its invoke, or never: its return is placed at infinity, so it never forces a choice,
 * and the search succeeds once every ok operation is placed, whatever info operations remain.
 *
 * Before searching, a shortcut convicts a read of an overwritten value outright when every write
 * writes a distinct value (`findOverwrittenRead`). Two reductions keep the search small without
 * changing its answer. Each is argued where it is applied, and
 * test/chaos/checkers/register-cross-check.test.ts compares the whole against a brute-force checker:
 * - A read (or a cas that answered false) that fits the current value is taken at once, with no
 *   branching (`forcedReadOnly`).
 * - Values that no operation observes are one value, and info operations writing such a value
 *   are "spares", tried only where they can matter (`partition`). A partition leaves hundreds of
 *   timed-out writes; without this each would stay concurrent with everything after it.
 */
import assert from 'node:assert/strict';
import { HistoryError, describeOperation, formatValue, maybeCasInput, valueKey, type Operation } from '../history.js';
import type { InvalidVerdict, UnknownVerdict, ValidVerdict } from './verdict.js';

export interface RegisterCheckOptions {
  /** What every register holds before its first write. Default null (absent). */
  readonly initialValue?: unknown;
  /**
   * The search on one key gives up, answering 'unknown', after caching this many configurations.
   * Each costs a short string in memory (tens of bytes), so the default bounds memory too.
   */
  readonly maxExploredStates?: number;
}

export const defaultMaxExploredStates = 1_000_000;

export type RegisterVerdict =
  | ValidVerdict
  | (InvalidVerdict & { readonly key: string })
  | (UnknownVerdict & { readonly key: string });

/** One key's verdict with the work it took, for tests and benchmarks. */
export type RegisterKeyResult = RegisterVerdict & {
  readonly key: string;
  /** Distinct (linearized set, value) configurations the search cached. */
  readonly exploredStates: number;
  /** Operations in the event list: ok operations, and info ones whose value someone observed. */
  readonly searchedOperations: number;
  /** Info operations whose value nobody observed, tried only where they can matter. */
  readonly spareOperations: number;
};

/** The functions this checker reads; any other operation is ignored. */
export const registerFunctions = ['read', 'write', 'cas'] as const;

/**
 * Checks every key's operations in order of first appearance and stops at the first key that is
 * not linearizable. A key whose search hit the bound makes the answer 'unknown' unless a later
 * key is proven invalid. Throws a HistoryError if an operation's input or output has the wrong shape.
 */
export function checkLinearizableRegister(operations: readonly Operation[], options: RegisterCheckOptions = {}): RegisterVerdict {
  let unknown: RegisterVerdict | undefined;
  for (const [key, keyOperations] of groupByKey(operations)) {
    const result = checkRegisterKey(key, keyOperations, options);
    if (result.valid === false) return { valid: false, key, explanation: result.explanation };
    if (result.valid === 'unknown') unknown ??= { valid: 'unknown', key, reason: result.reason };
  }
  return unknown ?? { valid: true };
}

/** Checks one key's operations (all of which must be on that key); like checkLinearizableRegister, ignores all but read, write and cas. */
export function checkRegisterKey(key: string, operations: readonly Operation[], options: RegisterCheckOptions = {}): RegisterKeyResult {
  const maxExploredStates = options.maxExploredStates ?? defaultMaxExploredStates;
  assert.ok(Number.isSafeInteger(maxExploredStates) && maxExploredStates > 0, 'maxExploredStates must be a positive integer');
  const values = new ValueTable();
  const initialState = values.id(options.initialValue ?? null);
  const registerOperations = operations.filter((op) => (registerFunctions as readonly string[]).includes(op.f));
  const searchOps = toSearchOps(registerOperations, values);
  const prepared = partition(searchOps, initialState, values);
  const stale = findOverwrittenRead(searchOps, initialState);
  if (stale !== undefined) {
    return {
      valid: false,
      key,
      exploredStates: 0,
      searchedOperations: prepared.listOps.length,
      spareOperations: prepared.spareClasses.reduce((sum, spareClass) => sum + spareClass.members.length, 0),
      explanation: explainOverwrittenRead(key, stale),
    };
  }
  const search = new Search(prepared, maxExploredStates);
  const outcome = search.run();
  const common = {
    key,
    exploredStates: outcome.exploredStates,
    searchedOperations: prepared.listOps.length,
    spareOperations: prepared.spareClasses.reduce((sum, spareClass) => sum + spareClass.members.length, 0),
  };
  switch (outcome.kind) {
    case 'linearizable':
      return { valid: true, ...common };
    case 'gave-up':
      return {
        valid: 'unknown',
        ...common,
        reason: `key ${JSON.stringify(key)}: the linearizability search gave up after ${outcome.exploredStates} states on ${prepared.listOps.length} operations (raise maxExploredStates or lower the concurrency)`,
      };
    case 'not-linearizable':
      return { valid: false, ...common, explanation: explainFailure(key, search, values, outcome.deepest) };
  }
}

function groupByKey(operations: readonly Operation[]): Map<string, Operation[]> {
  const byKey = new Map<string, Operation[]>();
  for (const operation of operations) {
    if (!(registerFunctions as readonly string[]).includes(operation.f)) continue;
    const key = operation.key ?? '';
    let list = byKey.get(key);
    if (list === undefined) byKey.set(key, (list = []));
    list.push(operation);
  }
  return byKey;
}

// ------------------------------------------------------------------ preparing the operations

/** Register values as small integers, so the model state and the cache keys stay cheap. */
class ValueTable {
  private readonly ids = new Map<string, number>();
  private readonly values: unknown[] = [];
  /** The id standing for every value no operation observes, once `unobserved()` made it. */
  private unobservedId = -1;

  id(value: unknown): number {
    const text = valueKey(value);
    let id = this.ids.get(text);
    if (id === undefined) {
      id = this.values.length;
      this.ids.set(text, id);
      this.values.push(value);
    }
    return id;
  }

  unobserved(): number {
    if (this.unobservedId < 0) {
      this.unobservedId = this.values.length;
      this.values.push(undefined);
    }
    return this.unobservedId;
  }

  describe(id: number): string {
    return id === this.unobservedId ? 'a value no operation observed' : formatValue(this.values[id]);
  }
}

/** What an operation requires of the register and does to it. */
const Kind = {
  /** Returned `value`: legal only when the register holds it. */
  Read: 0,
  /** Sets the register to `value`. */
  Write: 1,
  /** A cas that swapped (or, if indeterminate, would have): legal when the register holds `expected`. */
  CasSwap: 2,
  /** A cas that answered false: legal when the register does not hold `expected`; changes nothing. */
  CasMiss: 3,
} as const;
type Kind = (typeof Kind)[keyof typeof Kind];

interface SearchOp {
  readonly source: Operation;
  readonly kind: Kind;
  /** Read: the value returned. Write and CasSwap: the value written. CasMiss: unused (-1). */
  readonly value: number;
  /** CasSwap and CasMiss: the value compared against; -1 otherwise. */
  readonly expected: number;
  /** `value` before unobserved values were merged, for explanations. */
  readonly shownValue: number;
  /** True for 'ok' operations, which must be linearized; false for 'info', which may be. */
  readonly determinate: boolean;
  readonly invokeMs: number;
  readonly completeMs: number;
}

function toSearchOps(operations: readonly Operation[], values: ValueTable): SearchOp[] {
  const searchOps: SearchOp[] = [];
  for (const operation of operations) {
    if (operation.status === 'fail') continue; // Definitely never took effect.
    const determinate = operation.status === 'ok';
    const base = { source: operation, determinate, invokeMs: operation.invokeMs, completeMs: operation.completeMs };
    switch (operation.f) {
      case 'read': {
        if (!determinate) continue; // An unanswered read observed nothing.
        if (operation.output === undefined) malformed(operation, 'an ok read must return a value (null when absent)');
        const value = values.id(operation.output);
        searchOps.push({ ...base, kind: Kind.Read, value, shownValue: value, expected: -1 });
        break;
      }
      case 'write': {
        if (operation.input === undefined) malformed(operation, 'a write needs a value');
        const value = values.id(operation.input);
        searchOps.push({ ...base, kind: Kind.Write, value, shownValue: value, expected: -1 });
        break;
      }
      case 'cas': {
        const input = maybeCasInput(operation.input) ?? malformed(operation, 'a cas needs { expected, next } (or [expected, next])');
        if (determinate && typeof operation.output !== 'boolean') malformed(operation, 'an ok cas must return true or false');
        const swapped = !determinate || operation.output === true;
        const value = swapped ? values.id(input.next) : -1;
        searchOps.push({ ...base, kind: swapped ? Kind.CasSwap : Kind.CasMiss, value, shownValue: value, expected: values.id(input.expected) });
        break;
      }
      default:
        assert.fail(`not a register operation: ${operation.f}`);
    }
  }
  return searchOps;
}

function malformed(operation: Operation, problem: string): never {
  throw new HistoryError('MALFORMED_OPERATION', `op ${operation.op} (${operation.f}): ${problem}`);
}

// ------------------------------------------------------------------ the shortcut

/** A read that no order can explain, found without a search. */
interface OverwrittenRead {
  readonly read: SearchOp;
  /** The op that wrote the value read; undefined if it is the initial value or nobody wrote it. */
  readonly writer: SearchOp | undefined;
  /** An op that wrote another value after the writer completed and completed before the read began. */
  readonly overwriter: SearchOp | undefined;
}

/**
 * A sound shortcut for the commonest violation, a read of a value already overwritten (or never
 * written), which also explains itself better than a failed search. It applies when every write
 * and swap writes a distinct value, other than the initial one, as the chaos workload's writes do;
 * otherwise it finds nothing and the search decides.
 *
 * With distinct values, a read of v must come after the one op that wrote v (or, for the initial
 * value, after nothing) with no other write between. If that writer completed before some ok
 * write or swap began, and that one completed before the read began, the other write lies between
 * them in every order: no order explains the read. An indeterminate writer may take effect
 * arbitrarily late, so it never convicts. Of the reads convicted, the earliest invoked is reported.
 */
function findOverwrittenRead(searchOps: readonly SearchOp[], initialState: number): OverwrittenRead | undefined {
  const writerOf = new Map<number, SearchOp>();
  for (const op of searchOps) {
    if (op.kind !== Kind.Write && op.kind !== Kind.CasSwap) continue;
    if (op.value === initialState || writerOf.has(op.value)) return undefined;
    writerOf.set(op.value, op);
  }
  // Ok writes and swaps by invoke time; earliestFrom[i] is the one of them from i on that completed first.
  const overwriters = searchOps.filter((op) => op.determinate && (op.kind === Kind.Write || op.kind === Kind.CasSwap));
  overwriters.sort((a, b) => a.invokeMs - b.invokeMs);
  const earliestFrom: SearchOp[] = new Array<SearchOp>(overwriters.length);
  for (let i = overwriters.length - 1; i >= 0; i--) {
    const later = earliestFrom[i + 1];
    earliestFrom[i] = later !== undefined && later.completeMs < overwriters[i]!.completeMs ? later : overwriters[i]!;
  }
  let found: OverwrittenRead | undefined;
  for (const read of searchOps) {
    if (read.kind !== Kind.Read || (found !== undefined && found.read.invokeMs <= read.invokeMs)) continue;
    const writer = writerOf.get(read.value);
    if (writer === undefined && read.value !== initialState) {
      found = { read, writer: undefined, overwriter: undefined };
      continue;
    }
    if (writer !== undefined && !writer.determinate) continue;
    const afterMs = writer === undefined ? -Infinity : writer.completeMs;
    const first = firstInvokedAfter(overwriters, afterMs);
    const overwriter = first < overwriters.length ? earliestFrom[first]! : undefined;
    if (overwriter !== undefined && overwriter.completeMs < read.invokeMs) found = { read, writer, overwriter };
  }
  return found;
}

/** The index of the first op (sorted by invoke) invoked strictly after `afterMs`. */
function firstInvokedAfter(sorted: readonly SearchOp[], afterMs: number): number {
  let low = 0;
  let high = sorted.length;
  while (low < high) {
    const middle = (low + high) >> 1;
    if (sorted[middle]!.invokeMs <= afterMs) low = middle + 1;
    else high = middle;
  }
  return low;
}

function explainOverwrittenRead(key: string, { read, writer, overwriter }: OverwrittenRead): string {
  const head = `key ${JSON.stringify(key)} is not linearizable: ${describeOperation(read.source)}`;
  if (overwriter === undefined) return `${head} returned a value that no operation wrote.`;
  if (writer === undefined) {
    return `${head} returned the initial value, but ${describeOperation(overwriter.source)} had already replaced it: it completed before the read began.`;
  }
  return (
    `${head} returned a value already overwritten: it was written by ${describeOperation(writer.source)}, ` +
    `then ${describeOperation(overwriter.source)} began after that write completed and completed before the read began.`
  );
}

/** Info operations that write the unobserved value and compare against the same `expected`. */
interface SpareClass {
  readonly kind: Kind;
  readonly expected: number;
  /** In invoke order. Invariant: the linearized members are always a prefix of this list. */
  readonly members: readonly SearchOp[];
}

interface Prepared {
  /** Ordered by invoke time (history order among equal times). */
  readonly listOps: readonly SearchOp[];
  readonly spareClasses: readonly SpareClass[];
  readonly initialState: number;
  /** The initial value before merging, for explanations. */
  readonly shownInitialState: number;
}

/**
 * Merges unobserved values and sets spares apart.
 *
 * A value is observed if a read returned it or a cas compared against it. Every unobserved value
 * behaves the same for every operation (no read can return it, no swap expects it, every false
 * cas accepts it), so they all become one value, U: exact, and it lets the cache merge
 * configurations that differ only in which unobserved value the register holds.
 *
 * An info operation that writes U (a write, or a swap to it) is a spare. Spares are kept out of
 * the event list and, in any order that works, can be moved to where they matter or removed:
 * after a spare takes effect the register holds U, so the next operations until the next write
 * can only be false cas (nothing else accepts U). If none of those needs U (its expected value is
 * the one the spare overwrote), removing the spare changes nothing anyone sees; otherwise moving
 * the spare to just before the first that does changes nothing either (the ones before it accept
 * the old value too; a spare never has to precede anything, having no completion). So the search
 * tries a spare only just before a false cas that is available and blocked by the current value.
 * Spares of one class are interchangeable, and an earlier-invoked one can stand wherever a later
 * one stood, so only the first unused member of a class is tried: the linearized members form a
 * prefix, and the cache key needs only their count.
 */
function partition(searchOps: readonly SearchOp[], initialValue: number, values: ValueTable): Prepared {
  const observed = new Set<number>();
  for (const op of searchOps) {
    if (op.kind === Kind.Read) observed.add(op.value);
    else if (op.kind === Kind.CasSwap || op.kind === Kind.CasMiss) observed.add(op.expected);
  }
  const merge = (value: number): number => (observed.has(value) ? value : values.unobserved());
  const listOps: SearchOp[] = [];
  const spareClasses = new Map<string, { kind: Kind; expected: number; members: SearchOp[] }>();
  for (const op of searchOps) {
    const writes = op.kind === Kind.Write || op.kind === Kind.CasSwap;
    const merged = writes ? { ...op, value: merge(op.value) } : op;
    if (op.determinate || !writes || observed.has(op.value)) {
      listOps.push(merged);
      continue;
    }
    const classKey = `${op.kind}:${op.expected}`;
    let spareClass = spareClasses.get(classKey);
    if (spareClass === undefined) spareClasses.set(classKey, (spareClass = { kind: op.kind, expected: op.expected, members: [] }));
    spareClass.members.push(merged);
  }
  // Array.prototype.sort is stable, so equal invoke times keep history order.
  const byInvoke = (a: SearchOp, b: SearchOp): number => a.invokeMs - b.invokeMs;
  listOps.sort(byInvoke);
  for (const spareClass of spareClasses.values()) spareClass.members.sort(byInvoke);
  return { listOps, spareClasses: [...spareClasses.values()], initialState: merge(initialValue), shownInitialState: initialValue };
}

// ------------------------------------------------------------------ the search

/** The deepest dead end the search met: what the explanation of a failure describes. */
interface DeadEnd {
  /** How many operations were linearized. */
  readonly depth: number;
  /** The register's value after them (as written, before merging unobserved values). */
  readonly shownState: number;
  /** The operation whose return was reached before it could be linearized. */
  readonly blocked: SearchOp;
  /** The last few linearized operations, oldest first. */
  readonly recent: readonly SearchOp[];
  /** Operations that could have gone next (calls before the blocking return), up to a bound. */
  readonly candidates: readonly SearchOp[];
  readonly candidateCount: number;
}

type SearchOutcome =
  | { readonly kind: 'linearizable'; readonly exploredStates: number }
  | { readonly kind: 'gave-up'; readonly exploredStates: number }
  | { readonly kind: 'not-linearizable'; readonly exploredStates: number; readonly deepest: DeadEnd };

const NIL = -1;
/** The walk position meaning "a new configuration: look for a forced op first". */
const FRESH = -2;
/** Walk positions -3, -4, ... mean "try spare class 0, 1, ... next". */
const spareSlot = (spareClass: number): number => -3 - spareClass;
const spareOfSlot = (slot: number): number => -3 - slot;

const Pushed = { Yes: 0, No: 1, GaveUp: 2 } as const;
type Pushed = (typeof Pushed)[keyof typeof Pushed];

const recentShown = 6;
const candidatesShown = 8;

/**
 * The event list is a doubly linked list over entries 2i (call of list op i) and 2i + 1 (its
 * return), in time order, with calls before returns at equal times (so equal times count as
 * concurrent) and calls in op index order. Linearizing op i unlinks both of its entries; undoing
 * relinks them in reverse order, which restores the list exactly (Knuth's dancing links), since
 * undo is strictly last-in first-out.
 *
 * Stack entries name an op: i < listOps.length for list op i, listOps.length + j for the j-th
 * spare (all classes' members, concatenated).
 */
class Search {
  readonly ops: readonly SearchOp[];
  private readonly listCount: number;
  private readonly spareClasses: readonly SpareClass[];
  /** For each spare op (offset by listCount): its class. */
  private readonly spareClassOf: Int32Array;
  /** For each spare class: the op index (into `ops`) of its first member. */
  private readonly spareBase: Int32Array;
  /** For each spare class: how many members are linearized. */
  private readonly spareUsed: Int32Array;
  /** The classes with spares in use and their counts, as pairs: [class, count, class, count, ...]. */
  private spareCounts: readonly number[] = [];
  private readonly head: number;
  private readonly next: Int32Array;
  private readonly prev: Int32Array;
  /** Configurations pushed so far: list part (see cacheKey) -> the spare counts it was pushed with. */
  private readonly cache = new Map<string, (readonly number[])[]>();
  private explored = 0;
  // The DFS stack: the op linearized at each depth, the state before it, and the largest list op
  // index linearized up to and including it (-1 if none).
  private readonly stackOp: Int32Array;
  private readonly stackState: Int32Array;
  private readonly stackMaxIndex: Int32Array;
  /** 1 where the op was forced (see forcedReadOnly), so undoing it undoes its parent too. */
  private readonly stackForced: Uint8Array;
  private depth = 0;
  private state: number;
  private readonly shownInitialState: number;
  private remainingDeterminate: number;
  private deepest: DeadEnd | undefined;

  constructor(
    prepared: Prepared,
    private readonly maxExploredStates: number,
  ) {
    this.listCount = prepared.listOps.length;
    this.spareClasses = prepared.spareClasses;
    this.ops = [...prepared.listOps, ...prepared.spareClasses.flatMap((spareClass) => spareClass.members)];
    const n = this.ops.length;
    this.spareClassOf = new Int32Array(n - this.listCount);
    this.spareBase = new Int32Array(this.spareClasses.length);
    this.spareUsed = new Int32Array(this.spareClasses.length);
    let base = this.listCount;
    this.spareClasses.forEach((spareClass, index) => {
      this.spareBase[index] = base;
      this.spareClassOf.fill(index, base - this.listCount, base - this.listCount + spareClass.members.length);
      base += spareClass.members.length;
    });
    this.head = 2 * this.listCount;
    this.next = new Int32Array(2 * this.listCount + 1);
    this.prev = new Int32Array(2 * this.listCount + 1);
    this.stackOp = new Int32Array(n);
    this.stackState = new Int32Array(n);
    this.stackMaxIndex = new Int32Array(n);
    this.stackForced = new Uint8Array(n);
    this.state = prepared.initialState;
    this.shownInitialState = prepared.shownInitialState;
    this.remainingDeterminate = prepared.listOps.filter((op) => op.determinate).length;
    this.link();
  }

  private link(): void {
    const entries = Array.from({ length: 2 * this.listCount }, (_, entry) => entry);
    entries.sort((a, b) => this.entryTime(a) - this.entryTime(b) || (a & 1) - (b & 1) || (a >> 1) - (b >> 1));
    let last = this.head;
    this.prev[this.head] = NIL;
    for (const entry of entries) {
      this.next[last] = entry;
      this.prev[entry] = last;
      last = entry;
    }
    this.next[last] = NIL;
  }

  private entryTime(entry: number): number {
    const op = this.ops[entry >> 1]!;
    // Infinity - Infinity is NaN in the comparator, so map info returns to the largest finite time.
    return (entry & 1) === 0 ? op.invokeMs : Math.min(op.completeMs, Number.MAX_VALUE);
  }

  run(): SearchOutcome {
    let entry = FRESH;
    // Every iteration moves `entry` forward, pushes or pops, and each configuration is pushed at
    // most once (the cache), so the loop ends; the state bound makes it end soon enough.
    for (;;) {
      if (this.remainingDeterminate === 0) return { kind: 'linearizable', exploredStates: this.explored };
      let pushed: Pushed = Pushed.No;
      if (entry === FRESH) {
        const forced = this.forcedReadOnly();
        if (forced === NIL) {
          entry = this.next[this.head]!;
          continue;
        }
        pushed = this.push(forced, step(this.ops[forced]!, this.state), true);
        if (pushed === Pushed.No) {
          // Seen before, so it failed; then so does this configuration (see forcedReadOnly).
          entry = this.backtrack();
          if (entry === NIL) return this.notLinearizable();
          continue;
        }
      } else if (entry <= spareSlot(0)) {
        const spareClass = spareOfSlot(entry);
        if (spareClass === this.spareClasses.length) {
          entry = this.deadEnd();
          if (entry === NIL) return this.notLinearizable();
          continue;
        }
        const candidate = this.nextSpare(spareClass);
        if (candidate !== NIL) pushed = this.push(candidate, step(this.ops[candidate]!, this.state), false);
        if (pushed === Pushed.No) entry = spareSlot(spareClass + 1);
      } else if ((entry & 1) === 0) {
        const op = this.ops[entry >> 1]!;
        // A read-only op here cannot take effect: forcedReadOnly found none that could.
        const after = isReadOnly(op) ? NIL : step(op, this.state);
        if (after !== NIL) pushed = this.push(entry >> 1, after, false);
        if (pushed === Pushed.No) entry = this.next[entry]!;
      } else {
        // A return whose op is not linearized: no list op can go next. Only a spare might still
        // help, by unblocking a false cas; list ops are tried first so that configurations
        // without spares are cached first and dominate those with (see push).
        entry = this.spareClasses.length > 0 && this.blockedCasMiss() ? spareSlot(0) : this.deadEnd();
        if (entry === NIL) return this.notLinearizable();
        continue;
      }
      if (pushed === Pushed.GaveUp) return { kind: 'gave-up', exploredStates: this.explored };
      if (pushed === Pushed.Yes) entry = FRESH;
      // Info returns sit after every ok return, so with ok operations left the walk meets a
      // return before it could run off the list.
      assert.notEqual(entry, NIL, 'ran off the event list with ok operations left');
    }
  }

  private notLinearizable(): SearchOutcome {
    assert.ok(this.deepest !== undefined, 'a failed search met a dead end');
    return { kind: 'not-linearizable', exploredStates: this.explored, deepest: this.deepest };
  }

  /** Nothing can go next: remember the deepest such place, and undo. */
  private deadEnd(): number {
    this.noteDeadEnd(this.firstReturn());
    return this.backtrack();
  }

  private firstReturn(): number {
    let entry = this.next[this.head]!;
    while (entry !== NIL && (entry & 1) === 0) entry = this.next[entry]!;
    return entry;
  }

  /**
   * A read or false cas that fits the current value, among the calls before the first return
   * (the ops that may go next), or NIL. Taking it at once is never wrong, so the search need not
   * branch on it: if any order completes this configuration, moving that op to the front of the
   * order still works, since it changes nothing, it fits the current value, and no remaining op
   * completed before it began (all their returns come after its call). So if the configuration
   * with it fails, this one fails too. This turns the many concurrent reads of a busy register
   * from a branching factor into a straight line.
   */
  private forcedReadOnly(): number {
    for (let entry = this.next[this.head]!; entry !== NIL && (entry & 1) === 0; entry = this.next[entry]!) {
      const op = this.ops[entry >> 1]!;
      if (isReadOnly(op) && step(op, this.state) !== NIL) return entry >> 1;
    }
    return NIL;
  }

  /** Whether a false cas that may go next is blocked by the current value: the one place a spare can matter. */
  private blockedCasMiss(): boolean {
    for (let entry = this.next[this.head]!; entry !== NIL && (entry & 1) === 0; entry = this.next[entry]!) {
      const op = this.ops[entry >> 1]!;
      if (op.kind === Kind.CasMiss && op.expected === this.state) return true;
    }
    return false;
  }

  /** The first unused member of a spare class, if it may take effect now (it was invoked before every pending completion). */
  private nextSpare(spareClass: number): number {
    const used = this.spareUsed[spareClass]!;
    if (used === this.spareClasses[spareClass]!.members.length) return NIL;
    const candidate = this.spareBase[spareClass]! + used;
    let firstReturn = this.next[this.head]!;
    while (firstReturn !== NIL && (firstReturn & 1) === 0) firstReturn = this.next[firstReturn]!;
    const deadlineMs = firstReturn === NIL ? Infinity : this.entryTime(firstReturn);
    const op = this.ops[candidate]!;
    return op.invokeMs <= deadlineMs && step(op, this.state) !== NIL ? candidate : NIL;
  }

  /**
   * Linearizes op `index`, leading to `after`, unless that configuration is dominated by one
   * cached before: same list ops and value, and no more spares used in any class. The cached one
   * failed (or is an ancestor still being explored, which cannot happen: from an ancestor with
   * the same list ops, only spares lead here, and a spare leaves the value at U where no false
   * cas is blocked), and it had every option this one has, so this one fails too. Dominance
   * rather than equality matters: a spare used early would otherwise make every later
   * configuration new again.
   */
  private push(index: number, after: number, forced: boolean): Pushed {
    assert.notEqual(after, NIL);
    const spare = index >= this.listCount;
    const previousMax = this.depth === 0 ? NIL : this.stackMaxIndex[this.depth - 1]!;
    const maxIndex = spare ? previousMax : Math.max(previousMax, index);
    this.place(index);
    const key = this.cacheKey(after, maxIndex);
    const bucket = this.cache.get(key);
    const dominated = bucket !== undefined && bucket.some((counts) => this.usesAtLeast(counts));
    if (dominated || this.explored >= this.maxExploredStates) {
      this.unplace(index);
      return dominated ? Pushed.No : Pushed.GaveUp;
    }
    if (bucket === undefined) this.cache.set(key, [this.spareCounts]);
    else bucket.push(this.spareCounts);
    this.explored++;
    this.stackOp[this.depth] = index;
    this.stackState[this.depth] = this.state;
    this.stackMaxIndex[this.depth] = maxIndex;
    this.stackForced[this.depth] = forced ? 1 : 0;
    this.depth++;
    this.state = after;
    if (this.ops[index]!.determinate) this.remainingDeterminate--;
    return Pushed.Yes;
  }

  /** Whether the current configuration uses at least `counts` spares of each class. */
  private usesAtLeast(counts: readonly number[]): boolean {
    for (let i = 0; i < counts.length; i += 2) {
      if (this.spareUsed[counts[i]!]! < counts[i + 1]!) return false;
    }
    return true;
  }

  /**
   * Undoes choices until one that the walk may follow with another, and returns the position to
   * resume from (after the undone op's call, or the next spare class), or NIL if no choice is
   * left. A forced op is no choice: when it fails, the configuration before it has failed too,
   * so undo further.
   */
  private backtrack(): number {
    while (this.depth > 0) {
      this.depth--;
      const undone = this.stackOp[this.depth]!;
      this.state = this.stackState[this.depth]!;
      this.unplace(undone);
      if (this.ops[undone]!.determinate) this.remainingDeterminate++;
      if (this.stackForced[this.depth] === 1) continue;
      return undone < this.listCount ? this.next[2 * undone]! : spareSlot(this.spareClassOf[undone - this.listCount]! + 1);
    }
    return NIL;
  }

  private place(index: number): void {
    if (index < this.listCount) {
      this.unlink(2 * index);
      this.unlink(2 * index + 1);
    } else {
      this.spareUsed[this.spareClassOf[index - this.listCount]!]!++;
      this.updateSpareCounts();
    }
  }

  private unplace(index: number): void {
    if (index < this.listCount) {
      this.relink(2 * index + 1);
      this.relink(2 * index);
    } else {
      this.spareUsed[this.spareClassOf[index - this.listCount]!]!--;
      this.updateSpareCounts();
    }
  }

  /** Spares are rarely placed, so rebuilding this over all classes is cheap enough. */
  private updateSpareCounts(): void {
    const counts: number[] = [];
    this.spareUsed.forEach((used, spareClass) => {
      if (used > 0) counts.push(spareClass, used);
    });
    this.spareCounts = counts;
  }

  /**
   * Identifies the configuration exactly and compactly. The linearized list ops are every list op
   * with index <= maxIndex except those still in the list, and those are the calls at the front
   * of the list: every return still in the list lies after the call of op maxIndex (else that op
   * could not have been linearized before the returning one), and calls are in index order. So
   * the walk costs only the number of such ops, about the concurrency, not the history length.
   * The linearized spares are a prefix of each class, so their counts identify them; they are
   * kept beside the key, for the dominance check in push.
   */
  private cacheKey(state: number, maxIndex: number): string {
    let key = `${state}:${maxIndex}`;
    for (let entry = this.next[this.head]!; entry !== NIL && (entry & 1) === 0 && entry >> 1 < maxIndex; entry = this.next[entry]!) {
      key += `,${entry >> 1}`;
    }
    return key;
  }

  private unlink(entry: number): void {
    const before = this.prev[entry]!;
    const after = this.next[entry]!;
    this.next[before] = after;
    if (after !== NIL) this.prev[after] = before;
  }

  private relink(entry: number): void {
    const before = this.prev[entry]!;
    const after = this.next[entry]!;
    this.next[before] = entry;
    if (after !== NIL) this.prev[after] = entry;
  }

  private noteDeadEnd(returnEntry: number): void {
    if (this.deepest !== undefined && this.deepest.depth >= this.depth) return;
    const recent: SearchOp[] = [];
    for (let depth = Math.max(0, this.depth - recentShown); depth < this.depth; depth++) recent.push(this.ops[this.stackOp[depth]!]!);
    const candidates: SearchOp[] = [];
    let candidateCount = 0;
    for (let entry = this.next[this.head]!; entry !== returnEntry && entry !== NIL; entry = this.next[entry]!) {
      candidateCount++;
      if (candidates.length < candidatesShown) candidates.push(this.ops[entry >> 1]!);
    }
    const blocked = this.ops[returnEntry >> 1]!;
    this.deepest = { depth: this.depth, shownState: this.shownState(), blocked, recent, candidates, candidateCount };
  }

  /** The value the register holds, as the last op that wrote it wrote it. */
  private shownState(): number {
    for (let depth = this.depth - 1; depth >= 0; depth--) {
      const op = this.ops[this.stackOp[depth]!]!;
      if (op.kind === Kind.Write || op.kind === Kind.CasSwap) return op.shownValue;
    }
    return this.shownInitialState;
  }
}

/** Reads and false cas change nothing; both are always ok operations (info reads are dropped). */
function isReadOnly(op: SearchOp): boolean {
  return op.kind === Kind.Read || op.kind === Kind.CasMiss;
}

/** The register after `op` takes effect in `state`, or NIL if it cannot take effect there. */
function step(op: SearchOp, state: number): number {
  switch (op.kind) {
    case Kind.Read:
      return state === op.value ? state : NIL;
    case Kind.Write:
      return op.value;
    case Kind.CasSwap:
      return state === op.expected ? op.value : NIL;
    case Kind.CasMiss:
      return state !== op.expected ? state : NIL;
  }
}

// ------------------------------------------------------------------ explanation

function explainFailure(key: string, search: Search, values: ValueTable, deadEnd: DeadEnd): string {
  const describe = (op: SearchOp): string => describeOperation(op.source);
  const held = values.describe(deadEnd.shownState);
  const lines = [
    `key ${JSON.stringify(key)} is not linearizable: ${describe(deadEnd.blocked)} cannot take effect in time; ` +
      `the longest consistent order places ${deadEnd.depth} of ${search.ops.length} operations and leaves the register at ${held}.`,
  ];
  if (deadEnd.recent.length > 0) {
    const omitted = deadEnd.depth - deadEnd.recent.length;
    lines.push(`The last operations of that order${omitted > 0 ? ` (${omitted} earlier ones omitted)` : ''}:`);
    for (const op of deadEnd.recent) lines.push(`  ${describe(op)}`);
  } else {
    lines.push(`No operation can go first: the register starts at ${held}.`);
  }
  lines.push(`Operations that could go next (${deadEnd.candidateCount}), none of which fits or leads to an order:`);
  for (const op of deadEnd.candidates) lines.push(`  ${describe(op)}`);
  if (deadEnd.candidateCount > deadEnd.candidates.length) lines.push(`  ... ${deadEnd.candidateCount - deadEnd.candidates.length} more`);
  return lines.join('\n');
}
