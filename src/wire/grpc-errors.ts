/**
 * Errors at the gRPC boundary, both ways.
 *
 * Out (server): an AtollError becomes its gRPC status (errors.ts grpcStatusOfCode) with the message
 * as details and metadata: `atoll-code` (the stable code, so a client can tell NOT_LEADER from
 * UNAVAILABLE though both travel as UNAVAILABLE); for NOT_LEADER / NO_LEADER with a known leader
 * `atoll-leader-id` and `atoll-leader-hint` (its host:port); and `atoll-not-applied: true` when the
 * error says the request never reached a node that could apply it (`details.neverSent`, set when a
 * forwarding node could not connect to the leader), so clients may retry even a write. Anything else a
 * handler throws is a bug: it is logged with its stack and answered INTERNAL with a generic message,
 * so internals never leak and the process keeps serving.
 *
 * In (client and forwarding node): a ServiceError becomes an AtollError. With `atoll-code` the code
 * is restored exactly; without it (the status came from grpc-js itself or a foreign server)
 * the status decides: UNAVAILABLE, DEADLINE_EXCEEDED and RESOURCE_EXHAUSTED keep their meaning,
 * CANCELLED (the peer went away) counts as UNAVAILABLE, and anything else is INTERNAL.
 */
import * as grpc from '@grpc/grpc-js';
import { AtollError, atollErrorCodes, type AtollErrorCode, type GrpcStatusName } from '../errors.js';

export const errorMetadataKeys = Object.freeze({
  code: 'atoll-code',
  leaderHint: 'atoll-leader-hint',
  leaderId: 'atoll-leader-id',
  /**
   * "true" when the request certainly was not applied because it never reached a node that could
   * apply it (a forwarding node could not connect to the leader). Clients may retry such a write.
   */
  notApplied: 'atoll-not-applied',
  /** COMPACTED: the oldest readable revision (the compaction floor). */
  compactedRevision: 'atoll-compacted-revision',
  /** WATCH_OVERFLOW: the last revision the server sent; watch again after it. */
  resumeRevision: 'atoll-resume-revision',
  /** MOVE_REFUSED, MEMBERSHIP_REFUSED: why (details.reason: a short lowercase word such as 'duplicate-id'). */
  reason: 'atoll-reason',
  /** PARTITION_MOVED: the end of the refusing partition's range, the first hash of the next one. */
  rangeEnd: 'atoll-range-end',
  /** PARTITION_MOVED from a partition frozen for a merge or merged away: the partition its range went into. */
  mergedInto: 'atoll-merged-into',
  /** PARTITION_MOVED: the partition that refused (with mergedInto: the merged-away one, whose start is a tombstone). */
  servedPartitionId: 'atoll-served-partition',
  /** MERGE_REFUSED: the right partition of the merge, and (leaders-differ) the node leading the left one. */
  rightPartition: 'atoll-right-partition',
  leftLeader: 'atoll-left-leader',
});

/** A details.reason that may travel: short lowercase words and dashes. */
const reasonPattern = /^[a-z][a-z-]{0,39}$/;

/** details.reason when it may travel (unary metadata, StreamError.reason). */
export function sendableReason(error: AtollError): string | undefined {
  const reason = error.details?.['reason'];
  return typeof reason === 'string' && reasonPattern.test(reason) ? reason : undefined;
}

/** The error details that travel as decimal metadata (errorMetadataKeys). */
const revisionDetails = ['compactedRevision', 'resumeRevision', 'rangeEnd', 'mergedInto', 'servedPartitionId', 'rightPartition', 'leftLeader'] as const;

/** Where the current leader of a partition is, as far as the answering node knows. */
export interface LeaderHint {
  readonly nodeId: number;
  readonly address: string;
}

/** A minimal logger interface, so this module does not need pino's types. */
export interface ErrorLogger {
  error(object: object, message?: string): void;
}

const statusOfName: Readonly<Record<GrpcStatusName, grpc.status>> = Object.freeze({
  INVALID_ARGUMENT: grpc.status.INVALID_ARGUMENT,
  RESOURCE_EXHAUSTED: grpc.status.RESOURCE_EXHAUSTED,
  FAILED_PRECONDITION: grpc.status.FAILED_PRECONDITION,
  OUT_OF_RANGE: grpc.status.OUT_OF_RANGE,
  UNAVAILABLE: grpc.status.UNAVAILABLE,
  DEADLINE_EXCEEDED: grpc.status.DEADLINE_EXCEEDED,
  ABORTED: grpc.status.ABORTED,
  UNAUTHENTICATED: grpc.status.UNAUTHENTICATED,
  PERMISSION_DENIED: grpc.status.PERMISSION_DENIED,
  INTERNAL: grpc.status.INTERNAL,
  NOT_FOUND: grpc.status.NOT_FOUND,
});

/** The numeric gRPC status an AtollError travels as. */
export function grpcStatusOf(error: AtollError): grpc.status {
  return statusOfName[error.grpcStatus];
}

export function isAtollErrorCode(value: unknown): value is AtollErrorCode {
  return typeof value === 'string' && (atollErrorCodes as readonly string[]).includes(value);
}

/** The leader hint an AtollError carries in `details.leaderHint`, if it is well-formed. */
export function leaderHintOf(error: AtollError): LeaderHint | undefined {
  const hint = error.details?.['leaderHint'];
  if (typeof hint !== 'object' || hint === null) return undefined;
  const { nodeId, address } = hint as Record<string, unknown>;
  if (typeof nodeId !== 'number' || !Number.isSafeInteger(nodeId) || nodeId <= 0) return undefined;
  if (typeof address !== 'string' || address === '') return undefined;
  return { nodeId, address };
}

/** The generic answer for a bug: the details stay in the server's log, not on the wire. */
export const internalErrorMessage = 'internal error: the server failed unexpectedly; see its log';

/**
 * Turns whatever a handler threw into an AtollError fit to send: AtollErrors pass through, anything
 * else is logged and replaced by a generic INTERNAL.
 */
export function sendableError(error: unknown, logger?: ErrorLogger): AtollError {
  if (error instanceof AtollError) return error;
  logger?.error({ err: error }, 'request handler failed unexpectedly');
  return new AtollError('INTERNAL', internalErrorMessage);
}

/** The status object a grpc-js handler passes to its callback (or emits) for an error. */
export function serviceErrorOf(error: unknown, logger?: ErrorLogger): grpc.StatusObject {
  const atollError = sendableError(error, logger);
  const metadata = new grpc.Metadata();
  metadata.set(errorMetadataKeys.code, atollError.code);
  const hint = leaderHintOf(atollError);
  if (hint !== undefined) {
    metadata.set(errorMetadataKeys.leaderHint, hint.address);
    metadata.set(errorMetadataKeys.leaderId, String(hint.nodeId));
  }
  if (atollError.details?.['neverSent'] === true) metadata.set(errorMetadataKeys.notApplied, 'true');
  for (const name of revisionDetails) {
    const revision = atollError.details?.[name];
    if (typeof revision === 'number' && Number.isSafeInteger(revision)) metadata.set(errorMetadataKeys[name], String(revision));
  }
  const reason = sendableReason(atollError);
  if (reason !== undefined) metadata.set(errorMetadataKeys.reason, reason);
  return { code: grpcStatusOf(atollError), details: atollError.message, metadata };
}

/** Only the first value of a metadata key, as text. */
function metadataText(metadata: grpc.Metadata | undefined, key: string): string | undefined {
  const value = metadata?.get(key)[0];
  if (value === undefined) return undefined;
  return typeof value === 'string' ? value : value.toString('utf8');
}

/** The leader hint that rides in an error's metadata. */
export function leaderHintOfMetadata(metadata: grpc.Metadata | undefined): LeaderHint | undefined {
  const address = metadataText(metadata, errorMetadataKeys.leaderHint);
  const nodeId = Number(metadataText(metadata, errorMetadataKeys.leaderId));
  if (address === undefined || address === '' || !Number.isSafeInteger(nodeId) || nodeId <= 0) return undefined;
  return { nodeId, address };
}

/**
 * Whether grpc-js failed the call because it never had a connection to send it on (refused,
 * unresolvable, not yet connected and failing): the request certainly did not reach the server,
 * which is what makes retrying a write safe. grpc-js says so only in its message text, so the test
 * is a pattern over the messages it uses for those cases.
 */
export function isNeverSentFailure(status: number, details: string): boolean {
  if (status !== grpc.status.UNAVAILABLE) return false;
  return /No connection established|Name resolution failed|ECONNREFUSED|Failed to connect|getaddrinfo|ENOTFOUND|EHOSTUNREACH|ENETUNREACH/i.test(
    details,
  );
}

/** How an error's status arrives from grpc-js: a ServiceError, or the parts of one. */
export interface ReceivedStatus {
  readonly code: number;
  readonly details: string;
  readonly metadata?: grpc.Metadata | undefined;
}

/**
 * Rebuilds the AtollError a peer sent. `details` carries `grpcStatus` (the number received), the
 * leader hint when there is one, `fromTransport: true` when no Atoll handler produced the status
 * (no `atoll-code`), and `neverSent: true` when the request certainly was not applied: the call
 * never reached the server, or the server said `atoll-not-applied`.
 */
export function atollErrorOfServiceError(received: ReceivedStatus): AtollError {
  const sentCode = metadataText(received.metadata, errorMetadataKeys.code);
  const code = isAtollErrorCode(sentCode) ? sentCode : codeOfBareStatus(received.code);
  const details: Record<string, unknown> = { grpcStatus: received.code };
  const hint = leaderHintOfMetadata(received.metadata);
  if (hint !== undefined) details['leaderHint'] = hint;
  for (const name of revisionDetails) {
    const revision = Number(metadataText(received.metadata, errorMetadataKeys[name]) ?? NaN);
    if (Number.isSafeInteger(revision) && revision >= 0) details[name] = revision;
  }
  const reason = metadataText(received.metadata, errorMetadataKeys.reason);
  if (reason !== undefined && reasonPattern.test(reason)) details['reason'] = reason;
  if (!isAtollErrorCode(sentCode)) {
    // The status came from grpc-js or a non-Atoll server, not from an Atoll handler.
    details['fromTransport'] = true;
    if (isNeverSentFailure(received.code, received.details)) details['neverSent'] = true;
  } else if (metadataText(received.metadata, errorMetadataKeys.notApplied) === 'true') {
    details['neverSent'] = true;
  }
  return new AtollError(code, messageOf(received, code, details['fromTransport'] === true), details);
}

/** grpc-js's own messages carry timing diagnostics and empty notes; say the gist instead. */
function messageOf(received: ReceivedStatus, code: AtollErrorCode, fromTransport: boolean): string {
  if (fromTransport && code === 'DEADLINE_EXCEEDED') return 'the call did not complete before its deadline';
  const details = received.details.replace(/\.?\s*Resolution note:\s*$/, '').trim();
  return details === '' ? `the call failed with gRPC status ${grpc.status[received.code] ?? received.code}` : details;
}

/** The code of a status that came without `atoll-code`. */
function codeOfBareStatus(status: number): AtollErrorCode {
  switch (status) {
    case grpc.status.UNAVAILABLE:
    case grpc.status.CANCELLED:
      return 'UNAVAILABLE';
    case grpc.status.DEADLINE_EXCEEDED:
      return 'DEADLINE_EXCEEDED';
    case grpc.status.RESOURCE_EXHAUSTED:
      return 'RESOURCE_EXHAUSTED';
    default:
      return 'INTERNAL';
  }
}
