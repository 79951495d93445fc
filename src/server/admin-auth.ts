/**
 * The cluster admin token on the admin HTTP port: the pages that show more than health (the status
 * page's JSON, the tenant series of /metrics) check the caller's `Authorization: Bearer <token>`
 * the way the node checks a gRPC call's, failed-token limit included (per connection).
 */
import type { IncomingMessage } from 'node:http';
import { isAtollError } from '../errors.js';
import type { AtollNode } from '../node/atoll-node.js';
import type { AdminResponse } from './admin-server.js';

/** How long the token check may take. */
const AUTH_TIMEOUT_MS = 2_000;

const refusal = (status: number, code: string, error: string): AdminResponse => ({
  status,
  contentType: 'application/json; charset=utf-8',
  body: JSON.stringify({ code, error }),
  headers: { 'atoll-code': code },
});

/**
 * Undefined when the request carries the cluster admin token (or authentication is off); else the
 * answer to send: 401 UNAUTHENTICATED without a valid token, 403 PERMISSION_DENIED for a token
 * that is not the cluster admin's. `what` names the page in the message.
 */
export async function clusterAdminRefusal(request: IncomingMessage, node: AtollNode, what: string): Promise<AdminResponse | undefined> {
  const authorization = request.headers.authorization;
  const socket = request.socket;
  const context = {
    deadlineMs: Date.now() + AUTH_TIMEOUT_MS,
    ...(authorization !== undefined && { authorization }),
    ...(socket.remoteAddress !== undefined && { connection: `${socket.remoteAddress}:${socket.remotePort ?? 0}` }),
  };
  try {
    const principal = await node.whoAmI(context);
    return principal.clusterAdmin ? undefined : refusal(403, 'PERMISSION_DENIED', `${what} needs the cluster admin token`);
  } catch (error) {
    if (isAtollError(error, 'UNAUTHENTICATED')) return refusal(401, 'UNAUTHENTICATED', `${what} needs the cluster admin token (Authorization: Bearer <token>): ${error.message}`);
    throw error;
  }
}

/** Who sees the atoll_tenant_* series of /metrics (--tenant-metrics). */
export const tenantMetricsModes = ['off', 'admin-token', 'on'] as const;
export type TenantMetricsMode = (typeof tenantMetricsModes)[number];

/**
 * Whether a scrape gets the tenant series: `off` never, `on` always, `admin-token` when the node
 * takes the caller for the cluster admin (its token, or anyone when authentication is off). A
 * scrape without a token gets the rest; one with a refused token gets the refusal instead, so a
 * misconfigured Prometheus sees its target fail rather than the series silently missing.
 */
export function tenantMetricsAccess(mode: TenantMetricsMode, node: () => AtollNode | undefined): (request: IncomingMessage) => Promise<boolean | AdminResponse> {
  if (mode !== 'admin-token') return async () => mode === 'on';
  return async (request) => {
    const opened = node();
    if (opened === undefined) return false;
    const refused = await clusterAdminRefusal(request, opened, 'the tenant series of /metrics');
    if (refused === undefined) return true;
    return request.headers.authorization === undefined ? false : refused;
  };
}
