/**
 * The Auth service (proto/atoll/v1/auth.proto): tokens, quotas, usage, and who-am-i. Each handler
 * decodes its request, asks the node (which authenticates the caller from the call's metadata) and
 * encodes the answer; messages are small, so their conversion lives here rather than in src/wire/convert.ts.
 */
import type * as grpc from '@grpc/grpc-js';
import { AtollError } from '../errors.js';
import type { CallContext } from '../api/node-api.js';
import type { Quota, TenantUsage, TokenRecord } from '../node/service/auth.js';
import type { Principal } from '../tenancy/principal.js';
import type { ErrorLogger } from '../wire/grpc-errors.js';
import { formatWireInt64, parseWireCount } from '../wire/wire-numbers.js';
import { unaryHandler } from './unary-handler.js';

/** What the Auth service needs from a node. */
export interface AuthApi {
  whoAmI(context: CallContext): Promise<Principal>;
  createToken(request: { tenant: string; role: string; name: string }, context: CallContext): Promise<{ token: string; info: TokenRecord }>;
  listTokens(request: { tenant: string }, context: CallContext): Promise<TokenRecord[]>;
  revokeToken(request: { id: string }, context: CallContext): Promise<TokenRecord>;
  setQuota(request: { tenant: string; quota: Quota }, context: CallContext): Promise<void>;
  usage(request: { tenant: string }, context: CallContext): Promise<TenantUsage[]>;
}

function text(message: unknown, field: string): string {
  const value = (message as Record<string, unknown> | null)?.[field];
  if (value === undefined || value === null) return '';
  if (typeof value !== 'string') throw new AtollError('INVALID_ARGUMENT', `${field} must be a string`);
  return value;
}

function encodeToken(info: TokenRecord): Record<string, unknown> {
  return { id: info.id, tenant: info.tenant, role: info.role, name: info.name, createdAtMs: formatWireInt64(info.createdAtMs), revoked: info.revoked };
}

function encodeQuota(quota: Quota): Record<string, unknown> {
  return {
    maxKeys: formatWireInt64(quota.maxKeys),
    maxBytes: formatWireInt64(quota.maxBytes),
    maxRequestsPerSecond: formatWireInt64(quota.maxRequestsPerSecond),
    maxLeases: formatWireInt64(quota.maxLeases),
  };
}

function decodeQuota(message: unknown): Quota {
  const quota = (message ?? {}) as Record<string, unknown>;
  return {
    maxKeys: parseWireCount(quota['maxKeys'] ?? '0', 'quota.max_keys'),
    maxBytes: parseWireCount(quota['maxBytes'] ?? '0', 'quota.max_bytes'),
    maxRequestsPerSecond: parseWireCount(quota['maxRequestsPerSecond'] ?? '0', 'quota.max_requests_per_second'),
    maxLeases: parseWireCount(quota['maxLeases'] ?? '0', 'quota.max_leases'),
  };
}

/** Handlers for atoll.v1.Auth, keyed by method name. */
export function authServiceHandlers(api: AuthApi, logger: ErrorLogger): grpc.UntypedServiceImplementation {
  return {
    WhoAmI: unaryHandler(logger, async (_message, scope) => {
      const principal = await api.whoAmI(scope.context);
      return { tenant: principal.tenant, role: principal.role, clusterAdmin: principal.clusterAdmin, tokenId: principal.tokenId };
    }),
    CreateToken: unaryHandler(logger, async (message, scope) => {
      const created = await api.createToken({ tenant: text(message, 'tenant'), role: text(message, 'role'), name: text(message, 'name') }, scope.context);
      return { token: created.token, info: encodeToken(created.info) };
    }),
    ListTokens: unaryHandler(logger, async (message, scope) => ({
      tokens: (await api.listTokens({ tenant: text(message, 'tenant') }, scope.context)).map(encodeToken),
    })),
    RevokeToken: unaryHandler(logger, async (message, scope) => ({ info: encodeToken(await api.revokeToken({ id: text(message, 'id') }, scope.context)) })),
    SetQuota: unaryHandler(logger, async (message, scope) => {
      await api.setQuota({ tenant: text(message, 'tenant'), quota: decodeQuota((message as Record<string, unknown>)['quota']) }, scope.context);
      return {};
    }),
    GetUsage: unaryHandler(logger, async (message, scope) => ({
      tenants: (await api.usage({ tenant: text(message, 'tenant') }, scope.context)).map((usage) => ({
        tenant: usage.tenant,
        keys: formatWireInt64(usage.keys),
        bytes: formatWireInt64(usage.bytes),
        requestsPerSecond: usage.requestsPerSecond,
        quota: encodeQuota(usage.quota),
        historyBytes: formatWireInt64(usage.historyBytes),
        leases: formatWireInt64(usage.leases),
      })),
    })),
  };
}
