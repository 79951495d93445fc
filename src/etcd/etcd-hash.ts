/**
 * Maintenance.HashKV and Hash (`etcdctl endpoint hashkv`): a hash of the keyspace at a revision,
 * computed from this node's own replica of the keyspace's partition, so comparing the members'
 * answers at one revision compares their replicas, which is what the command is for.
 *
 * The hash is SHA-256 over every live key at the revision, in key order (each key's bytes, value,
 * create and mod revision, version and lease, length-prefixed), cut to its first 32 bits. It is not
 * comparable with etcd's number (etcd hashes its storage's history since the compaction); two Atoll
 * nodes agree on it exactly when their replicas hold the same keyspace at that revision.
 */
import { createHash } from 'node:crypto';
import { isAtollError } from '../errors.js';
import type { CallContext, NodeApi } from '../api/node-api.js';
import { etcdErrors } from './etcd-errors.js';
import { revisionOf } from './etcd-kv.js';
import { int64Of } from './etcd-messages.js';
import { keyInterval } from './key-codec.js';
import { readCompactionFloor, readInterval } from './keyspace-reads.js';

/** The whole keyspace: etcd's `\0` key with range_end `\0`. */
const everything = keyInterval(new Uint8Array([0]), new Uint8Array([0]));

/** How long a replica behind the revision asked for is waited for, between looks. */
const catchUpPauseMs = 20;

export interface KeyspaceHash {
  readonly hash: number;
  /** The revision hashed. */
  readonly revision: number;
  /** The keyspace's compaction floor. */
  readonly compactRevision: number;
  /** The keyspace's current revision (the header's). */
  readonly current: number;
}

function lengthPrefixed(bytes: Uint8Array): Buffer {
  const length = Buffer.alloc(4);
  length.writeUInt32BE(bytes.length);
  return Buffer.concat([length, bytes]);
}

/** The hash of the keyspace at `requested` (0: its current revision) from this node's replica. */
export async function hashKeyspace(api: NodeApi, requested: string, context: CallContext): Promise<KeyspaceHash> {
  const asked = int64Of(requested);
  if (Number.isNaN(asked) || asked < 0) throw etcdErrors.invalid('revision must be a non-negative integer within 2^53');
  // The current revision and floor come from a linearizable read, so every member hashes the same revision.
  const { floor, revision: current } = await readCompactionFloor(api, {}, context);
  const revision = asked === 0 ? current : asked;
  if (revision < floor) throw etcdErrors.compacted();
  if (revision > current) throw etcdErrors.futureRevision();
  for (;;) {
    try {
      const read = await readInterval(api, everything, { revision, consistency: 'stale' }, context);
      const digest = createHash('sha256');
      for (const kv of read.kvs) {
        const numbers = Buffer.alloc(32);
        numbers.writeBigInt64BE(BigInt(revisionOf(kv.createRevision)), 0);
        numbers.writeBigInt64BE(BigInt(revisionOf(kv.modRevision)), 8);
        numbers.writeBigInt64BE(BigInt(kv.version), 16);
        numbers.writeBigUInt64BE(kv.lease, 24);
        digest.update(lengthPrefixed(kv.key)).update(lengthPrefixed(kv.value)).update(numbers);
      }
      return { hash: digest.digest().readUInt32BE(0), revision, compactRevision: floor, current };
    } catch (error) {
      // This replica has not applied the revision yet: it will, shortly; the call's deadline bounds the wait.
      if (!isAtollError(error) || error.code !== 'FUTURE_REVISION' || Date.now() + catchUpPauseMs >= context.deadlineMs) throw error;
      await new Promise((resolve) => setTimeout(resolve, catchUpPauseMs));
    }
  }
}
