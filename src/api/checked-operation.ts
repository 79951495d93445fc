/**
 * A KV operation that passed its one validation (issue 34 item 4): its keys, prefixes, request id
 * and sizes were checked where the request entered the cluster (src/tenancy/check-operation.ts),
 * or it came from a peer that did so (a Peer.Forward on the authenticated peer port). The router
 * and the executor take it as it is: they neither check its keys again nor re-validate the command
 * they build from it before proposing. The replicas' apply path keeps its own checks of every
 * committed entry, which guard the state machine and are not the request's.
 *
 * The brand is a type and a mark on the object (a WeakSet), so code that handles any operation
 * (the router serves the node's own calls too) can tell a checked one from one it must check.
 */
import type { WriteOp } from '../mvcc/commands.js';
import type { KvOperation } from './operations.js';

declare const checkedBrand: unique symbol;

/**
 * `write`: a put's MVCC write, built and checked by the validation (without a lease: its id is
 * parsed where the partition is known), which the executor proposes as it is.
 */
export type CheckedOperation = KvOperation & { readonly [checkedBrand]: true; readonly write?: WriteOp };

const checked = new WeakSet<object>();

/** Marks an operation as checked; only the validation step and the peer port's decoder call it. */
export function markChecked(operation: KvOperation): CheckedOperation {
  checked.add(operation);
  return operation as CheckedOperation;
}

export function isCheckedOperation(operation: KvOperation): operation is CheckedOperation {
  return checked.has(operation);
}
