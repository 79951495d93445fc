/**
 * Hostile peers, on two real three-node clusters: one without authentication, one with an admin
 * token. Each attack asserts the precise error (gRPC status and `atoll-code`) and that nothing
 * changed: the victim's data intact and no node restarted (docs/security.md, "Peers").
 *
 * - Peer.Raft and Peer.Forward on the client port: UNIMPLEMENTED (Peer is never served there).
 * - On the peer port without the secret, or with a wrong one: UNAUTHENTICATED, for Raft, Forward
 *   and the Cluster lookups nodes make of each other; a forged higher-term Raft message is never
 *   stepped.
 * - With the right secret: a malformed frame ends only that stream (INVALID_ARGUMENT) and the
 *   cluster keeps serving; a forged snapshot installs nothing (the partition's data is intact, the
 *   node alive): its Raft message carries a well-formed transfer ticket, but no chunks were ever
 *   staged for it (snapshot data travels beside Raft, each chunk checked: snapshot-transfer.test.ts).
 * - The peer secret sent by a client (`atoll-peer-secret`, or as the bearer token) does not make it
 *   cluster admin.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AtollClient } from '../../src/client/index.js';
import { partitionOf } from '../../src/keys/partition-table.js';
import { toInternalKey } from '../../src/keys/tenant-keys.js';
import { newToken } from '../../src/tenancy/token.js';
import { encodeRaftFrame } from '../../src/node/raft-wire.js';
import { encodeSnapshotTicket } from '../../src/node/snapshot/snapshot-payload.js';
import { authServiceDefinition, clusterServiceDefinition, peerServiceDefinition } from '../../src/wire/protos.js';
import { LocalCluster } from '../integration/local-cluster.js';
import { waitFor } from '../node/in-process-cluster.js';

const PARTITIONS = 4;
const FORGED_TERM = 1_000_000;
const victimKey = 'victim/balance';
const victimValue = 'one hundred';

interface Status {
  readonly code: grpc.status;
  readonly atollCode: unknown;
}

function metadataWith(entries: Record<string, string>): grpc.Metadata {
  const metadata = new grpc.Metadata();
  for (const [key, value] of Object.entries(entries)) metadata.set(key, value);
  return metadata;
}

function statusOfError(error: grpc.ServiceError | null): Status {
  return { code: error?.code ?? grpc.status.OK, atollCode: error?.metadata?.get('atoll-code')[0] };
}

/** One unary call on a bare channel; resolves to its status. */
function unary(address: string, definition: grpc.ServiceDefinition, method: string, request: object, metadata = new grpc.Metadata()): Promise<Status & { response?: unknown }> {
  const { path, requestSerialize, responseDeserialize } = definition[method] as grpc.MethodDefinition<object, unknown>;
  const client = new grpc.Client(address, grpc.credentials.createInsecure());
  return new Promise((resolveStatus) => {
    client.makeUnaryRequest(path, requestSerialize, responseDeserialize, request, metadata, { deadline: Date.now() + 5_000 }, (error, response) => {
      client.close();
      resolveStatus({ ...statusOfError(error), response });
    });
  });
}

/** Opens Peer.Raft, writes these frames, ends the stream; resolves to the status it closed with. */
function raftStream(address: string, frames: Array<{ fromNode: number; payload: Uint8Array }>, metadata = new grpc.Metadata()): Promise<Status> {
  const { path, requestSerialize, responseDeserialize } = peerServiceDefinition['Raft'] as grpc.MethodDefinition<object, unknown>;
  const client = new grpc.Client(address, grpc.credentials.createInsecure());
  return new Promise((resolveStatus) => {
    const call = client.makeClientStreamRequest(path, requestSerialize, responseDeserialize, metadata, { deadline: Date.now() + 5_000 }, (error) => {
      client.close();
      resolveStatus(statusOfError(error));
    });
    call.on('error', () => undefined);
    for (const frame of frames) call.write({ fromNode: frame.fromNode, payload: Buffer.from(frame.payload) });
    // Leave the server time to answer mid-stream (a refused or malformed stream ends before 'end').
    setTimeout(() => call.end(), 300);
  });
}

/** A heartbeat claiming a huge term for every partition, from `from` to `to`. */
function forgedHeartbeats(from: number, to: number): { fromNode: number; payload: Uint8Array } {
  const messages = Array.from({ length: PARTITIONS }, (_, group) => ({ group, message: { type: 'heartbeat' as const, from, to, term: FORGED_TERM, commit: 0 } }));
  return { fromNode: from, payload: encodeRaftFrame(messages) };
}

const modes = [
  { name: 'without authentication', authenticated: false },
  { name: 'with authentication', authenticated: true },
] as const;

describe.each(modes)('hostile peers, a cluster $name', ({ authenticated }) => {
  let cluster: LocalCluster;
  let client: AtollClient;
  let pids: Array<number | undefined>;
  let tokenDir: string | undefined;
  const adminToken = newToken();
  const tenant = authenticated ? 'acme' : 'default';
  let tenantToken = '';
  const internalVictim = (): string => toInternalKey(tenant, victimKey);

  beforeAll(async () => {
    const extraArgs: string[] = [];
    if (authenticated) {
      tokenDir = mkdtempSync(join(tmpdir(), 'atoll-hostile-peer-'));
      writeFileSync(join(tokenDir, 'admin'), `${adminToken}\n`, { mode: 0o600 });
      extraArgs.push('--admin-token-file', join(tokenDir, 'admin'));
    }
    cluster = await LocalCluster.start({ partitions: PARTITIONS, extraArgs });
    if (authenticated) {
      const admin = new AtollClient({ endpoints: cluster.endpoints, token: adminToken, defaultTimeoutMs: 5_000 });
      tenantToken = (await admin.authCall('CreateToken', { tenant, role: 'readwrite', name: 'victim' }))['token'] as string;
      admin.close();
      client = new AtollClient({ endpoints: cluster.endpoints, token: tenantToken, defaultTimeoutMs: 5_000 });
    } else {
      client = cluster.client();
    }
    await client.put(victimKey, victimValue);
    pids = [1, 2, 3].map((id) => cluster.pidOf(id));
  }, 60_000);

  afterAll(async () => {
    client?.close();
    await cluster?.stop();
    if (tokenDir !== undefined) rmSync(tokenDir, { recursive: true, force: true });
  });

  /** Nothing changed: the victim's value, the same processes, no term anywhere near the forged one. */
  async function expectNothingChanged(): Promise<void> {
    expect(new TextDecoder().decode((await client.get(victimKey)).value)).toBe(victimValue);
    expect(cluster.crashes).toEqual([]);
    expect([1, 2, 3].map((id) => cluster.pidOf(id))).toEqual(pids);
    for (const id of [1, 2, 3]) {
      const info = await cluster.clusterInfoOf(id);
      for (const partition of info.partitions) expect(Number(partition.term)).toBeLessThan(FORGED_TERM);
    }
  }

  it('Peer.Raft and Peer.Forward on the client port: UNIMPLEMENTED', async () => {
    const clientPort = cluster.addresses.get(1)!;
    const secret = metadataWith({ 'atoll-peer-secret': cluster.peerSecret() });
    expect(await raftStream(clientPort, [forgedHeartbeats(2, 1)])).toEqual({ code: grpc.status.UNIMPLEMENTED, atollCode: undefined });
    // Even the right secret does not open Peer on the client port.
    expect(await raftStream(clientPort, [forgedHeartbeats(2, 1)], secret)).toEqual({ code: grpc.status.UNIMPLEMENTED, atollCode: undefined });
    const forgedPut = { hops: 0, tenant, put: { key: internalVictim(), value: Buffer.from('stolen') } };
    const forward = await unary(clientPort, peerServiceDefinition, 'Forward', forgedPut, secret);
    expect({ code: forward.code, atollCode: forward.atollCode }).toEqual({ code: grpc.status.UNIMPLEMENTED, atollCode: undefined });
    await expectNothingChanged();
  });

  it('the peer port without the secret or with a wrong one: UNAUTHENTICATED for Raft, Forward and ClusterInfo', async () => {
    const peerPort = cluster.peerAddresses.get(1)!;
    const unauthenticated = { code: grpc.status.UNAUTHENTICATED, atollCode: 'UNAUTHENTICATED' };
    const wrong = cluster.peerSecret().slice(0, -1) + (cluster.peerSecret().endsWith('A') ? 'B' : 'A');
    for (const metadata of [new grpc.Metadata(), metadataWith({ 'atoll-peer-secret': wrong }), metadataWith({ authorization: `Bearer ${adminToken}` })]) {
      expect(await raftStream(peerPort, [forgedHeartbeats(2, 1)], metadata)).toEqual(unauthenticated);
      const forgedPut = { hops: 0, tenant, put: { key: internalVictim(), value: Buffer.from('stolen') } };
      const forward = await unary(peerPort, peerServiceDefinition, 'Forward', forgedPut, metadata);
      expect({ code: forward.code, atollCode: forward.atollCode }).toEqual(unauthenticated);
      const info = await unary(peerPort, clusterServiceDefinition, 'ClusterInfo', {}, metadata);
      expect({ code: info.code, atollCode: info.atollCode }).toEqual(unauthenticated);
    }
    await expectNothingChanged();
  });

  it('with the secret, a malformed frame ends only that stream; the cluster keeps serving', async () => {
    const peerPort = cluster.peerAddresses.get(1)!;
    const secret = metadataWith({ 'atoll-peer-secret': cluster.peerSecret() });
    // Positive control: the secret opens the peer port.
    expect((await unary(peerPort, clusterServiceDefinition, 'ClusterInfo', {}, secret)).code).toBe(grpc.status.OK);
    for (const payload of [Uint8Array.of(1, 0, 0, 0, 9, 0), Uint8Array.of(7), new Uint8Array(0)]) {
      expect(await raftStream(peerPort, [{ fromNode: 2, payload }], secret)).toEqual({ code: grpc.status.INVALID_ARGUMENT, atollCode: 'INVALID_ARGUMENT' });
    }
    // The node logs through pino's asynchronous destination: the line may land after the answer.
    await waitFor(() => cluster.logOf(1).includes('malformed raft frame; closing that stream'), 5_000);
    expect(cluster.logOf(1)).toContain('malformed raft frame; closing that stream');
    await client.put('victim/after-frames', 'ok');
    expect(new TextDecoder().decode((await client.get('victim/after-frames')).value)).toBe('ok');
    await expectNothingChanged();
  });

  it('with the secret, a forged snapshot (a ticket naming no staged transfer) installs nothing; the partition keeps its data', async () => {
    const peerPort = cluster.peerAddresses.get(1)!;
    const secret = metadataWith({ 'atoll-peer-secret': cluster.peerSecret() });
    const partition = partitionOf(internalVictim(), PARTITIONS);
    const info = await cluster.clusterInfoOf(1);
    const term = Number(info.partitions.find((p) => p.id === partition)!.term);
    // Claimed from a member of the group, at a newer term, so node 1 takes it as its leader's.
    const from = 2;
    // A well-formed ticket (so the ticket check passes) whose digest names chunks nobody staged.
    const data = encodeSnapshotTicket({ digest: new Uint8Array(32).fill(0xab), chunkCount: 1, byteCount: 64 });
    const snap = {
      type: 'snap' as const,
      from,
      to: 1,
      term: term + 1,
      snapshot: { index: 1_000_000, term: term + 1, confState: { voters: [1, 2, 3], learners: [] } },
      chunk: { offset: 0, data, last: true },
    };
    expect(await raftStream(peerPort, [{ fromNode: from, payload: encodeRaftFrame([{ group: partition, message: snap }]) }], secret)).toEqual({
      code: grpc.status.OK,
      atollCode: undefined,
    });
    const deadline = Date.now() + 5_000;
    while (!cluster.logOf(1).includes('refused a snapshot from the leader') && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    expect(cluster.logOf(1)).toMatch(/no complete staged transfer matches the snapshot.*refused a snapshot from the leader|refused a snapshot from the leader.*no complete staged transfer matches the snapshot/);
    // The group recovers from the forged term and serves the victim's data from node 1 too.
    await cluster.waitReady();
    await expectNothingChanged();
  });

  // Only where there is authentication: without it every client is already the cluster admin, so
  // there is nothing for the secret to escalate to (defined, not skipped, in that mode).
  if (authenticated) it('the peer secret from a client does not make it cluster admin', async () => {
    const clientPort = cluster.addresses.get(1)!;
    const peerSecret = cluster.peerSecret();
    // The secret alone, in the metadata nodes use or as the bearer token: not authenticated at all.
    for (const metadata of [metadataWith({ 'atoll-peer-secret': peerSecret }), metadataWith({ authorization: `Bearer ${peerSecret}` })]) {
      const who = await unary(clientPort, authServiceDefinition, 'WhoAmI', {}, metadata);
      expect({ code: who.code, atollCode: who.atollCode }).toEqual({ code: grpc.status.UNAUTHENTICATED, atollCode: 'UNAUTHENTICATED' });
    }
    // A tenant's token plus the secret: still that tenant, not the cluster admin.
    const both = metadataWith({ authorization: `Bearer ${tenantToken}`, 'atoll-peer-secret': peerSecret });
    const who = await unary(clientPort, authServiceDefinition, 'WhoAmI', {}, both);
    expect(who.code).toBe(grpc.status.OK);
    expect(who.response).toMatchObject({ tenant, clusterAdmin: false });
    const quota = await unary(clientPort, authServiceDefinition, 'SetQuota', { tenant: 'globex', quota: { maxKeys: '1' } }, both);
    expect({ code: quota.code, atollCode: quota.atollCode }).toEqual({ code: grpc.status.PERMISSION_DENIED, atollCode: 'PERMISSION_DENIED' });
    await expectNothingChanged();
  });
});
