// Original file: proto/atoll/v1/cluster.proto

import type { ForwardStatusMetadata as _atoll_v1_ForwardStatusMetadata, ForwardStatusMetadata__Output as _atoll_v1_ForwardStatusMetadata__Output } from '../../atoll/v1/ForwardStatusMetadata.js';

/**
 * Internal. A failed forwarded call's gRPC status, as a unary Peer.Forward ends with it: the status
 * code, its message, and the trailing metadata in which an Atoll error's code, leader hint and
 * not-applied mark travel (src/wire/grpc-errors.ts).
 */
export interface ForwardStatus {
  'code'?: (number);
  'message'?: (string);
  'metadata'?: (_atoll_v1_ForwardStatusMetadata)[];
}

/**
 * Internal. A failed forwarded call's gRPC status, as a unary Peer.Forward ends with it: the status
 * code, its message, and the trailing metadata in which an Atoll error's code, leader hint and
 * not-applied mark travel (src/wire/grpc-errors.ts).
 */
export interface ForwardStatus__Output {
  'code': (number);
  'message': (string);
  'metadata': (_atoll_v1_ForwardStatusMetadata__Output)[];
}
