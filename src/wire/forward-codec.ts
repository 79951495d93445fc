/**
 * The Peer.Forward messages: a node that does not lead a key's partition sends the client's request
 * to the leader in a ForwardRequest and relays the ForwardResponse (or the error status) back.
 * Failures travel as gRPC statuses in both directions: see grpc-errors.ts (`serviceErrorOf` on the
 * leader, `atollErrorOfServiceError` on the forwarding node).
 */
import { AtollError } from '../errors.js';
import { requestPathCounters } from '../api/request-path-counters.js';
import { decodeKvOperation, decodeKvResult, encodeKvOperation, encodeKvResult, type KvOperation, type KvResult } from './kv-operation.js';
import { parseWireUint32 } from './wire-numbers.js';
import type { ForwardRequestMessage, ForwardResponseMessage } from './wire-types.js';

export interface ForwardedOperation {
  /** How many nodes forwarded the request before this one received it. */
  readonly hops: number;
  readonly operation: KvOperation;
  /** The caller's tenant, as the node that authenticated it found (absent: the default tenant). */
  readonly tenant?: string;
}

/** The operation encoded again into a ForwardRequest message (counted: a re-encode of the request). */
export function encodeForwardRequest(forwarded: ForwardedOperation): ForwardRequestMessage {
  requestPathCounters.reencodes++;
  return { hops: forwarded.hops, tenant: forwarded.tenant ?? '', ...encodeKvOperation(forwarded.operation) };
}

export function decodeForwardRequest(message: unknown): ForwardedOperation {
  if (typeof message !== 'object' || message === null) throw new AtollError('INVALID_ARGUMENT', 'ForwardRequest must be a message');
  const request = message as ForwardRequestMessage;
  const tenant = typeof request.tenant === 'string' && request.tenant !== '' ? request.tenant : undefined;
  return { hops: parseWireUint32(request.hops ?? 0, 'hops'), operation: decodeKvOperation(request, request.request), ...(tenant !== undefined && { tenant }) };
}

export function encodeForwardResponse(result: KvResult): ForwardResponseMessage {
  return encodeKvResult(result);
}

export function decodeForwardResponse(message: unknown): KvResult {
  if (typeof message !== 'object' || message === null) throw new AtollError('INTERNAL', 'ForwardResponse must be a message');
  const response = message as ForwardResponseMessage;
  return decodeKvResult(response, response.response);
}
