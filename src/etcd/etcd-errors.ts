/**
 * Errors on the etcd port carry etcd's gRPC codes and messages, because etcd's clients match on
 * them (clientv3's rpctypes turn the message back into ErrCompacted, ErrLeaseNotFound, ...).
 * Atoll's own operating errors map onto the nearest etcd error; those etcd has no word for keep
 * Atoll's message behind "atoll: ", with the gRPC code Atoll gives them everywhere.
 */
import * as grpc from '@grpc/grpc-js';
import { isAtollError, type AtollError } from '../errors.js';
import { grpcStatusOf, sendableError, type ErrorLogger } from '../wire/grpc-errors.js';

export class EtcdError extends Error {
  constructor(
    readonly status: grpc.status,
    message: string,
  ) {
    super(message);
    this.name = 'EtcdError';
  }
}

export const etcdErrors = {
  emptyKey: () => new EtcdError(grpc.status.INVALID_ARGUMENT, 'etcdserver: key is not provided'),
  keyNotFound: () => new EtcdError(grpc.status.INVALID_ARGUMENT, 'etcdserver: key not found'),
  valueProvided: () => new EtcdError(grpc.status.INVALID_ARGUMENT, 'etcdserver: value is provided'),
  leaseProvided: () => new EtcdError(grpc.status.INVALID_ARGUMENT, 'etcdserver: lease is provided'),
  tooManyOps: () => new EtcdError(grpc.status.INVALID_ARGUMENT, 'etcdserver: too many operations in txn request'),
  duplicateKey: () => new EtcdError(grpc.status.INVALID_ARGUMENT, 'etcdserver: duplicate key given in txn request'),
  invalidSortOption: () => new EtcdError(grpc.status.INVALID_ARGUMENT, 'etcdserver: invalid sort option'),
  compacted: () => new EtcdError(grpc.status.OUT_OF_RANGE, 'etcdserver: mvcc: required revision has been compacted'),
  futureRevision: () => new EtcdError(grpc.status.OUT_OF_RANGE, 'etcdserver: mvcc: required revision is a future revision'),
  noSpace: () => new EtcdError(grpc.status.RESOURCE_EXHAUSTED, 'etcdserver: mvcc: database space exceeded'),
  leaseNotFound: () => new EtcdError(grpc.status.NOT_FOUND, 'etcdserver: requested lease not found'),
  leaseTtlTooLarge: () => new EtcdError(grpc.status.OUT_OF_RANGE, 'etcdserver: too large lease TTL'),
  requestTooLarge: () => new EtcdError(grpc.status.INVALID_ARGUMENT, 'etcdserver: request is too large'),
  authFailed: () => new EtcdError(grpc.status.INVALID_ARGUMENT, 'etcdserver: authentication failed, invalid user ID or password'),
  invalidAuthToken: () => new EtcdError(grpc.status.UNAUTHENTICATED, 'etcdserver: invalid auth token'),
  /** etcd's answer to a call without a token when authentication is on (clients retry only the one above). */
  userEmpty: () => new EtcdError(grpc.status.INVALID_ARGUMENT, 'etcdserver: user name is empty'),
  permissionDenied: () => new EtcdError(grpc.status.PERMISSION_DENIED, 'etcdserver: permission denied'),
  noLeader: () => new EtcdError(grpc.status.UNAVAILABLE, 'etcdserver: no leader'),
  timeout: () => new EtcdError(grpc.status.UNAVAILABLE, 'etcdserver: request timed out'),
  tooManyRequests: () => new EtcdError(grpc.status.RESOURCE_EXHAUSTED, 'etcdserver: too many requests'),
  unsupported: (what: string) => new EtcdError(grpc.status.UNIMPLEMENTED, `atoll: ${what} is not supported on Atoll's etcd port (docs/etcd-api.md)`),
  invalid: (what: string) => new EtcdError(grpc.status.INVALID_ARGUMENT, `atoll: ${what}`),
} as const;

/** The etcd error for whatever a handler threw: etcd's where etcd has one, Atoll's otherwise. */
export function etcdErrorOf(error: unknown, logger?: ErrorLogger): EtcdError {
  if (error instanceof EtcdError) return error;
  const atoll: AtollError = sendableError(error, logger);
  switch (atoll.code) {
    case 'COMPACTED':
      return etcdErrors.compacted();
    case 'FUTURE_REVISION':
      return etcdErrors.futureRevision();
    case 'LEASE_NOT_FOUND':
    case 'LEASE_WRONG_PARTITION':
      return etcdErrors.leaseNotFound();
    case 'KEY_TOO_LARGE':
    case 'VALUE_TOO_LARGE':
      return etcdErrors.requestTooLarge();
    case 'QUOTA_EXCEEDED':
      return etcdErrors.noSpace();
    case 'NOT_LEADER':
    case 'NO_LEADER':
      return etcdErrors.noLeader();
    case 'DEADLINE_EXCEEDED':
      return etcdErrors.timeout();
    case 'UNAUTHENTICATED':
      return etcdErrors.invalidAuthToken();
    case 'PERMISSION_DENIED':
      return etcdErrors.permissionDenied();
    case 'OVERLOADED':
      return etcdErrors.tooManyRequests();
    default:
      return new EtcdError(grpcStatusOf(atoll), `atoll: ${atoll.message}`);
  }
}

/**
 * The status object a grpc-js handler answers with. `withToken` says whether the call carried a
 * token: a call without one that the node refuses as unauthenticated gets etcd's `user name is
 * empty`, as from etcd, not `invalid auth token`, on which etcd's clients re-authenticate and retry
 * (the etcd3 npm client without credentials forever).
 */
export function etcdStatusOf(error: unknown, logger?: ErrorLogger, withToken = true): grpc.StatusObject {
  const etcd = !withToken && isAtollError(error) && error.code === 'UNAUTHENTICATED' ? etcdErrors.userEmpty() : etcdErrorOf(error, logger);
  return { code: etcd.status, details: etcd.message, metadata: new grpc.Metadata() };
}
