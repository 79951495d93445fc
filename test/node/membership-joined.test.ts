/**
 * A node that joined (--join) and has not yet recorded a member table follows the members as the
 * member it joined through listed them, its own entry 'joining', not a founding table that calls
 * every member active (simulator seed 30359: a joiner restarted before its first refresh reported
 * itself active, so an activate whose answer was lost looked done, and the later leave was refused
 * for good because the replicated table still said joining).
 */
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import type { ClusterDescriptor } from '../../src/node/cluster/cluster-descriptor.js';
import { Membership, type MembershipOptions } from '../../src/node/cluster/membership.js';

function membershipOf(descriptor: ClusterDescriptor): Membership {
  const stub = { addPeer: () => undefined, dropPeer: () => undefined };
  return new Membership({ id: 4, descriptor, peers: new Map(), driver: stub, logger: pino({ level: 'silent' }) } as unknown as MembershipOptions);
}

const base = {
  clusterId: 'c',
  nodeId: 4,
  partitionCount: 2,
  partitions: [],
  hashFunction: 'fnv1a32',
  replicationFactor: 3,
  secretDigests: [],
} as const;

describe('the member table a node follows before it recorded one', () => {
  it('a joiner keeps the states it was given, itself joining', () => {
    const membership = membershipOf({
      ...base,
      origin: 'joined',
      members: [
        { id: 1, clientAddress: 'n1:1', peerAddress: '', state: 'active' },
        { id: 2, clientAddress: 'n2:1', peerAddress: '', state: 'leaving' },
        { id: 4, clientAddress: 'n4:1', peerAddress: '', state: 'joining' },
      ],
    } as unknown as ClusterDescriptor);
    expect(membership.current().members.map((m) => [m.id, m.state])).toEqual([[1, 'active'], [2, 'leaving'], [4, 'joining']]);
    expect(membership.current().version).toBe(0);
  });

  it('a founding member starts from the founding table (every member active)', () => {
    const membership = membershipOf({
      ...base,
      origin: 'created',
      members: [1, 2, 4].map((id) => ({ id, clientAddress: `n${id}:1`, peerAddress: '' })),
    } as unknown as ClusterDescriptor);
    expect(membership.current().members.every((m) => m.state === 'active')).toBe(true);
  });
});
