/**
 * What etcd's Lock and Election services share (etcd-lock.ts, etcd-election.ts): a contender is a
 * key `<name>/<lease id in hex>` attached to the contender's lease, and the owner (the lock holder,
 * the leader) is the key under `<name>/` with the lowest create revision. A contender owns once
 * every key under the name with a lower create revision is gone; it waits for each one's delete
 * with a watch of the keyspace (Atoll's stale watch, as etcd-watch.ts), never by polling.
 *
 * Everything goes through the keyspace's snapshot transactions (etcd-txn.ts), so a contender's key
 * is created exactly once and its create revision is the keyspace's revision of that commit.
 */
import { AtollError } from '../errors.js';
import type { CallContext, NodeApi, WatchMessage } from '../api/node-api.js';
import * as grpc from '@grpc/grpc-js';
import { EtcdError, etcdErrors } from './etcd-errors.js';
import { revisionOf, type EtcdKv } from './etcd-kv.js';
import { runTxn } from './etcd-txn.js';
import { compareBytes, encodeKey, keyInterval, type KeyInterval } from './key-codec.js';
import { readInterval } from './keyspace-reads.js';
import type { CallSignal } from '../api/call-signal.js';

const slash = 0x2f;
const noRangeEnd = new Uint8Array(0);

/** The keys of contenders for `name`: every key that starts with `name/`. */
export function contendersOf(name: Uint8Array): KeyInterval {
  const prefix = new Uint8Array(name.length + 1);
  prefix.set(name);
  prefix[name.length] = slash;
  return {
    scanPrefix: encodeKey(prefix),
    contains: (key) => key.length >= prefix.length && compareBytes(key.subarray(0, prefix.length), prefix) === 0,
  };
}

/** A contender's key: `name/` and the lease id in lowercase hex (as etcd's concurrency package names it). */
export function contenderKey(name: Uint8Array, lease: bigint): Uint8Array {
  const tail = new TextEncoder().encode(`/${lease.toString(16)}`);
  const key = new Uint8Array(name.length + tail.length);
  key.set(name);
  key.set(tail, name.length);
  return key;
}

/** A contender's key as it stands after a create-or-get (etcd-txn.ts's pending revisions filled in). */
export interface Contender {
  readonly key: Uint8Array;
  readonly createRevision: number;
  readonly modRevision: number;
  readonly value: Uint8Array;
  readonly lease: bigint;
  /** Whether this call created the key (false: it existed, from an earlier call with the same lease). */
  readonly created: boolean;
  /** The keyspace's revision after the call (its commit, or its snapshot when it wrote nothing). */
  readonly revision: number;
}

/** Checks an etcd lease id for a contender: one an Atoll lease can have. */
export function contenderLease(text: string): bigint {
  let lease: bigint;
  try {
    lease = BigInt(text || '0');
  } catch {
    throw etcdErrors.invalid('lease must be an integer');
  }
  if (lease === 0n) throw etcdErrors.invalid('a lock or a campaign needs a lease: grant one with LeaseGrant and send its ID');
  if (lease < 0n) throw etcdErrors.leaseNotFound();
  return lease;
}

/**
 * A create whose commit failed without saying whether it applied (its deadline passed meanwhile):
 * the key may exist, created after `snapshotRevision`.
 */
export class UncertainCreate extends Error {
  constructor(
    readonly snapshotRevision: number,
    override readonly cause: unknown,
  ) {
    super('the contender\'s key may have been created');
  }
}

/** Creates the contender's key with `value` and the lease unless it exists; either way returns it. */
export async function createOrGet(api: NodeApi, key: Uint8Array, value: Uint8Array, lease: bigint, context: CallContext): Promise<Contender> {
  let creatingSince: number | undefined;
  const committed = runTxn(api, context, async (attempt) => {
    const [existing] = await attempt.read(keyInterval(key, noRangeEnd));
    if (existing !== undefined) return existing;
    const kv: EtcdKv = { key, createRevision: attempt.pending, modRevision: attempt.pending, version: 1, value, lease };
    attempt.put(kv);
    creatingSince ??= attempt.snapshotRevision;
    return { kv, created: true };
  });
  const { outcome, revision } = await committed.catch((error: unknown) => {
    throw creatingSince === undefined ? error : new UncertainCreate(creatingSince, error);
  });
  const created = 'created' in outcome;
  const kv = 'created' in outcome ? outcome.kv : outcome;
  return { key, createRevision: revisionOf(kv.createRevision), modRevision: revisionOf(kv.modRevision), value: kv.value, lease: kv.lease, created, revision };
}

/** The contenders for `name` now, in create-revision order, with the revision read at. */
export async function readContenders(api: NodeApi, name: Uint8Array, context: CallContext): Promise<{ kvs: EtcdKv[]; revision: number }> {
  const read = await readInterval(api, contendersOf(name), {}, context);
  const kvs = [...read.kvs].sort((a, b) => revisionOf(a.createRevision) - revisionOf(b.createRevision));
  return { kvs, revision: read.revision };
}

/**
 * Waits until the first change after `afterRevision` to the key or prefix that `accept` takes (an
 * Atoll watch, ended as soon as it is seen), or throws when the call's deadline passes or the
 * caller goes away.
 */
export async function waitForChange(
  api: NodeApi,
  target: { key: string } | { prefix: string },
  afterRevision: number,
  context: CallContext,
  accept: (message: WatchMessage) => boolean,
): Promise<void> {
  const stop = new AbortController();
  const outer = context.signal;
  const onOuterAbort = (): void => stop.abort(outer?.reason);
  if (outer?.aborted === true) throw outerReason(outer);
  outer?.addEventListener('abort', onOuterAbort, { once: true });
  let seen = false;
  try {
    await api.watch({ ...target, startRevision: afterRevision, stale: true }, { ...context, signal: stop.signal }, {
      write: (message, written) => {
        if (!seen && accept(message)) {
          seen = true;
          stop.abort();
        }
        written?.();
        return true;
      },
      drained: () => Promise.resolve(true),
    });
  } catch (error) {
    if (!seen) throw error;
  } finally {
    outer?.removeEventListener('abort', onOuterAbort);
  }
  if (!seen) throw outer !== undefined && outer.aborted ? outerReason(outer) : new AtollError('DEADLINE_EXCEEDED', 'the request deadline passed');
}

function outerReason(signal: CallSignal): Error {
  return signal.reason instanceof Error ? signal.reason : new AtollError('DEADLINE_EXCEEDED', 'the request deadline passed');
}

/**
 * Waits until `mine` owns `name`: until no contender with a lower create revision is left. It
 * waits for the youngest of the lower ones to be deleted, then looks again (as etcd does: an
 * older one may have left meanwhile, or still be there). Throws when the contender's own key
 * goes (its lease ended) or the call's deadline passes.
 */
export async function waitForOwnership(api: NodeApi, name: Uint8Array, mine: Contender, context: CallContext): Promise<number> {
  for (;;) {
    const { kvs, revision } = await readContenders(api, name, context);
    if (!kvs.some((kv) => compareBytes(kv.key, mine.key) === 0 && revisionOf(kv.createRevision) === mine.createRevision)) {
      throw new EtcdError(grpc.status.FAILED_PRECONDITION, 'atoll: the contender\'s key was deleted while it waited (its lease ended, or it was unlocked or resigned)');
    }
    const lower = kvs.filter((kv) => revisionOf(kv.createRevision) < mine.createRevision);
    const youngest = lower.at(-1);
    if (youngest === undefined) return revision;
    const key = encodeKey(youngest.key);
    await waitForChange(api, { key }, revision, context, (message) => message.events.some((event) => event.key === key && event.type === 'delete'));
  }
}

/** Deletes a contender's key if it is still the one created at `createRevision` (a failed wait, Unlock, Resign). */
export async function deleteContender(api: NodeApi, key: Uint8Array, createRevision: number | undefined, context: CallContext): Promise<number> {
  const { revision } = await runTxn(api, context, async (attempt) => {
    const [existing] = await attempt.read(keyInterval(key, noRangeEnd));
    if (existing === undefined) return;
    if (createRevision !== undefined && revisionOf(existing.createRevision) !== createRevision) return;
    attempt.delete(key);
  });
  return revision;
}

/** Deletes the key if it was created after `snapshotRevision` (by the create that failed uncertainly). */
export async function deleteCreatedSince(api: NodeApi, key: Uint8Array, snapshotRevision: number, context: CallContext): Promise<void> {
  await runTxn(api, context, async (attempt) => {
    const [existing] = await attempt.read(keyInterval(key, noRangeEnd));
    if (existing !== undefined && revisionOf(existing.createRevision) > snapshotRevision) attempt.delete(key);
  });
}

/** A context for cleaning up after a failed wait: the caller's identity, a fresh short deadline. */
export function cleanupContext(context: CallContext): CallContext {
  return {
    deadlineMs: Date.now() + 5_000,
    ...(context.authorization !== undefined && { authorization: context.authorization }),
    ...(context.connection !== undefined && { connection: context.connection }),
    ...(context.tenantGrant !== undefined && { tenantGrant: context.tenantGrant }),
  };
}
