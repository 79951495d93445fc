/**
 * The etcd port's default tenant (`--etcd-tenant`): on a cluster with authentication, a call that
 * carries no token acts as the tenant of a grant the node issued to this listener
 * (src/api/tenant-grant.ts). The grant rides on the CallContext of every NodeApi call the etcd
 * layer makes; a call with a token is its token's, as before.
 */
import type { CallContext, NodeApi } from '../api/node-api.js';
import type { TenantGrant } from '../api/tenant-grant.js';

/** `api` with `grant` on every call's context that has no token of its own. */
export function actingAsTenant(api: NodeApi, grant: TenantGrant): NodeApi {
  const withGrant = (context: CallContext): CallContext => (context.authorization === undefined || context.authorization === '' ? { ...context, tenantGrant: grant } : context);
  const lease = api.lease;
  return {
    get: (request, context) => api.get(request, withGrant(context)),
    put: (request, context) => api.put(request, withGrant(context)),
    delete: (request, context) => api.delete(request, withGrant(context)),
    increment: (request, context) => api.increment(request, withGrant(context)),
    exists: (request, context) => api.exists(request, withGrant(context)),
    extend: (request, context) => api.extend(request, withGrant(context)),
    ...(lease !== undefined && { lease: (request, context) => lease.call(api, request, withGrant(context)) }),
    getByPrefix: (request, context) => api.getByPrefix(request, withGrant(context)),
    beginTransaction: (request, context) => api.beginTransaction(request, withGrant(context)),
    commit: (request, context) => api.commit(request, withGrant(context)),
    executeScript: (request, context) => api.executeScript(request, withGrant(context)),
    watch: (request, context, sink) => api.watch(request, withGrant(context), sink),
    clusterInfo: (context, request) => api.clusterInfo(context, request),
    transferLeader: (request, context) => api.transferLeader(request, context),
  };
}
