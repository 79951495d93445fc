/**
 * What the peer transport logs about an unreachable peer (issue 34, "a clean start"): nodes that
 * start one after another print no warning, however often their streams to a peer still starting
 * fail (those failures go to debug); a peer unreachable for longer than the election timeout gets
 * one warning, not one per retry, and an info line when it is back. With peer TLS, dialling a peer
 * at 127.0.0.1 makes Node print no DEP0123 (an IP address as the TLS server name).
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Writable } from 'node:stream';
import * as grpc from '@grpc/grpc-js';
import { pino, type Logger } from 'pino';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { PeerTransport, type PeerTransportOptions } from '../../src/peer/grpc-peer-transport.js';
import { createGrpcServer } from '../../src/server/grpc-server.js';
import { peerServiceDefinition } from '../../src/wire/protos.js';
import { planServerTls } from '../../src/server/server-tls.js';

const SECRET = 's'.repeat(43);

interface Line {
  level: number;
  time: number;
  msg: string;
  peer?: number;
  err?: string;
  unreachableMs?: number;
}

/** A debug-level logger whose lines land in `lines` (pino's JSON, parsed). */
function capturingLogger(): { logger: Logger; lines: Line[] } {
  const lines: Line[] = [];
  const logger = pino(
    { level: 'debug' },
    new Writable({
      write(chunk: Buffer, _encoding, done) {
        for (const line of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(line) as Line);
        done();
      },
    }),
  );
  return { logger, lines };
}

const warnings = (lines: Line[]): Line[] => lines.filter((line) => line.level >= 40);
const sleep = (ms: number): Promise<void> => new Promise((resolveSleep) => setTimeout(resolveSleep, ms));

async function until(what: string, condition: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(10);
  }
}

/** A loopback port nothing listens on now (bound later by a peer that "starts"). */
function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolvePort(port));
    });
  });
}

const cleanups: Array<() => void | Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/**
 * A peer port at 127.0.0.1:`port` serving Peer.Raft: with `transport`, its server side (as
 * peer-service.ts wires it, without the secret check); else a handler that counts the frames in
 * `frames`.
 */
async function servePeerPort(port: number, transport?: PeerTransport, credentials = grpc.ServerCredentials.createInsecure()): Promise<grpc.Server & { frames: number }> {
  const server = Object.assign(createGrpcServer(), { frames: 0 });
  server.addService(peerServiceDefinition, {
    raft: (call: grpc.ServerReadableStream<unknown, unknown>, callback: grpc.sendUnaryData<unknown>) => {
      if (transport !== undefined) {
        transport.handleRaftStream(call, callback);
        return;
      }
      call.on('data', () => void server.frames++);
      call.on('end', () => callback(null, { frames: '0' }));
      call.on('error', () => undefined);
    },
  });
  await new Promise<void>((resolveBind, reject) => server.bindAsync(`127.0.0.1:${port}`, credentials, (error) => (error ? reject(error) : resolveBind())));
  cleanups.push(() => void server.forceShutdown());
  return server;
}

/**
 * Node `self`'s transport to node `peer` at 127.0.0.1:`port`, sending a node heartbeat every 20 ms
 * as the node does; `heard` counts the frames its server side took from the peer.
 */
function transportTo(self: number, peer: number, port: number, logger: Logger, options: PeerTransportOptions, credentials?: grpc.ChannelCredentials): PeerTransport & { heard: number } {
  const events = { onMessages: () => void transport.heard++, onPeerUnreachable: () => undefined };
  const transport = Object.assign(new PeerTransport(self, new Map([[peer, `127.0.0.1:${port}`]]), events, logger, SECRET, credentials, undefined, options), { heard: 0 });
  const heartbeats = setInterval(() => transport.send(peer, []), 20);
  cleanups.push(() => {
    clearInterval(heartbeats);
    transport.close();
  });
  return transport;
}

describe('peer transport outage logs', () => {
  it('two nodes starting 300 ms apart, the first already heard from the second: no warning, failures at debug', async () => {
    const [port1, port2] = [await freePort(), await freePort()];
    const node1 = capturingLogger();
    const node2 = capturingLogger();
    // Node 1 listens at once and dials node 2, which is still starting: its transport already
    // sends (node 1 hears from it) but its own peer port opens only 300 ms later, as when nodes
    // open their partitions before they listen.
    const transport1 = transportTo(1, 2, port2, node1.logger, { warnUnreachableAfterMs: 1_000, startGraceMs: 1_000 });
    await servePeerPort(port1, transport1);
    const transport2 = transportTo(2, 1, port1, node2.logger, { warnUnreachableAfterMs: 1_000, startGraceMs: 1_000 });
    await sleep(300);
    await servePeerPort(port2, transport2);
    // Each hears the other's heartbeats; then past the election timeout of both, so a late warning would be here too.
    await until('node 1 to reach node 2', () => transport2.heard > 0, 3_000);
    const heardBy2 = transport2.heard;
    await until('node 2 to keep hearing node 1', () => transport2.heard > heardBy2 && transport1.heard > 0, 3_000);
    await sleep(1_200);
    expect(warnings(node1.lines)).toEqual([]);
    expect(warnings(node2.lines)).toEqual([]);
    // Nothing at info either: the peer was never "reachable again", it was reached for the first time.
    expect([...node1.lines, ...node2.lines].filter((line) => line.level >= 30)).toEqual([]);
    // The failures are there, at debug, and so is the first connection.
    expect(node1.lines.some((line) => line.msg === 'raft stream to peer failed' && line.level === 20 && /ECONNREFUSED/.test(line.err ?? ''))).toBe(true);
    expect(node1.lines.some((line) => line.msg === 'raft stream to peer connected')).toBe(true);
    expect(node2.lines.some((line) => line.msg === 'raft stream to peer connected')).toBe(true);
    expect(transport1.isReachable(2) && transport2.isReachable(1)).toBe(true);
  }, 10_000);

  it('a peer down for longer than the election timeout: one warning, however many retries, and an info line when it is back', async () => {
    const port = await freePort();
    const { logger, lines } = capturingLogger();
    const server = await servePeerPort(port);
    transportTo(2, 1, port, logger, { warnUnreachableAfterMs: 300 });
    // Reached as the transport counts it (its stream stood a moment), not only frames received: a
    // peer never counted reached gets the start-up grace instead (a loaded run shut it down first).
    await until('the peer to be reached', () => server.frames > 5 && lines.some((line) => line.msg === 'raft stream to peer connected'), 3_000);

    server.forceShutdown();
    // The warning comes once the outage passed the bound, at a retry (reconnect backoff up to 1 s;
    // later on a loaded machine); then five more bounds: the transport retries several times.
    await until('the warning', () => warnings(lines).length > 0, 6_000);
    await sleep(1_500);
    const failures = lines.filter((line) => line.msg === 'raft stream to peer failed');
    expect(failures.length).toBeGreaterThanOrEqual(1);
    expect(failures.every((line) => line.level === 20)).toBe(true);
    expect(warnings(lines)).toHaveLength(1);
    expect(warnings(lines)[0]).toMatchObject({ level: 40, peer: 1, msg: 'peer unreachable for longer than the election timeout; retrying (logged again when it is back)' });
    expect(warnings(lines)[0]?.unreachableMs).toBeGreaterThanOrEqual(300);
    expect(warnings(lines)[0]?.err).toMatch(/UNAVAILABLE|CANCELLED/);

    await servePeerPort(port);
    await until('the info line', () => lines.some((line) => line.msg === 'peer reachable again'), 4_000);
    expect(lines.filter((line) => line.msg === 'peer reachable again')).toEqual([expect.objectContaining({ level: 30, peer: 1 })]);
    await sleep(300);
    expect(warnings(lines)).toHaveLength(1);
  }, 20_000);

  it('a peer back within the election timeout (a restart): no warning, no info', async () => {
    const port = await freePort();
    const { logger, lines } = capturingLogger();
    const server = await servePeerPort(port);
    // A bound well above a restart's outage even on a loaded machine (the restart is 100 ms; the
    // reconnection follows at the transport's next retry, up to 1 s later).
    transportTo(2, 1, port, logger, { warnUnreachableAfterMs: 4_000 });
    await until('the peer to be reached', () => server.frames > 5 && lines.some((line) => line.msg === 'raft stream to peer connected'), 3_000);
    server.forceShutdown();
    await sleep(100);
    const restarted = await servePeerPort(port);
    await until('the reconnection', () => restarted.frames > 5, 3_500);
    // Noticed at a send once the new stream has stood for a moment.
    await until('the reconnection line', () => lines.some((line) => line.msg === 'raft stream to peer reconnected'), 3_000);
    expect(lines.filter((line) => line.level >= 30)).toEqual([]);
    expect(lines.some((line) => line.msg === 'raft stream to peer failed')).toBe(true);
  }, 10_000);

  it('a peer never reached: one warning once the start-up grace is over, not one per retry', async () => {
    const port = await freePort();
    const { logger, lines } = capturingLogger();
    transportTo(2, 1, port, logger, { warnUnreachableAfterMs: 200, startGraceMs: 500 });
    await sleep(400);
    expect(warnings(lines)).toEqual([]);
    await sleep(1_000);
    expect(warnings(lines)).toEqual([expect.objectContaining({ level: 40, peer: 1, msg: 'peer not reached since this node started; retrying (logged again when it is back)' })]);
    expect(warnings(lines)[0]?.err).toMatch(/ECONNREFUSED/);
  }, 10_000);
});

describe('peer TLS to an IP address', () => {
  it('verifies the peer certificate without a TLS server name: no DEP0123', async () => {
    const certs = mkdtempSync(join(tmpdir(), 'atoll-peer-tls-'));
    cleanups.push(() => rmSync(certs, { recursive: true, force: true }));
    execFileSync('bash', [resolve(import.meta.dirname, '../../scripts/dev-certs.sh'), certs], { stdio: 'pipe' });
    const seen: string[] = [];
    const onWarning = (warning: Error & { code?: string }): void => void seen.push(warning.code ?? warning.message);
    process.on('warning', onWarning);
    cleanups.push(() => void process.off('warning', onWarning));

    // Node 1's and node 2's peer TLS exactly as atoll-server plans it (--peer-cert, --peer-key, --peer-ca).
    const [port1, port2] = [await freePort(), await freePort()];
    const peers = new Map([[1, '127.0.0.1:7001'], [2, '127.0.0.1:7002']]);
    const peerAddresses = new Map([[1, `127.0.0.1:${port1}`], [2, `127.0.0.1:${port2}`]]);
    const planOf = (id: number): ReturnType<typeof planServerTls> =>
      planServerTls(
        { peerCert: join(certs, `node${id}-peer.pem`), peerKey: join(certs, `node${id}-peer-key.pem`), peerCa: join(certs, 'peer-ca.pem') },
        { id, peers, listen: peers.get(id) as string, peerAddresses },
      );
    const server = await servePeerPort(port1, undefined, planOf(1).peerPort.credentials);
    const { logger, lines } = capturingLogger();
    transportTo(2, 1, port1, logger, {}, planOf(2).peerChannelCredentials);
    await until('frames over TLS to 127.0.0.1', () => server.frames > 0, 5_000);
    await sleep(50); // warnings are emitted on the next tick
    expect(seen).toEqual([]);
    expect(warnings(lines)).toEqual([]);

    // The check can see DEP0123: grpc-js's own credentials to the same address make Node warn
    // (recorded here instead of printed).
    const emitWarning = vi.spyOn(process, 'emitWarning').mockImplementation((...args: unknown[]) => void seen.push(String(args[2] ?? (args[1] as { code?: string } | undefined)?.code)));
    cleanups.push(() => emitWarning.mockRestore());
    const pem = (name: string): Buffer => readFileSync(join(certs, name));
    const control = new grpc.Client(`127.0.0.1:${port1}`, grpc.credentials.createSsl(pem('peer-ca.pem'), pem('node2-peer-key.pem'), pem('node2-peer.pem')));
    cleanups.push(() => control.close());
    await new Promise<void>((resolveReady, reject) => control.waitForReady(Date.now() + 5_000, (error) => (error ? reject(error) : resolveReady())));
    await until('DEP0123 from the control connection', () => seen.includes('DEP0123'), 2_000);
  }, 20_000);
});
