/**
 * ClusterInfo names the caller's tenant (callerTenant), so that a tenant's client can route its
 * keys as the node stores them, (tenant, bucket), straight to the leader (src/client/cluster-map.ts).
 * Without it two requests in three of a tenant went to the wrong node and were forwarded.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { newToken } from '../../src/tenancy/token.js';
import { decodeClusterInfoResponse, encodeClusterInfoResponse } from '../../src/wire/cluster-convert.js';
import { preferredLeaderOf } from '../../src/keys/placement.js';
import { InProcessCluster, waitFor } from './in-process-cluster.js';

const deadline = (): { deadlineMs: number } => ({ deadlineMs: Date.now() + 10_000 });

describe("ClusterInfo's callerTenant", () => {
  let cluster: InProcessCluster | undefined;
  afterEach(async () => {
    await cluster?.close();
    cluster = undefined;
  });

  it("names a tenant token's tenant, and nothing for the cluster admin or a caller without a token", async () => {
    const adminToken = newToken();
    cluster = new InProcessCluster({ snapshotEveryEntries: 10_000, logEntriesKeptAfterSnapshot: 1_000, adminToken });
    await cluster.start();
    const started = cluster;
    expect(await waitFor(() => started.leaderId() === preferredLeaderOf(0, [1, 2, 3], 3), 10_000)).toBe(true);
    const node = cluster.node(await cluster.waitForLeader());
    const admin = { ...deadline(), authorization: `Bearer ${adminToken}` };
    const acme = (await node.createToken({ tenant: 'acme', role: 'read', name: 'a' }, admin)).token;
    const info = await node.clusterInfo({ ...deadline(), authorization: `Bearer ${acme}` });
    expect(info.callerTenant).toBe('acme');
    expect(info.partitions.length).toBe(1);
    expect((await node.clusterInfo(admin)).callerTenant).toBeUndefined();
    expect((await node.clusterInfo(deadline())).callerTenant).toBeUndefined();
    // It travels on the wire, and an empty field (older servers) decodes as none.
    expect(decodeClusterInfoResponse(encodeClusterInfoResponse(info)).callerTenant).toBe('acme');
    expect(decodeClusterInfoResponse(encodeClusterInfoResponse({ ...info, callerTenant: undefined })).callerTenant).toBeUndefined();
  });
});
