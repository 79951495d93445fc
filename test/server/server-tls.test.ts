/**
 * atoll-server's TLS flags (src/server/server-tls.ts): every half-given or unreadable setting stops
 * the node with a message naming the flag and the file; a good setting puts Peer on its own port.
 * The last test runs the real binary to check atoll-server.ts prints the message and exits 1.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { planServerTls, type PeerPortFlags, type ServerTlsFlags } from '../../src/server/server-tls.js';

const root = resolve(import.meta.dirname, '../..');
/** Made now: it.each builds its flags while the tests are collected, before beforeAll. */
const dir = mkdtempSync(join(tmpdir(), 'atoll-server-tls-'));
const file = (name: string): string => join(dir, name);

const peers = new Map([
  [1, '127.0.0.1:7001'],
  [2, '127.0.0.1:7002'],
]);
const peerAddresses = new Map([
  [1, '127.0.0.1:7101'],
  [2, '127.0.0.1:7102'],
]);
const ports: PeerPortFlags = { id: 1, peers, listen: '127.0.0.1:7001', peerAddresses };

/** Flags for full client TLS and peer mutual TLS of node 1, with `changes` applied. */
function flags(changes: Partial<Record<keyof ServerTlsFlags, string | undefined>> = {}): ServerTlsFlags {
  return {
    tlsCert: file('node1.pem'),
    tlsKey: file('node1-key.pem'),
    peerCert: file('node1-peer.pem'),
    peerKey: file('node1-peer-key.pem'),
    peerCa: file('peer-ca.pem'),
    ...changes,
  };
}

beforeAll(() => {
  execFileSync('bash', [join(root, 'scripts/dev-certs.sh'), dir], { stdio: 'pipe' });
  writeFileSync(file('not-pem.txt'), 'hello\n');
});

afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('planServerTls', () => {
  it('gives peers a port of their own even when nothing is configured: each client port + 100', () => {
    const plan = planServerTls({}, { ...ports, peerAddresses: undefined });
    expect(plan.peerPort.listen).toBe('127.0.0.1:7101');
    expect([...plan.peerPort.addresses]).toEqual([
      [1, '127.0.0.1:7101'],
      [2, '127.0.0.1:7102'],
    ]);
    expect(plan.summary).toEqual({ clientTls: false, clientCertificates: false, peerTls: false });
    // Bound on --listen's host (all interfaces in a container), dialled at the --peers hosts.
    const docker = planServerTls({}, { id: 1, peers: new Map([[1, 'node1:7001'], [2, 'node2:7001']]), listen: '0.0.0.0:7001' });
    expect(docker.peerPort.listen).toBe('0.0.0.0:7101');
    expect(docker.peerPort.addresses.get(2)).toBe('node2:7101');
    // --peer-listen alone moves only the bind address.
    expect(planServerTls({}, { ...ports, peerAddresses: undefined, peerListen: '0.0.0.0:9000' }).peerPort.listen).toBe('0.0.0.0:9000');
  });

  it('moves Peer to this node\'s --peer-addresses entry, or to --peer-listen', () => {
    const plan = planServerTls(flags({ tlsClientCa: file('ca.pem') }), ports);
    expect(plan.peerPort?.listen).toBe('127.0.0.1:7101');
    expect(plan.summary).toEqual({ clientTls: true, clientCertificates: true, peerTls: true });
    expect(planServerTls(flags(), { ...ports, peerListen: '0.0.0.0:7101' }).peerPort?.listen).toBe('0.0.0.0:7101');
  });

  it('treats an empty variable as unset', () => {
    const plan = planServerTls({ tlsCert: '', tlsKey: '', peerCert: '', peerKey: '', peerCa: '', tlsClientCa: '' }, { ...ports, peerAddresses: undefined });
    expect(plan.summary.clientTls).toBe(false);
  });

  it.each([
    ['a certificate without its key', flags({ tlsKey: undefined }), /^--tls-cert is set but --tls-key \(ATOLL_TLS_KEY\) is not/],
    ['a key without its certificate', flags({ tlsCert: undefined }), /^--tls-key is set but --tls-cert \(ATOLL_TLS_CERT\) is not/],
    ['a missing file', flags({ tlsCert: file('nope.pem') }), /^--tls-cert .*nope\.pem: cannot read it \(no such file\)/],
    ['a file that is not PEM', flags({ peerCa: file('not-pem.txt') }), /^--peer-ca .*not-pem\.txt: not a PEM file/],
    ['a certificate given as the key', flags({ tlsKey: file('node1.pem') }), /^--tls-key .*node1\.pem: not an unencrypted PEM private key/],
    ['a key from another pair', flags({ tlsKey: file('node2-key.pem') }), /^--tls-key .*node2-key\.pem is not the private key of --tls-cert .*node1\.pem/],
    ['two of the three peer files', flags({ peerCa: undefined }), /^peer TLS needs --peer-cert, --peer-key and --peer-ca together; missing --peer-ca \(ATOLL_PEER_CA\)/],
    ['a client CA without client TLS', flags({ tlsCert: undefined, tlsKey: undefined, tlsClientCa: file('ca.pem') }), /^--tls-client-ca needs --tls-cert and --tls-key/],
  ])('refuses %s', (_what, given, message) => {
    expect(() => planServerTls(given, ports)).toThrow(message);
  });

  it('refuses peer ports that do not fit --peers, or that cannot be derived', () => {
    expect(planServerTls(flags(), { ...ports, peerAddresses: undefined }).peerPort.listen).toBe('127.0.0.1:7101');
    expect(() => planServerTls({}, { ...ports, peers: new Map([[1, '127.0.0.1:65500'], [2, 'x:1']]), peerAddresses: undefined })).toThrow(
      /--peers entry 1= 127\.0\.0\.1:65500: cannot derive the peer port .*set --peer-addresses/,
    );
    expect(() => planServerTls(flags(), { ...ports, peerAddresses: new Map([[1, '127.0.0.1:7101']]) })).toThrow(/must name the same nodes as --peers \(1,2\), not 1/);
    expect(() => planServerTls(flags(), { ...ports, peerListen: '127.0.0.1:7001' })).toThrow(/the peer port must differ from the client port/);
  });
});

describe('atoll-server', () => {
  it('exits 1 with the message when a TLS file is missing', () => {
    const result = spawnSync(
      process.execPath,
      [join(root, 'dist/src/bin/atoll-server.js'), '--id', '1', '--peers', '1=127.0.0.1:7001', '--replication-factor', '1', '--tls-cert', file('nope.pem'), '--tls-key', file('node1-key.pem')],
      { encoding: 'utf8', timeout: 20_000, env: { ...process.env, ATOLL_LOG_LEVEL: 'error' } },
    );
    expect(result.status).toBe(1);
    expect(result.stderr).toMatch(/error: --tls-cert .*nope\.pem: cannot read it \(no such file\)/);
  });
});
