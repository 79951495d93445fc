/**
 * The member-table side of the node's cluster API: Cluster.ChangeMember (add, activate, leave,
 * remove; cluster admin only) and the members ClusterInfo lists. One job: turn an admin's request
 * into one compare-and-set change of the replicated member table (membership.ts), refusing with
 * MEMBERSHIP_REFUSED what would break the table's invariants or leave fewer active members than
 * the replication factor.
 */
import { requireClusterAdmin, type Principal } from '../../tenancy/principal.js';
import type * as api from '../../api/node-api.js';
import { peerAddressOf, type Membership } from './membership.js';
import { checkAddress, refusedMember, withJoining, withState, type MemberTable } from './membership-table.js';

export interface MembershipAdminOptions {
  readonly id: number;
  readonly replicationFactor: number;
  readonly membership: Membership;
  readonly principalOf: (context: api.CallContext) => Promise<Principal>;
  readonly isReachable: (node: number) => boolean;
  readonly adminAddresses?: ReadonlyMap<number, string>;
  /**
   * The partitions whose configuration (from each partition's leader) names `node` as a voter or
   * learner, or undefined when some partition's leader did not answer. Without it, remove does not
   * check (unit tests of the table alone).
   */
  readonly partitionsNaming?: (node: number) => Promise<number[] | undefined>;
}

export class MembershipAdmin {
  constructor(private readonly options: MembershipAdminOptions) {}

  async change(request: api.ChangeMemberRequest, context: api.CallContext): Promise<api.ChangeMemberResponse> {
    requireClusterAdmin(await this.options.principalOf(context), 'changing the cluster\'s members');
    const { membership } = this.options;
    const { id } = request;
    let table: MemberTable;
    switch (request.action) {
      case 'add': {
        const clientAddress = request.address ?? '';
        checkAddress(clientAddress, 'the new node\'s address');
        const member = { id, clientAddress, peerAddress: request.peerAddress ?? '', zone: request.zone ?? '' };
        table = await membership.change((current) => withJoining(current, { ...member, peerAddress: member.peerAddress === '' ? peerAddressOf(member) : member.peerAddress }));
        break;
      }
      case 'activate':
        table = await membership.change((current) => withState(current, id, 'active'));
        break;
      case 'remove':
        await this.checkHoldsNothing(id);
        table = await this.leaveOrRemove(request.action, id);
        break;
      case 'leave':
        table = await this.leaveOrRemove(request.action, id);
        break;
    }
    return { version: table.version, members: this.nodes(table) };
  }

  /**
   * Invariant: a node is removed only once no partition's configuration names it. Removed, it
   * shuts down; a voter it still was would count in that partition's quorum for good, so one more
   * failure would lose the quorum. A move onto a leaving node (assigned by the rebalancer before
   * the leave, run by a leader whose member table lagged) can land after the moves of
   * remove-node: then this refuses, and the CLI moves that replica off and asks again. A move that
   * still lands after the removal stops at its promote step (replica-moves.ts checks the target)
   * and takes its learner back out.
   */
  private async checkHoldsNothing(id: number): Promise<void> {
    const { membership, partitionsNaming } = this.options;
    const member = membership.current().members.find((m) => m.id === id);
    if (partitionsNaming === undefined || member === undefined || member.state === 'removed') return;
    const naming = await partitionsNaming(id);
    if (naming === undefined) throw refusedMember('view-incomplete', `cannot remove node ${id}: not every partition's leader answered, so whether it still holds a replica is unknown; retry`);
    if (naming.length > 0) {
      const shown = naming.slice(0, 8).join(', ') + (naming.length > 8 ? `, … (${naming.length})` : '');
      throw refusedMember('holds-replicas', `cannot remove node ${id}: it still holds replicas of partitions ${shown}; move them off first (atoll cluster remove-node does)`);
    }
  }

  private leaveOrRemove(action: 'leave' | 'remove', id: number): Promise<MemberTable> {
    const { membership, replicationFactor } = this.options;
    return membership.change((current) => {
      const next = withState(current, id, action === 'leave' ? 'leaving' : 'removed');
      // Invariant: at least replicationFactor members that may hold replicas (active, or joining:
      // a replacement receives them) remain, so every partition keeps RF replicas on distinct nodes.
      const holders = next.members.filter((member) => member.state === 'active' || member.state === 'joining').length;
      if (next !== current && holders < replicationFactor) {
        throw refusedMember('too-few-members', `removing node ${id} would leave ${holders} members to hold replicas; the replication factor is ${replicationFactor}: add a node first`);
      }
      return next;
    });
  }

  /** Every member that is not removed, as ClusterInfo lists them. */
  nodes(table: MemberTable = this.options.membership.current()): api.NodeInfo[] {
    const { id, isReachable, adminAddresses } = this.options;
    return table.members
      .filter((member) => member.state !== 'removed')
      .map((member) => {
        // Configured (--admin-addresses) first, else what the member recorded itself (a joined node).
        const adminAddress = adminAddresses?.get(member.id) || member.adminAddress || '';
        return {
          id: member.id,
          address: member.clientAddress,
          reachable: member.id === id || isReachable(member.id),
          ...(adminAddress !== '' && { adminAddress }),
          state: member.state,
          ...(member.zone !== '' && { zone: member.zone }),
          peerAddress: peerAddressOf(member),
        };
      });
  }

  /** ClusterInfo with the member table's members and version. */
  decorate(info: api.ClusterInfoResponse): api.ClusterInfoResponse {
    const table = this.options.membership.current();
    return { ...info, nodes: this.nodes(table), memberTableVersion: table.version };
  }
}
