/**
 * Operating errors: the expected failures a caller can cause or meet (bad input, a limit, a
 * conflict, no leader right now). Each carries a stable `code` that never changes between
 * versions; messages may change and are for people. Programming errors are not AtollErrors:
 * they are `node:assert` failures that crash, because continuing would spread the damage.
 */

/** Every operating error code. Add new ones at the end; never rename or reuse one. */
export const atollErrorCodes = [
  'INVALID_KEY',
  'INVALID_ARGUMENT',
  'KEY_TOO_LARGE',
  'VALUE_TOO_LARGE',
  'PREFIX_SPANS_BUCKETS',
  'NOT_INTEGER',
  'OVERFLOW',
  'COMPACTED',
  'FUTURE_REVISION',
  'NOT_LEADER',
  'NO_LEADER',
  'UNAVAILABLE',
  'DEADLINE_EXCEEDED',
  'TXN_CONFLICT',
  'WRONG_PARTITION',
  'RESOURCE_EXHAUSTED',
  'INTERNAL',
  'INVALID_TRANSACTION',
  'TXN_EXPIRED',
  'OUTSIDE_TRANSACTION',
  'SCRIPT_PARSE_ERROR',
  'SCRIPT_ERROR',
  'SCRIPT_LIMIT',
  'UNAUTHENTICATED',
  'PERMISSION_DENIED',
  'QUOTA_EXCEEDED',
  /** A node's bound on queued client work (pending requests, forwards) is reached; retry later. */
  'OVERLOADED',
  /**
   * A resend of a timestamped request id whose result the partition no longer remembers (it left
   * the dedup window): the request may have applied before, and it is not applied again. Nothing
   * changed; find out whether the first attempt applied, or send a new request with a new id.
   */
  'REQUEST_ID_EXPIRED',
  /** A backup directory failed its checks (manifest, a file's SHA-256, a malformed record): restore wrote nothing. */
  'BACKUP_DAMAGED',
  /** `atoll restore` found keys in the target cluster and was not given --force: it wrote nothing. */
  'RESTORE_TARGET_NOT_EMPTY',
  /**
   * A watcher that did not read its changes in time was cancelled; details.resumeRevision is the
   * last revision the server sent. Watch again after the last revision received.
   */
  'WATCH_OVERFLOW',
  /**
   * A node's data directory or flags contradict the cluster descriptor recorded there (another
   * cluster's data, other --partitions...), or a peer presented another cluster's id: refused.
   */
  'CLUSTER_MISMATCH',
  /**
   * A replica move (MoveReplica) was refused and changed nothing: details.reason says why
   * ('already-replica', 'not-replica', 'in-progress', 'too-few-voters').
   */
  'MOVE_REFUSED',
  /** The lease named does not exist: never granted, revoked, expired, or another tenant's. */
  'LEASE_NOT_FOUND',
  /** A key was attached to a lease of another partition: a lease holds keys of its own partition only. */
  'LEASE_WRONG_PARTITION',
  /**
   * A fenced write (if_fence) carried a fencing token older than the one the key was last
   * written with: a newer lock holder has written it, so this (stale) holder's write is refused.
   */
  'FENCED',
  /**
   * A change to the cluster's members (add-node, remove-node, replace-node) was refused and
   * changed nothing: details.reason says why ('duplicate-id', 'id-removed', 'address-in-use',
   * 'unknown-id', 'too-few-members', 'bad-transition', 'conflict'); or a removed node called a
   * peer ('removed').
   */
  'MEMBERSHIP_REFUSED',
  /**
   * The key's hash range moved to another partition (a split): nothing was applied. Retryable:
   * refresh the partition table (ClusterInfo ranges; details.partitionId names the new owner when
   * known) and send the request again.
   */
  'PARTITION_MOVED',
  /**
   * A partition split was refused and changed nothing: details.reason says why
   * ('unknown-partition', 'bad-split-point' (a single bucket cannot split), 'bad-new-id', 'in-progress').
   */
  'SPLIT_REFUSED',
  /**
   * A partition merge was refused and changed nothing: details.reason says why
   * ('not-adjacent', 'leased-keys', and the node's own reasons, docs/architecture.md "Partition merges").
   */
  'MERGE_REFUSED',
  /**
   * `atoll restore --signing-key-file` found the backup's manifest unsigned, or its HMAC not the
   * one the given key makes: the backup may have been altered. Restore wrote nothing.
   */
  'BACKUP_SIGNATURE_INVALID',
] as const;

export type AtollErrorCode = (typeof atollErrorCodes)[number];

/** The gRPC status names that operating errors map onto at the network boundary. */
export type GrpcStatusName =
  | 'INVALID_ARGUMENT'
  | 'RESOURCE_EXHAUSTED'
  | 'FAILED_PRECONDITION'
  | 'OUT_OF_RANGE'
  | 'UNAVAILABLE'
  | 'DEADLINE_EXCEEDED'
  | 'ABORTED'
  | 'UNAUTHENTICATED'
  | 'PERMISSION_DENIED'
  | 'INTERNAL'
  | 'NOT_FOUND';

/**
 * One gRPC status per code, so a client can branch on the status alone. The choices follow the
 * gRPC guidance: OUT_OF_RANGE for a revision outside what is retained (or a counter past int64),
 * FAILED_PRECONDITION when the request is fine but the state it needs is not there (a value that
 * is not an integer, a request sent to a partition that does not own the key), UNAVAILABLE for
 * anything a retry may fix (the leader hint rides in the error details).
 */
export const grpcStatusOfCode: Readonly<Record<AtollErrorCode, GrpcStatusName>> = Object.freeze({
  INVALID_KEY: 'INVALID_ARGUMENT',
  INVALID_ARGUMENT: 'INVALID_ARGUMENT',
  KEY_TOO_LARGE: 'RESOURCE_EXHAUSTED',
  VALUE_TOO_LARGE: 'RESOURCE_EXHAUSTED',
  PREFIX_SPANS_BUCKETS: 'INVALID_ARGUMENT',
  NOT_INTEGER: 'FAILED_PRECONDITION',
  OVERFLOW: 'OUT_OF_RANGE',
  COMPACTED: 'OUT_OF_RANGE',
  FUTURE_REVISION: 'OUT_OF_RANGE',
  NOT_LEADER: 'UNAVAILABLE',
  NO_LEADER: 'UNAVAILABLE',
  UNAVAILABLE: 'UNAVAILABLE',
  DEADLINE_EXCEEDED: 'DEADLINE_EXCEEDED',
  TXN_CONFLICT: 'ABORTED',
  WRONG_PARTITION: 'FAILED_PRECONDITION',
  RESOURCE_EXHAUSTED: 'RESOURCE_EXHAUSTED',
  INTERNAL: 'INTERNAL',
  INVALID_TRANSACTION: 'INVALID_ARGUMENT',
  TXN_EXPIRED: 'FAILED_PRECONDITION',
  OUTSIDE_TRANSACTION: 'FAILED_PRECONDITION',
  SCRIPT_PARSE_ERROR: 'INVALID_ARGUMENT',
  SCRIPT_ERROR: 'FAILED_PRECONDITION',
  SCRIPT_LIMIT: 'RESOURCE_EXHAUSTED',
  UNAUTHENTICATED: 'UNAUTHENTICATED',
  PERMISSION_DENIED: 'PERMISSION_DENIED',
  QUOTA_EXCEEDED: 'RESOURCE_EXHAUSTED',
  OVERLOADED: 'RESOURCE_EXHAUSTED',
  REQUEST_ID_EXPIRED: 'FAILED_PRECONDITION',
  BACKUP_DAMAGED: 'FAILED_PRECONDITION',
  RESTORE_TARGET_NOT_EMPTY: 'FAILED_PRECONDITION',
  WATCH_OVERFLOW: 'RESOURCE_EXHAUSTED',
  CLUSTER_MISMATCH: 'FAILED_PRECONDITION',
  MOVE_REFUSED: 'FAILED_PRECONDITION',
  LEASE_NOT_FOUND: 'NOT_FOUND',
  LEASE_WRONG_PARTITION: 'INVALID_ARGUMENT',
  FENCED: 'FAILED_PRECONDITION',
  MEMBERSHIP_REFUSED: 'FAILED_PRECONDITION',
  PARTITION_MOVED: 'UNAVAILABLE',
  SPLIT_REFUSED: 'FAILED_PRECONDITION',
  MERGE_REFUSED: 'FAILED_PRECONDITION',
  BACKUP_SIGNATURE_INVALID: 'FAILED_PRECONDITION',
});

/**
 * Refusals a node answers at a client's rate, a hostile one's included (a flood of lease grants past
 * the tenant's share, of random tokens, of requests to a follower): they are an answer, not a fault,
 * so they capture no stack trace, which in a deep async call path cost more than the rest of the
 * refusal (the hostile load run's lease flood: 1.8 % of the leader's loop in the constructor alone).
 * Every other code keeps its stack.
 */
const stacklessCodes: ReadonlySet<AtollErrorCode> = new Set<AtollErrorCode>([
  'QUOTA_EXCEEDED', 'UNAUTHENTICATED', 'PERMISSION_DENIED', 'NOT_LEADER', 'NO_LEADER', 'OVERLOADED', 'RESOURCE_EXHAUSTED', 'WATCH_OVERFLOW', 'SCRIPT_LIMIT', 'TXN_CONFLICT',
]);
let savedStackTraceLimit: number | undefined;

/** Passes `message` through, turning stack capture off for the super() call of a stackless code. */
function messageFor(code: AtollErrorCode, message: string): string {
  if (stacklessCodes.has(code)) {
    savedStackTraceLimit = Error.stackTraceLimit;
    Error.stackTraceLimit = 0;
  }
  return message;
}

export class AtollError extends Error {
  override readonly name = 'AtollError';
  readonly code: AtollErrorCode;
  /** Machine-readable facts about the failure (the limit, the offending size, a leader hint). */
  readonly details?: Record<string, unknown>;

  constructor(code: AtollErrorCode, message: string, details?: Record<string, unknown>) {
    super(messageFor(code, message));
    if (savedStackTraceLimit !== undefined) {
      Error.stackTraceLimit = savedStackTraceLimit;
      savedStackTraceLimit = undefined;
    }
    this.code = code;
    if (details !== undefined) this.details = details;
  }

  /** The gRPC status name this error travels as. */
  get grpcStatus(): GrpcStatusName {
    return grpcStatusOfCode[this.code];
  }
}

export function isAtollError(value: unknown, code?: AtollErrorCode): value is AtollError {
  return value instanceof AtollError && (code === undefined || value.code === code);
}
