/**
 * Who is calling, and what they may do. A principal is derived by the node from the caller's
 * bearer token (never from anything in the request body) and travels with the request, so a node
 * that forwards a request forwards the caller's tenant, not its own. The one other source is a
 * tenant grant the node's own process configured for its etcd listener (src/api/tenant-grant.ts),
 * for calls that carry no token; nothing a client sends can be one.
 *
 * Roles, each including the one before:
 *   read       reads, prefix scans, transactions that only read
 *   readwrite  writes, commits and scripts
 *   admin      managing the tenant's own tokens, reading its usage
 * A cluster admin (the bootstrap token) may also manage every tenant's tokens and quotas and steer
 * the cluster (TransferLeader).
 */
import { AtollError } from '../errors.js';
import { defaultTenant } from '../keys/tenant-keys.js';

export const roles = ['read', 'readwrite', 'admin'] as const;
export type Role = (typeof roles)[number];

export interface Principal {
  readonly tenant: string;
  readonly role: Role;
  /** The bootstrap token: every tenant, quotas, cluster operations. */
  readonly clusterAdmin: boolean;
  /** The token's id (a prefix of its hash), for logs and `auth token list`; "" without auth. */
  readonly tokenId: string;
}

/** Everyone, when the cluster runs without authentication: today's single-tenant behaviour. */
export const anonymousPrincipal: Principal = Object.freeze({ tenant: defaultTenant, role: 'admin', clusterAdmin: true, tokenId: '' });

export function isRole(value: unknown): value is Role {
  return typeof value === 'string' && (roles as readonly string[]).includes(value);
}

export function roleAtLeast(role: Role, needed: Role): boolean {
  return roles.indexOf(role) >= roles.indexOf(needed);
}

/** Throws PERMISSION_DENIED unless the principal's role reaches `needed`. */
export function requireRole(principal: Principal, needed: Role, action: string): void {
  if (principal.clusterAdmin || roleAtLeast(principal.role, needed)) return;
  throw new AtollError('PERMISSION_DENIED', `${action} needs a ${needed} token; this token's role is ${principal.role}`, {
    role: principal.role,
    needed,
  });
}

export function requireClusterAdmin(principal: Principal, action: string): void {
  if (principal.clusterAdmin) return;
  throw new AtollError('PERMISSION_DENIED', `${action} needs the cluster admin token`);
}
