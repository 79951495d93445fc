/**
 * The commands the MVCC state machine applies, one per Raft log entry, and what applying them
 * answers. Every command is applied with the log index and the `nowMs` the leader chose when it
 * proposed it; the store turns that into the partition's replicated clock (the entry's time is
 * max(nowMs, the time of the previous entry)), so every replica makes the same decision about
 * expiry and time never moves backwards.
 */
import type { AtollError } from '../errors.js';

/** Write `value` under `key`. With no condition it always succeeds. */
export interface PutOp {
  readonly type: 'put';
  readonly key: string;
  readonly value: Uint8Array;
  /** Expire the key this long after the command's nowMs. Without it (and without keepTtl) the key never expires. */
  readonly ttlMs?: number;
  /** Keep the live key's current expiry, as Redis KEEPTTL (cannot be combined with ttlMs). */
  readonly keepTtl?: boolean;
  /** Only if the key is absent (missing, deleted or expired). */
  readonly ifAbsent?: boolean;
  /** Only if the key is live. */
  readonly ifPresent?: boolean;
  /** Only if the key's modRevision equals this (0 means "absent"): compare-and-swap. */
  readonly ifModRevision?: number;
  /** Only if the key is live and holds exactly these bytes. */
  readonly ifValue?: Uint8Array;
  /** Report the live version this write replaced. */
  readonly returnPrevious?: boolean;
  /**
   * Attach the key to this lease of the partition (its local id, lease-table.ts): the key is
   * deleted when the lease is revoked or expires. A put without it detaches the key from any
   * lease; increment and extend keep the attachment; a delete or an expiry ends it.
   * LEASE_NOT_FOUND when the lease does not exist or belongs to another tenant.
   */
  readonly lease?: number;
  /**
   * A fencing token (a lock's token: the revision that granted it). The put fails with FENCED
   * and changes nothing when the live key was written with a higher token (KeyVersion.fence);
   * otherwise the key keeps max(its fence, ifFence) as its fence (fence.ts).
   */
  readonly ifFence?: number;
}

/** Delete `key`: a tombstone version at the new revision. Deleting an absent key writes nothing. */
export interface DeleteOp {
  readonly type: 'delete';
  readonly key: string;
  readonly ifModRevision?: number;
  readonly ifValue?: Uint8Array;
  readonly returnPrevious?: boolean;
}

/**
 * Add `delta` to the signed 64-bit decimal integer stored under `key` (an absent key counts as 0)
 * and store the sum as decimal text. Fails with NOT_INTEGER or OVERFLOW and changes nothing when
 * the stored text is not a canonical int64 or the sum leaves the int64 range. The key keeps its
 * expiry unless `ttlMs` sets a new one (counters with a window rely on INCR keeping the TTL).
 * It always writes a new version, even with delta 0 (which creates "0" under a missing key).
 */
export interface IncrementOp {
  readonly type: 'increment';
  readonly key: string;
  readonly delta: bigint;
  readonly ttlMs?: number;
}

/** Give a live key a new expiry, nowMs + ttlMs. Its value is kept; it gets a new version. */
export interface ExtendOp {
  readonly type: 'extend';
  readonly key: string;
  readonly ttlMs: number;
}

export type WriteOp = PutOp | DeleteOp | IncrementOp | ExtendOp;

/** Several writes on distinct keys, applied all-or-nothing at one revision. */
export interface BatchCommand {
  readonly type: 'batch';
  readonly writes: WriteOp[];
}

export type TxnIsolation = 'snapshot' | 'serializable';

/**
 * A transaction that read at `snapshotRevision` and now commits its writes in one log entry.
 * First committer wins: it aborts with TXN_CONFLICT if any key it writes has a version newer than
 * the snapshot, and under 'serializable' also if any key it read, or any key under a prefix it
 * read, has one. Expiry is time, not a revision, so a key that merely expired is no conflict.
 */
export interface TxnCommand {
  readonly type: 'txn';
  readonly snapshotRevision: number;
  readonly isolation: TxnIsolation;
  readonly readKeys: string[];
  readonly readPrefixes: string[];
  readonly writes: WriteOp[];
  /**
   * Opaque bytes recorded with the result under the entry's request id (a script's return value),
   * so a retry of the request gets them back; at most limits.maxTxnNoteBytes.
   */
  readonly note?: Uint8Array;
  /**
   * The transaction's snapshot clock (its handle's start time, Unix epoch ms). When present, the
   * writes are decided as the transaction saw them: liveness, keepTtl, an increment's kept expiry
   * and ttlMs all count from this time, so they become absolute expiry times of the snapshot (a key
   * that expires between snapshot and commit keeps that past expiry instead of losing it). Under
   * 'serializable' a read key live at this time whose expiry has passed by the commit's time is
   * a conflict. Absent (entries of older nodes): the entry's own time is used.
   */
  readonly snapshotTimeMs?: number;
}

/**
 * Physically remove expired keys: for each key whose newest version is a value that has expired
 * at the entry's time, write a tombstone at the entry's revision (one revision for all); other
 * keys (rewritten, extended, deleted meanwhile) are left alone. The leader proposes it for keys
 * it sees expired (maintenance); apply checks again against the replicated clock, so every
 * replica deletes the same keys. Compaction then removes the versions physically.
 */
export interface ExpireCommand {
  readonly type: 'expire';
  /** Distinct keys, at most limits.maxBatchOps. */
  readonly keys: string[];
}

/**
 * Raise the compaction floor: reads below `belowRevision` fail with COMPACTED from then on, and
 * versions no reader at or above it needs are removed. It goes through the log, not a local call,
 * because the floor decides transaction outcomes, so every replica must move it at the same index.
 */
export interface CompactCommand {
  readonly type: 'compact';
  readonly belowRevision: number;
}

/**
 * Grant a lease in this partition. Its id is the entry's log index. `key` (an internal key of
 * the partition) names the tenant the lease belongs to; nothing is written under it.
 */
export interface LeaseGrantCommand {
  readonly type: 'leaseGrant';
  readonly key: string;
  readonly ttlMs: number;
}

/**
 * End a lease: every key attached to it whose newest version is a value gets a tombstone (reason
 * "lease"), all at one new revision, and the lease is removed. The leader proposes it for a lease
 * whose keepalives stopped (`expired`) or when a client revokes it. LEASE_NOT_FOUND for an
 * unknown lease (changes nothing).
 */
export interface LeaseRevokeCommand {
  readonly type: 'leaseRevoke';
  readonly lease: number;
  readonly expired: boolean;
}

export type Command = WriteOp | BatchCommand | TxnCommand | CompactCommand | ExpireCommand | LeaseGrantCommand | LeaseRevokeCommand;
export type CommandType = Command['type'];

export interface ApplyContext {
  /** The Raft log index of the entry. */
  readonly index: number;
  /**
   * The leader's clock when it proposed the entry, in Unix epoch milliseconds. The entry is
   * applied at max(nowMs, the partition's applied time) (MvccStore.appliedTimeMs).
   */
  readonly nowMs: number;
  /**
   * The client's id for this request, the same on every retry of it (Raft thesis §6.3): an
   * opaque text of 1 to 64 UTF-8 bytes (validateRequestId). When the partition has recorded a
   * result for it, the entry is not applied again and that result is returned (`duplicate`).
   * A timestamped id (request-id.ts) that is not recorded but no newer than the newest evicted
   * one fails with REQUEST_ID_EXPIRED instead of applying (it may have applied before).
   * It travels in the log entry next to the command, so every replica decides alike. Compact
   * commands ignore it: raising the compaction floor twice is the same as raising it once.
   */
  readonly requestId?: string;
}

/** A live version of a key, as reads and write results report it. */
export interface KeyVersion {
  readonly key: string;
  readonly value: Uint8Array;
  /** The revision of the write that created the key (after it was last absent). */
  readonly createRevision: number;
  /** The revision of the write that produced this version. */
  readonly modRevision: number;
  /** Writes since creation: 1 for the creating write. */
  readonly version: number;
  /** When the key stops being visible; absent when it never expires. */
  readonly expiresAtMs?: number;
  /** The highest fencing token a fenced put wrote the live key with (fence.ts); absent: none. */
  readonly fence?: number;
}

/** What one write of a command did. */
export interface WriteResult {
  readonly type: WriteOp['type'];
  readonly key: string;
  /** Whether this write's own conditions held (extend: whether the key was live). */
  readonly conditionHeld: boolean;
  /** The key after the write, for put, increment and extend that took effect. */
  readonly current?: KeyVersion;
  /** With returnPrevious: the live version before the write, or null when it was absent. */
  readonly previous?: KeyVersion | null;
  /** For delete: whether a live key was deleted. */
  readonly deleted?: boolean;
  /** For increment: the new counter value. */
  readonly counter?: bigint;
}

/**
 * What applying one log entry did.
 *
 * Revisions: the partition revision rises by exactly 1 for an entry that writes at least one
 * version (all writes of a batch or transaction share it). An entry whose condition failed, that
 * failed with an error, or that changed nothing (deleting an absent key) creates no revision and
 * reports the current one.
 */
export interface ApplyResult {
  readonly index: number;
  /** The entry's new revision if it wrote, else the partition's current revision. */
  readonly revision: number;
  /** True when every condition held and no error occurred (the writes took effect). */
  readonly applied: boolean;
  /** True when the index had already been applied: nothing was done (replay after restart). */
  readonly replayed: boolean;
  /**
   * True when the entry repeated a request id the partition had already recorded: nothing but
   * the applied index was written, and revision, applied, error and writes are those of the
   * first entry with that id (its index is `originalIndex`); `index` is still this entry's.
   * MvccStore.apply always sets it; it is optional so results built elsewhere (a no-op entry)
   * need not, and absent means false.
   */
  readonly duplicate?: boolean;
  /** With duplicate: the index of the entry whose result this is. */
  readonly originalIndex?: number;
  /** The operating error the entry failed with; nothing but the applied index was written. */
  readonly error?: AtollError;
  /** One result per write, in command order (empty for compact, replays and errors). */
  readonly writes: WriteResult[];
  /** A transaction's note (TxnCommand.note), also when answered from the dedup record. */
  readonly note?: Uint8Array;
  /** For leaseGrant: the new lease's local id (the entry's index). */
  readonly leaseId?: number;
}
