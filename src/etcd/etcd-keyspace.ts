/**
 * etcd's KV service on one tenant's keyspace (the bucket `etcd`, key-codec.ts), over the NodeApi.
 * Reads go straight to get / getByPrefix; a plain Put is one Atoll put; everything that must read
 * before it writes (DeleteRange, Put with ignore_value or ignore_lease, Txn, Compact) is a
 * snapshot transaction (etcd-txn.ts). The caller's tenant comes from its CallContext.
 */
import type { CallContext, NodeApi } from '../api/node-api.js';
import { etcdErrors } from './etcd-errors.js';
import { kvMessageOf, checkRangeRequest, shapeRange, etcdKvOf, type EtcdKv, type RangeOutcome } from './etcd-kv.js';
import type { DeleteRangeRequest, PutRequest, RangeRequest, ResponseHeader, TxnRequest } from './etcd-messages.js';
import { int64Of } from './etcd-messages.js';
import { atollLeaseOf, bytesOfInt64, checkTxnShape, runDelete, runPut, runTxn, runTxnOps, type OpOutcome } from './etcd-txn.js';
import { encodeKey, keyInterval } from './key-codec.js';
import { checkNotCompacted, compactionFloorKey, readCompactionFloor, readInterval } from './keyspace-reads.js';
import { encodeStoredValue } from './stored-value.js';

/** Builds the ResponseHeader of an answer at a revision (etcd-server.ts knows the member and cluster ids). */
export type HeaderOf = (revision: number) => ResponseHeader;

export class EtcdKeyspace {
  constructor(
    private readonly api: NodeApi,
    private readonly headerOf: HeaderOf,
  ) {}

  async range(request: RangeRequest, context: CallContext): Promise<object> {
    checkRangeRequest(request);
    const revision = int64Of(request.revision);
    const current = await checkNotCompacted(this.api, revision, context);
    const read = await readInterval(this.api, keyInterval(request.key, request.range_end), { revision, consistency: request.serializable ? 'stale' : 'linearizable' }, context);
    return this.rangeMessage(shapeRange(request, read.kvs), current ?? read.revision);
  }

  async put(request: PutRequest, context: CallContext): Promise<object> {
    if (request.key.length === 0) throw etcdErrors.emptyKey();
    if (request.ignore_value || request.ignore_lease) {
      const { outcome, revision } = await runTxn(this.api, context, (attempt) => runPut(attempt, request));
      return this.opMessage(outcome, revision);
    }
    const lease = bytesOfInt64(request.lease);
    const response = await this.api.put(
      {
        key: encodeKey(request.key),
        value: encodeStoredValue(request.value, lease),
        ...(lease !== 0n && { lease: atollLeaseOf(lease) }),
        ...(request.prev_kv && { returnPrevious: true }),
      },
      context,
    );
    const prev = response.previous === undefined ? undefined : etcdKvOf(response.previous);
    return this.opMessage({ kind: 'put', ...(prev !== undefined && { prev }) }, response.revision);
  }

  async deleteRange(request: DeleteRangeRequest, context: CallContext): Promise<object> {
    if (request.key.length === 0) throw etcdErrors.emptyKey();
    if (request.range_end.length === 0 && !request.prev_kv) {
      const response = await this.api.delete({ key: encodeKey(request.key) }, context);
      return this.opMessage({ kind: 'delete', deleted: response.deleted ? 1 : 0 }, response.revision);
    }
    const { outcome, revision } = await runTxn(this.api, context, (attempt) => runDelete(attempt, request));
    return this.opMessage(outcome, revision);
  }

  async txn(request: TxnRequest, context: CallContext): Promise<object> {
    checkTxnShape(request);
    const { outcome, revision } = await runTxn(this.api, context, (attempt) => runTxnOps(this.api, attempt, request, context));
    return this.opMessage(outcome, revision);
  }

  /**
   * Moves the keyspace's compaction floor (keyspace-reads.ts): reads and watches below it are
   * refused with etcd's compacted error. History is dropped physically by Atoll's retention
   * (--retention-revisions), for the whole partition; docs/etcd-api.md, "Compaction".
   */
  async compact(request: { revision: string }, context: CallContext): Promise<object> {
    const target = int64Of(request.revision);
    if (Number.isNaN(target)) throw etcdErrors.invalid('revision must be an integer within ±2^53');
    const { revision } = await runTxn(this.api, context, async (attempt) => {
      attempt.noteReadKey(compactionFloorKey);
      const { floor } = await readCompactionFloor(this.api, { transaction: attempt.transaction }, context);
      if (target <= floor) throw etcdErrors.compacted();
      if (target > attempt.snapshotRevision) throw etcdErrors.futureRevision();
      attempt.writeMeta(compactionFloorKey, new TextEncoder().encode(String(target)));
    });
    return { header: this.headerOf(revision) };
  }

  private rangeMessage(range: RangeOutcome, revision: number): object {
    return { header: this.headerOf(revision), kvs: range.kvs.map((kv) => kvMessageOf(kv, range.keysOnly)), more: range.more, count: range.count };
  }

  /** The response message of an operation's outcome (nested Txn responses included) at a revision. */
  opMessage(outcome: OpOutcome, revision: number): object {
    switch (outcome.kind) {
      case 'range':
        return this.rangeMessage(outcome.range, revision);
      case 'put':
        return { header: this.headerOf(revision), ...(outcome.prev !== undefined && { prev_kv: kvMessageOf(outcome.prev) }) };
      case 'delete':
        return { header: this.headerOf(revision), deleted: outcome.deleted, prev_kvs: (outcome.prevKvs ?? []).map((kv: EtcdKv) => kvMessageOf(kv)) };
      case 'txn':
        return {
          header: this.headerOf(revision),
          succeeded: outcome.succeeded,
          responses: outcome.responses.map((response) => ({ [responseField[response.kind]]: this.opMessage(response, revision) })),
        };
    }
  }
}

const responseField = { range: 'response_range', put: 'response_put', delete: 'response_delete_range', txn: 'response_txn' } as const;
