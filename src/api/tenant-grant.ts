/**
 * A node's permission, handed to a listener that runs inside the node's own process (the etcd
 * port, src/etcd/), to act as one tenant for calls that carry no token (`--etcd-tenant`).
 *
 * It is an object, not a name: a node honours only grants it issued itself (AtollNode.grantTenant
 * keeps them in a WeakSet), and nothing that arrives over the wire can become one, since call
 * scopes are built from metadata (src/server/call-context.ts) and metadata is text. A client that
 * sends a tenant in a header or metadata names nothing the node reads.
 */
export class TenantGrant {
  constructor(readonly tenant: string) {}
}
