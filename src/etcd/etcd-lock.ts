/**
 * etcd's Lock (v3lockpb) and Election (v3electionpb) services on the keyspace, with etcd's
 * semantics (etcd-ownership.ts): a contender is the key `<name>/<lease hex>` with the caller's
 * lease; the lowest create revision under `<name>/` owns. Lock and Campaign wait, until the call's
 * deadline, for every contender with a lower create revision to be deleted; a wait that fails
 * removes the key the call created. A contender's key goes with its lease, so a crashed holder
 * releases the lock when its lease expires.
 */
import * as grpc from '@grpc/grpc-js';
import type { Logger } from 'pino';
import { isAtollError } from '../errors.js';
import type { CallContext, NodeApi } from '../api/node-api.js';
import { openCallScope, deadlineMsOf } from '../server/call-context.js';
import { etcdCallerOf, etcdUnary } from './etcd-call.js';
import { EtcdError, etcdErrors, etcdStatusOf } from './etcd-errors.js';
import type { HeaderOf } from './etcd-keyspace.js';
import { kvMessageOf, revisionOf } from './etcd-kv.js';
import {
  cleanupContext,
  contenderKey,
  contenderLease,
  contendersOf,
  createOrGet,
  deleteContender,
  deleteCreatedSince,
  UncertainCreate,
  readContenders,
  waitForChange,
  waitForOwnership,
  type Contender,
} from './etcd-ownership.js';
import { runTxn } from './etcd-txn.js';
import { decodeKey, encodeKey, keyInterval } from './key-codec.js';

interface LeaderKey {
  readonly name: Uint8Array;
  readonly key: Uint8Array;
  readonly rev: string;
  readonly lease: string;
}

const empty = new Uint8Array(0);

/**
 * etcd's election errors, with its messages and its code: etcd answers them UNKNOWN (they are
 * its concurrency package's plain errors), and test/etcd/etcd-lock.test.ts compares both.
 */
const electionErrors = {
  noLeader: () => new EtcdError(grpc.status.UNKNOWN, 'election: no leader'),
  notLeader: () => new EtcdError(grpc.status.UNKNOWN, 'election: not leader'),
  missingLeader: () => new EtcdError(grpc.status.UNKNOWN, '"leader" field must be provided'),
};

function checkName(name: Uint8Array): void {
  if (name.length === 0) throw etcdErrors.invalid('name is required');
}

/**
 * A wait that ends at the call's deadline answers as etcd does then (DEADLINE_EXCEEDED, "context
 * deadline exceeded"), not with etcd's "request timed out", which means a proposal that took too long.
 */
function deadlineOf(error: unknown): unknown {
  return isAtollError(error) && error.code === 'DEADLINE_EXCEEDED' ? new EtcdError(grpc.status.DEADLINE_EXCEEDED, 'context deadline exceeded') : error;
}

/** Waits for ownership; a failed wait deletes the key this call created, then fails as the wait did. */
async function own(api: NodeApi, name: Uint8Array, mine: Contender, context: CallContext, logger: Logger): Promise<number> {
  try {
    return Math.max(mine.revision, await waitForOwnership(api, name, mine, context));
  } catch (error) {
    if (mine.created) {
      await deleteContender(api, mine.key, mine.createRevision, cleanupContext(context)).catch((cleanup: unknown) => logger.warn({ err: cleanup }, 'etcd lock: removing the key of a failed wait failed (its lease removes it)'));
    }
    throw deadlineOf(error);
  }
}

/** Creates (or finds) the contender's key; a failure (a deadline during the commit) may still have created it. */
async function contend(api: NodeApi, key: Uint8Array, value: Uint8Array, lease: bigint, context: CallContext, logger: Logger): Promise<Contender> {
  try {
    return await createOrGet(api, key, value, lease, context);
  } catch (error) {
    if (error instanceof UncertainCreate) {
      await deleteCreatedSince(api, key, error.snapshotRevision, cleanupContext(context)).catch((cleanup: unknown) => logger.warn({ err: cleanup }, 'etcd lock: removing the key of a failed create failed (its lease removes it)'));
      throw deadlineOf(error.cause);
    }
    throw deadlineOf(error);
  }
}

export function lockHandlers(api: NodeApi, logger: Logger, headerOf: HeaderOf) {
  return {
    Lock: etcdUnary(logger, 'Lock', async (request: { name: Uint8Array; lease: string }, context) => {
      checkName(request.name);
      const lease = contenderLease(request.lease);
      const key = contenderKey(request.name, lease);
      const mine = await contend(api, key, empty, lease, context, logger);
      const revision = await own(api, request.name, mine, context, logger);
      return { header: headerOf(revision), key };
    }),
    Unlock: etcdUnary(logger, 'Unlock', async (request: { key: Uint8Array }, context) => {
      if (request.key.length === 0) throw etcdErrors.emptyKey();
      return { header: headerOf(await deleteContender(api, request.key, undefined, context)) };
    }),
  };
}

/** Runs `body` on the leader key's current record if it is still the one created at leader.rev. */
async function asLeader(api: NodeApi, leader: LeaderKey | null | undefined, context: CallContext, body: (found: boolean) => { value?: Uint8Array; remove?: boolean }): Promise<number> {
  if (leader === null || leader === undefined) throw electionErrors.missingLeader();
  const rev = Number(leader.rev);
  const { revision } = await runTxn(api, context, async (attempt) => {
    const [current] = await attempt.read(keyInterval(leader.key, empty));
    const found = current !== undefined && revisionOf(current.createRevision) === rev;
    const action = body(found);
    if (!found) return;
    if (action.remove === true) attempt.delete(leader.key);
    else if (action.value !== undefined) {
      attempt.put({ key: leader.key, createRevision: current.createRevision, modRevision: attempt.pending, version: current.version + 1, value: action.value, lease: BigInt(leader.lease || '0') });
    }
  });
  return revision;
}

export function electionHandlers(api: NodeApi, logger: Logger, headerOf: HeaderOf) {
  return {
    Campaign: etcdUnary(logger, 'Campaign', async (request: { name: Uint8Array; lease: string; value: Uint8Array }, context) => {
      checkName(request.name);
      const lease = contenderLease(request.lease);
      const key = contenderKey(request.name, lease);
      let mine = await contend(api, key, request.value, lease, context, logger);
      if (!mine.created && Buffer.compare(Buffer.from(mine.value), Buffer.from(request.value)) !== 0) {
        // Campaigning again with the same lease and a new value proclaims it, as etcd does.
        const leader = { name: request.name, key, rev: String(mine.createRevision), lease: String(lease) };
        const revision = await asLeader(api, leader, context, () => ({ value: request.value }));
        mine = { ...mine, revision };
      }
      const revision = await own(api, request.name, mine, context, logger);
      return { header: headerOf(revision), leader: { name: request.name, key, rev: mine.createRevision, lease: lease.toString() } };
    }),
    Proclaim: etcdUnary(logger, 'Proclaim', async (request: { leader?: LeaderKey | null; value: Uint8Array }, context) => {
      const revision = await asLeader(api, request.leader, context, (found) => {
        if (!found) throw electionErrors.notLeader();
        return { value: request.value };
      });
      return { header: headerOf(revision) };
    }),
    Resign: etcdUnary(logger, 'Resign', async (request: { leader?: LeaderKey | null }, context) => {
      // Resigning what one does not lead changes nothing and is no error (as etcd).
      return { header: headerOf(await asLeader(api, request.leader, context, () => ({ remove: true }))) };
    }),
    Leader: etcdUnary(logger, 'Leader', async (request: { name: Uint8Array }, context) => {
      checkName(request.name);
      const { kvs, revision } = await readContenders(api, request.name, context);
      const leader = kvs[0];
      if (leader === undefined) throw electionErrors.noLeader();
      return { header: headerOf(revision), kv: kvMessageOf(leader) };
    }),
    Observe: observeHandler(api, logger, headerOf),
  };
}

/** The longest an Observe stream runs without a deadline of its own, as an etcd Watch does (etcd-watch.ts). */
const observeMaxMs = 24 * 3600_000;

/** Observe: the leader now (when there is one), then each new leader or proclaimed value, until the caller goes. */
function observeHandler(api: NodeApi, logger: Logger, headerOf: HeaderOf) {
  return (call: grpc.ServerWritableStream<{ name: Uint8Array }, object>): void => {
    const caller = etcdCallerOf(call);
    const scope = openCallScope({ caller });
    const stop = new AbortController();
    const end = (): void => stop.abort();
    call.on('cancelled', end);
    call.on('error', end);
    const deadlineMs = deadlineMsOf(call.getDeadline()) ?? Date.now() + observeMaxMs;
    const context: CallContext = { ...scope.context, deadlineMs, signal: stop.signal };
    const name = call.request.name;
    const run = async (): Promise<void> => {
      checkName(name);
      const contenders = contendersOf(name);
      let last = '';
      for (;;) {
        const { kvs, revision } = await readContenders(api, name, { ...context, deadlineMs: Math.min(deadlineMs, Date.now() + 10_000) });
        const leader = kvs[0];
        const seen = leader === undefined ? '' : `${encodeKey(leader.key)}@${revisionOf(leader.modRevision)}`;
        if (leader !== undefined && seen !== last) call.write({ header: headerOf(revision), kv: kvMessageOf(leader) });
        last = seen;
        await waitForChange(api, { prefix: contenders.scanPrefix }, revision, context, (message) => message.events.some((event) => contenders.contains(decodeKey(event.key))));
      }
    };
    run()
      .catch((error: unknown) => {
        if (stop.signal.aborted) return;
        logger.debug({ err: error }, 'etcd election observe ended');
        call.emit('error', etcdStatusOf(error, logger, caller.authorization !== undefined));
      })
      .finally(() => {
        scope.dispose();
        stop.abort();
      });
  };
}
