/**
 * atoll-server's TLS and peer-port flags, checked and turned into credentials at start-up, so a
 * missing file, a key that does not match its certificate or a half-given pair stops the node with
 * a message naming the flag and the file instead of failing every handshake later.
 *
 * The design (docs/security.md, "Peers" and "TLS"): the client port serves KV, Cluster, health and
 * reflection with the client-facing certificate, and asks for client certificates only with
 * --tls-client-ca. Node-to-node traffic always has a port of its own (the peer port), which serves
 * only Peer and Cluster, each call proving the cluster peer secret. By default each node's peer
 * port is its --peers port + 100 on the same host (bound on --listen's host, port + 100);
 * --peer-addresses and --peer-listen override. With --peer-cert/--peer-key/--peer-ca the peer port
 * also requires a certificate from the peer CA, and nodes dial it presenting theirs. So a client
 * never needs a node certificate, and no client credential can ever speak Raft.
 */
import { createPrivateKey, X509Certificate, type KeyObject } from 'node:crypto';
import * as grpc from '@grpc/grpc-js';
import { AtollError } from '../errors.js';
import { channelCredentialsOf, serverCredentialsOf, type TlsIdentity } from '../wire/tls-credentials.js';
import { readPemFile } from '../wire/pem-file.js';

/** The file flags as given (flag or environment variable), before any check. */
export interface ServerTlsFlags {
  readonly tlsCert?: string | undefined;
  readonly tlsKey?: string | undefined;
  readonly tlsClientCa?: string | undefined;
  readonly peerCert?: string | undefined;
  readonly peerKey?: string | undefined;
  readonly peerCa?: string | undefined;
}

export interface PeerPortFlags {
  readonly id: number;
  /** Every node's client address (--peers). */
  readonly peers: ReadonlyMap<number, string>;
  /** The client port's bind address. */
  readonly listen: string;
  /** Every node's peer port (--peer-addresses); default each --peers address's port + peerPortOffset. */
  readonly peerAddresses?: ReadonlyMap<number, string> | undefined;
  /** Where to bind this node's peer port (--peer-listen); default its --peer-addresses entry, else --listen's port + peerPortOffset. */
  readonly peerListen?: string | undefined;
}

export interface PeerPort {
  /** Where this node binds its peer port. */
  readonly listen: string;
  /** Where to dial each peer's peer port. */
  readonly addresses: ReadonlyMap<number, string>;
  readonly credentials: grpc.ServerCredentials;
}

export interface ServerTlsPlan {
  /** The client port's credentials: TLS with --tls-cert, else plaintext. */
  readonly clientCredentials: grpc.ServerCredentials;
  /** The peer port (always: Peer is never served on the client port). */
  readonly peerPort: PeerPort;
  /** What this node dials its peers with. */
  readonly peerChannelCredentials: grpc.ChannelCredentials;
  /** For the start-up log line. */
  readonly summary: { readonly clientTls: boolean; readonly clientCertificates: boolean; readonly peerTls: boolean };
}

/** "--tls-cert (ATOLL_TLS_CERT)": the flag with its environment variable, for messages. */
function flagWithEnv(flag: string): string {
  return `${flag} (ATOLL_${flag.slice(2).toUpperCase().replaceAll('-', '_')})`;
}

function invalid(message: string): AtollError {
  return new AtollError('INVALID_ARGUMENT', message);
}

function certificateOf(flag: string, path: string, pem: Buffer): X509Certificate {
  let certificate: X509Certificate;
  try {
    certificate = new X509Certificate(pem);
  } catch (error) {
    throw invalid(`${flag} ${path}: not a PEM certificate (${(error as Error).message})`);
  }
  if (Date.parse(certificate.validTo) < Date.now()) throw invalid(`${flag} ${path}: the certificate expired on ${certificate.validTo}`);
  return certificate;
}

function privateKeyOf(flag: string, path: string, pem: Buffer): KeyObject {
  try {
    return createPrivateKey(pem);
  } catch (error) {
    throw invalid(`${flag} ${path}: not an unencrypted PEM private key (${(error as Error).message})`);
  }
}

/** A certificate and its key from two flags that go together: both, or neither (undefined). */
function identityOf(certFlag: string, keyFlag: string, certPath: string | undefined, keyPath: string | undefined): TlsIdentity | undefined {
  if (certPath === undefined && keyPath === undefined) return undefined;
  if (certPath === undefined || keyPath === undefined) {
    const [given, missing] = certPath === undefined ? [keyFlag, certFlag] : [certFlag, keyFlag];
    throw invalid(`${given} is set but ${flagWithEnv(missing)} is not: a certificate and its private key go together`);
  }
  const cert = readPemFile(certFlag, certPath);
  const key = readPemFile(keyFlag, keyPath);
  if (!certificateOf(certFlag, certPath, cert).checkPrivateKey(privateKeyOf(keyFlag, keyPath, key))) {
    throw invalid(`${keyFlag} ${keyPath} is not the private key of ${certFlag} ${certPath}`);
  }
  return { cert, key };
}

function caOf(flag: string, path: string): Buffer {
  const ca = readPemFile(flag, path);
  certificateOf(flag, path, ca);
  return ca;
}

/** --peer-cert, --peer-key and --peer-ca: all three or none. */
function peerTlsOf(flags: ServerTlsFlags): { identity: TlsIdentity; ca: Buffer } | undefined {
  const given = { '--peer-cert': flags.peerCert, '--peer-key': flags.peerKey, '--peer-ca': flags.peerCa };
  const missing = Object.entries(given).filter(([, path]) => path === undefined).map(([flag]) => flagWithEnv(flag));
  if (missing.length === 3) return undefined;
  if (missing.length > 0) throw invalid(`peer TLS needs --peer-cert, --peer-key and --peer-ca together; missing ${missing.join(', ')}`);
  const identity = identityOf('--peer-cert', '--peer-key', flags.peerCert, flags.peerKey) as TlsIdentity;
  return { identity, ca: caOf('--peer-ca', flags.peerCa as string) };
}

/** The default distance from a node's client port to its peer port (as npm start and the compose files use). */
export const peerPortOffset = 100;

/** host:port with the port moved by peerPortOffset; `what` names the address for the error. */
export function defaultPeerAddressOf(address: string, what: string): string {
  const match = /^(.*):(\d+)$/.exec(address);
  const port = match === null ? NaN : Number(match[2]);
  if (match === null || !(port > 0) || port + peerPortOffset > 65_535) {
    throw invalid(`${what} ${address}: cannot derive the peer port (its port + ${peerPortOffset}); set ${flagWithEnv('--peer-addresses')} and --peer-listen`);
  }
  return `${match[1]}:${port + peerPortOffset}`;
}

function peerAddressesOf(ports: PeerPortFlags): ReadonlyMap<number, string> {
  if (ports.peerAddresses !== undefined) return ports.peerAddresses;
  return new Map([...ports.peers].map(([id, address]) => [id, defaultPeerAddressOf(address, `--peers entry ${id}=`)]));
}

function peerListenOf(ports: PeerPortFlags, addresses: ReadonlyMap<number, string>): string {
  const ids = (map: ReadonlyMap<number, string>): string => [...map.keys()].sort((a, b) => a - b).join(',');
  if (ids(addresses) !== ids(ports.peers)) throw invalid(`--peer-addresses must name the same nodes as --peers (${ids(ports.peers)}), not ${ids(addresses)}`);
  const listen =
    ports.peerListen ?? (ports.peerAddresses !== undefined ? (addresses.get(ports.id) as string) : defaultPeerAddressOf(ports.listen, '--listen'));
  if (listen === ports.listen) throw invalid(`the peer port must differ from the client port (${listen})`);
  return listen;
}

/**
 * Checks the flags and reads the files. Throws an INVALID_ARGUMENT AtollError whose message is fit
 * to print as is.
 */
export function planServerTls(given: ServerTlsFlags, ports: PeerPortFlags): ServerTlsPlan {
  // An empty variable (ATOLL_TLS_CERT=) counts as unset.
  const flags = Object.fromEntries(Object.entries(given).filter(([, path]) => path !== '')) as ServerTlsFlags;
  const clientIdentity = identityOf('--tls-cert', '--tls-key', flags.tlsCert, flags.tlsKey);
  if (flags.tlsClientCa !== undefined && clientIdentity === undefined) {
    throw invalid('--tls-client-ca needs --tls-cert and --tls-key: client certificates are checked only by a TLS client port');
  }
  const clientCa = flags.tlsClientCa === undefined ? undefined : caOf('--tls-client-ca', flags.tlsClientCa);
  const peerTls = peerTlsOf(flags);
  const plaintext = grpc.ServerCredentials.createInsecure();
  const addresses = peerAddressesOf(ports);
  const peerPort = {
    listen: peerListenOf(ports, addresses),
    addresses,
    credentials: peerTls === undefined ? plaintext : serverCredentialsOf(peerTls.identity, peerTls.ca),
  };
  return {
    clientCredentials: clientIdentity === undefined ? plaintext : serverCredentialsOf(clientIdentity, clientCa),
    peerPort,
    peerChannelCredentials: channelCredentialsOf(peerTls && { ca: peerTls.ca, cert: peerTls.identity.cert, key: peerTls.identity.key }),
    summary: { clientTls: clientIdentity !== undefined, clientCertificates: clientCa !== undefined, peerTls: peerTls !== undefined },
  };
}
