/**
 * The one validation of a request (issue 34 item 4), where it enters the cluster: at the node the
 * call arrived at, once its caller's tenant is known. Every key, prefix and request id the operation
 * names is checked as it is moved into the tenant (map-operation.ts), and the sizes and shapes the
 * log command built from it will carry (value size, TTL range, conditions, a transaction's write
 * and read counts and bytes) are checked by the same rules validateCommand applies, over the
 * operation as the executor will build it. The result is a CheckedOperation
 * (src/api/checked-operation.ts): the router, the executor and the leader a follower forwards it to
 * take it without checking again, and the executor encodes its command without validating it.
 */
import { markChecked, type CheckedOperation } from '../api/checked-operation.js';
import type { CommitRequest, PutRequest } from '../api/node-api.js';
import type { KvOperation } from '../api/operations.js';
import { requestPathCounters } from '../api/request-path-counters.js';
import { prefixBucket } from '../keys/prefix-bucket.js';
import type { Limits } from '../limits.js';
import { validateCommand, validateWriteOp } from '../mvcc/validate-command.js';
import type { WriteOp } from '../mvcc/commands.js';
import { decodeTxnHandle } from '../txn/txn-handle.js';
import { mapOperation } from './map-operation.js';

/** Validates `operation` of the caller's `tenant` once and returns it in the tenant's internal form, checked. */
export function checkOperation(tenant: string, operation: KvOperation, limits: Limits): CheckedOperation {
  requestPathCounters.validations++;
  const mapped = mapOperation(tenant, operation);
  // The bytes it arrived as travel on with it (a forward sends them, not the mapped request).
  const { sent } = operation;
  if (mapped.kind === 'put') {
    // The put's write is built once, here: checked, and proposed as it is (KvExecutor.execute).
    const write = putWriteOp(mapped.request);
    validateWriteOp(write, limits, true);
    return markChecked({ ...mapped, write, ...(sent !== undefined && { sent }) } as KvOperation);
  }
  checkSizes(mapped, limits);
  return markChecked(sent === undefined || mapped.sent === sent ? mapped : { ...mapped, sent });
}

/**
 * The rules of validateCommand for the command the executor builds from the operation; the keys
 * were checked by mapOperation, so they are not checked again. A put's lease is left out: its id
 * is parsed (and its partition checked) where the partition is known, as before.
 */
function checkSizes(operation: KvOperation, limits: Limits): void {
  switch (operation.kind) {
    case 'delete': {
      const r = operation.request;
      validateWriteOp({ type: 'delete', key: r.key, ...(r.ifModRevision !== undefined ? { ifModRevision: r.ifModRevision } : {}), ...(r.ifValue !== undefined ? { ifValue: r.ifValue } : {}) }, limits, true);
      return;
    }
    case 'increment': {
      const r = operation.request;
      validateWriteOp({ type: 'increment', key: r.key, delta: r.delta, ...(r.ttlMs ? { ttlMs: r.ttlMs } : {}) }, limits, true);
      return;
    }
    case 'extend':
      validateWriteOp({ type: 'extend', key: operation.request.key, ttlMs: operation.request.ttlMs }, limits, true);
      return;
    case 'commit':
      validateCommand(provisionalTxnCommand(operation.request), limits, true);
      return;
    default:
      // Reads, a transaction's begin, leases and scripts carry no command of the request's own
      // shape (a lease's and a script's commands are validated where they are built); a put's is
      // checked by checkOperation.
      return;
  }
}

/**
 * The MVCC write of a put request, with only the options it sets, and with the local lease id
 * (`lease`) the executor parses where the partition is known (kv-commands.ts writeOpOfPut).
 */
export function putWriteOp(r: PutRequest, lease?: number): WriteOp {
  return {
    type: 'put',
    key: r.key,
    value: r.value,
    ...(r.ttlMs ? { ttlMs: r.ttlMs } : {}),
    ...(r.keepTtl ? { keepTtl: true } : {}),
    ...(r.ifAbsent ? { ifAbsent: true } : {}),
    ...(r.ifPresent ? { ifPresent: true } : {}),
    ...(r.ifModRevision !== undefined ? { ifModRevision: r.ifModRevision } : {}),
    ...(r.ifValue !== undefined ? { ifValue: r.ifValue } : {}),
    ...(r.returnPrevious ? { returnPrevious: true } : {}),
    ...(lease !== undefined ? { lease } : {}),
    ...(r.ifFence !== undefined ? { ifFence: r.ifFence } : {}),
  };
}

/**
 * The commit's command as TxnScope.commandOf builds it, for its limits: read keys and prefixes
 * travel (and count) only under SERIALIZABLE, which the handle names (its MAC is verified at the
 * partition); the snapshot revision comes from the handle there and changes nothing checked here.
 */
function provisionalTxnCommand(request: CommitRequest): unknown {
  const serializable = decodeTxnHandle(request.transaction).isolation === 'serializable';
  const writes: WriteOp[] = request.writes.map((write) =>
    write.delete === true
      ? { type: 'delete', key: write.key }
      : {
          type: 'put',
          key: write.key,
          value: write.value ?? new Uint8Array(0),
          ...(write.ttlMs !== undefined && { ttlMs: write.ttlMs }),
          ...(write.keepTtl === true && { keepTtl: true }),
          ...(write.ifFence !== undefined && { ifFence: write.ifFence }),
        },
  );
  return {
    type: 'txn',
    snapshotRevision: 0,
    isolation: 'snapshot',
    readKeys: serializable ? [...new Set(request.readKeys)] : [],
    readPrefixes: serializable ? [...new Set(request.readPrefixes.map((prefix) => prefixBucket(prefix).keyPrefix))] : [],
    writes,
  };
}
