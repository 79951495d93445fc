/**
 * etcd's Lease service over Atoll's leases (KV.Lease in the NodeApi). A lease is granted in the
 * partition of the caller's keyspace (its bucket), so keys of the keyspace can attach to it; its
 * etcd id names the Atoll lease (stored-value.ts).
 *
 * etcd lists every lease (LeaseLeases); Atoll has no such call, so each grant also writes a
 * registry key `etcd/m/lease/<id>` attached to the lease itself: it disappears with the lease
 * (revoked or expired) by Atoll's own lease semantics, and a prefix read lists the live leases.
 */
import * as grpc from '@grpc/grpc-js';
import type { Logger } from 'pino';
import { isAtollError } from '../errors.js';
import type { CallContext, LeaseRequest, LeaseResponse, NodeApi } from '../api/node-api.js';
import { openCallScope } from '../server/call-context.js';
import { etcdCallerOf, etcdUnary } from './etcd-call.js';
import { etcdErrors, etcdStatusOf } from './etcd-errors.js';
import type { HeaderOf } from './etcd-keyspace.js';
import { etcdLimits } from './etcd-limits.js';
import { bytesOfInt64 } from './etcd-txn.js';
import { decodeKey, etcdBucket, etcdKeyPrefix, etcdMetaPrefix } from './key-codec.js';
import { atollLeaseIdOf, etcdLeaseIdOf } from './stored-value.js';

const registryPrefix = `${etcdMetaPrefix}lease/`;

function leaseCall(api: NodeApi, request: LeaseRequest, context: CallContext): Promise<LeaseResponse> {
  if (api.lease === undefined) return Promise.reject(etcdErrors.unsupported('leases'));
  return api.lease(request, context);
}

function isLeaseGone(error: unknown): boolean {
  return isAtollError(error) && (error.code === 'LEASE_NOT_FOUND' || error.code === 'LEASE_WRONG_PARTITION');
}

async function grant(api: NodeApi, request: { TTL: string; ID: string }, context: CallContext, headerOf: HeaderOf): Promise<object> {
  if (bytesOfInt64(request.ID) !== 0n) throw etcdErrors.unsupported('choosing a lease id (send ID 0)');
  const ttlSeconds = Number(request.TTL);
  if (!Number.isSafeInteger(ttlSeconds) || ttlSeconds > etcdLimits.maxLeaseTtlSeconds) throw etcdErrors.leaseTtlTooLarge();
  // etcd raises a TTL below its minimum to the minimum; Atoll's minimum is 1 s.
  const ttl = Math.max(1, ttlSeconds);
  const granted = await leaseCall(api, { action: 'grant', key: etcdBucket, ttlMs: ttl * 1000 }, context);
  const id = etcdLeaseIdOf(granted.lease);
  let revision = 0;
  try {
    revision = (await api.put({ key: `${registryPrefix}${id}`, value: new Uint8Array(0), lease: granted.lease }, context)).revision;
  } catch (error) {
    // A lease nobody can list must not outlive the failed grant.
    await leaseCall(api, { action: 'revoke', lease: granted.lease }, context).catch(() => undefined);
    throw error;
  }
  return { header: headerOf(revision), ID: id.toString(), TTL: ttl, error: '' };
}

async function revoke(api: NodeApi, request: { ID: string }, context: CallContext, headerOf: HeaderOf): Promise<object> {
  const lease = atollLeaseIdOf(bytesOfInt64(request.ID));
  if (lease === undefined) throw etcdErrors.leaseNotFound();
  const response = await leaseCall(api, { action: 'revoke', lease }, context);
  return { header: headerOf(response.revision) };
}

async function timeToLive(api: NodeApi, request: { ID: string; keys: boolean }, context: CallContext, headerOf: HeaderOf): Promise<object> {
  const lease = atollLeaseIdOf(bytesOfInt64(request.ID));
  const gone = { header: headerOf(0), ID: request.ID, TTL: -1, grantedTTL: 0, keys: [] };
  if (lease === undefined) return gone;
  try {
    const info = await leaseCall(api, { action: 'info', lease }, context);
    const keys = request.keys ? info.keys.filter((key) => key.startsWith(etcdKeyPrefix)).map(decodeKey) : [];
    return { header: headerOf(0), ID: request.ID, TTL: Math.floor(info.ttlLeftMs / 1000), grantedTTL: Math.round(info.ttlMs / 1000), keys };
  } catch (error) {
    if (isLeaseGone(error)) return gone;
    throw error;
  }
}

async function leases(api: NodeApi, context: CallContext, headerOf: HeaderOf): Promise<object> {
  const ids: object[] = [];
  let pageToken = '';
  let revision = 0;
  for (;;) {
    const page = await api.getByPrefix({ prefix: registryPrefix, ...(pageToken !== '' && { pageToken }) }, context);
    if (revision === 0) revision = page.revision;
    for (const item of page.items) ids.push({ ID: item.key.slice(registryPrefix.length) });
    if (page.nextPageToken === '' || ids.length >= etcdLimits.maxListedLeases) return { header: headerOf(revision), leases: ids };
    pageToken = page.nextPageToken;
  }
}

/** One keep-alive: the granted TTL while the lease lives, 0 once it is gone (as etcd answers). */
async function keepAlive(api: NodeApi, id: string, context: CallContext, headerOf: HeaderOf): Promise<object> {
  const lease = atollLeaseIdOf(bytesOfInt64(id));
  if (lease === undefined) return { header: headerOf(0), ID: id, TTL: 0 };
  try {
    const response = await leaseCall(api, { action: 'keepAlive', lease }, context);
    return { header: headerOf(0), ID: id, TTL: Math.round(response.ttlMs / 1000) };
  } catch (error) {
    if (isLeaseGone(error)) return { header: headerOf(0), ID: id, TTL: 0 };
    throw error;
  }
}

function keepAliveStream(api: NodeApi, logger: Logger, headerOf: HeaderOf) {
  return (call: grpc.ServerDuplexStream<{ ID: string }, object>): void => {
    const caller = etcdCallerOf(call);
    let inFlight = 0;
    let chain = Promise.resolve();
    let ended = false;
    const fail = (error: unknown): void => {
      if (ended) return;
      ended = true;
      call.emit('error', etcdStatusOf(error, logger, caller.authorization !== undefined));
    };
    call.on('data', (request: { ID: string }) => {
      if (ended) return;
      if (++inFlight > etcdLimits.maxKeepAlivesInFlight) return fail(etcdErrors.tooManyRequests());
      // One at a time, in order: answers follow requests as etcd's do.
      chain = chain.then(async () => {
        const scope = openCallScope({ caller });
        try {
          const response = await keepAlive(api, request.ID, scope.context, headerOf);
          if (!ended) call.write(response);
        } catch (error) {
          fail(error);
        } finally {
          inFlight--;
          scope.dispose();
        }
      });
    });
    call.on('end', () => {
      void chain.then(() => {
        if (!ended) {
          ended = true;
          call.end();
        }
      });
    });
    call.on('error', () => {
      ended = true;
    });
    call.on('cancelled', () => {
      ended = true;
    });
  };
}

export function leaseHandlers(api: NodeApi, logger: Logger, headerOf: HeaderOf) {
  return {
    LeaseGrant: etcdUnary(logger, 'LeaseGrant', (request: { TTL: string; ID: string }, context) => grant(api, request, context, headerOf)),
    LeaseRevoke: etcdUnary(logger, 'LeaseRevoke', (request: { ID: string }, context) => revoke(api, request, context, headerOf)),
    LeaseTimeToLive: etcdUnary(logger, 'LeaseTimeToLive', (request: { ID: string; keys: boolean }, context) => timeToLive(api, request, context, headerOf)),
    LeaseLeases: etcdUnary(logger, 'LeaseLeases', (_request: unknown, context) => leases(api, context, headerOf)),
    LeaseKeepAlive: keepAliveStream(api, logger, headerOf),
  };
}
