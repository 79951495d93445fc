/**
 * gRPC credentials for Atoll's TLS ports and channels, from PEM contents already in memory (files
 * are read and checked by src/server/server-tls.ts; the client library takes what its caller passes). The
 * design, which port verifies what, is in docs/security.md ("TLS").
 */
import { isIP } from 'node:net';
import { checkServerIdentity, connect, createSecureContext, type SecureContext } from 'node:tls';
import * as grpc from '@grpc/grpc-js';
import { AtollError } from '../errors.js';

/** How a client reaches a node's TLS client port. Strings and Buffers hold PEM text. */
export interface TlsClientOptions {
  /** CA certificates to verify the nodes against; the system's root CAs when absent. */
  readonly ca?: Buffer | string;
  /** A client certificate chain, for nodes that require one (--tls-client-ca); needs `key`. */
  readonly cert?: Buffer | string;
  /** The private key of `cert`. */
  readonly key?: Buffer | string;
  /** Check the node certificates for this name instead of each address's host. */
  readonly serverNameOverride?: string;
}

/** A certificate chain and its private key, as a TLS port or a dialling node presents them. */
export interface TlsIdentity {
  readonly cert: Buffer;
  readonly key: Buffer;
}

function bufferOf(pem: Buffer | string | undefined): Buffer | null {
  if (pem === undefined) return null;
  return typeof pem === 'string' ? Buffer.from(pem) : pem;
}

/** Checks the options' shape, so a bad option fails when the client is made, not at a first call. */
export function checkTlsClientOptions(tls: TlsClientOptions): TlsClientOptions {
  if ((tls.cert === undefined) !== (tls.key === undefined)) {
    throw new AtollError('INVALID_ARGUMENT', 'tls.cert and tls.key go together: a client certificate needs its private key');
  }
  if (tls.serverNameOverride !== undefined && tls.serverNameOverride.trim() === '') {
    throw new AtollError('INVALID_ARGUMENT', 'tls.serverNameOverride must not be empty');
  }
  return tls;
}

/** Plaintext without `tls`; otherwise TLS that verifies the node and presents `cert` if given. */
export function channelCredentialsOf(tls: TlsClientOptions | undefined): grpc.ChannelCredentials {
  if (tls === undefined) return grpc.credentials.createInsecure();
  checkTlsClientOptions(tls);
  const ca = bufferOf(tls.ca);
  const key = bufferOf(tls.key);
  const cert = bufferOf(tls.cert);
  return new ServerNameTlsCredentials(
    createSecureContext({ ...(ca !== null && { ca }), ...(key !== null && { key }), ...(cert !== null && { cert }) }),
  );
}

/**
 * The name a node's certificate is checked for: the channel option `grpc.ssl_target_name_override`
 * when set (tlsChannelOptionsOf), else the host of the channel's target ("10.0.0.5:7001",
 * "dns:node1:7001", "[::1]:7001").
 */
function expectedServerName(target: grpc.experimental.GrpcUri, options: grpc.ChannelOptions): string {
  const override: unknown = options['grpc.ssl_target_name_override'];
  if (typeof override === 'string' && override !== '') return override;
  // The ipv4:/ipv6: schemes may list several addresses; grpc-js takes the first as the authority.
  const authority = target.path.split(',')[0] ?? target.path;
  return grpc.experimental.splitHostPort(authority)?.host ?? authority;
}

/**
 * TLS channel credentials that send a server name (SNI) only for host names. grpc-js's own SSL
 * credentials always set the TLS ServerName to the target's host, and an IP address there makes
 * Node print its DEP0123 deprecation warning on every process's first connection (RFC 6066 allows
 * only host names). Without a server name, Node checks the certificate against the connection's
 * host, so an IP endpoint is still verified against the certificate's IP SANs.
 *
 * This implements grpc-js's ChannelCredentials contract (`_createSecureConnector`, public in its
 * type declarations since 1.13); everything else (ALPN h2, rejecting an unverified peer) is as in
 * grpc-js's own implementation.
 */
class ServerNameTlsCredentials extends grpc.ChannelCredentials {
  constructor(private readonly secureContext: SecureContext) {
    super();
  }

  _isSecure(): boolean {
    return true;
  }

  _equals(other: grpc.ChannelCredentials): boolean {
    return other instanceof ServerNameTlsCredentials && other.secureContext === this.secureContext;
  }

  _createSecureConnector(target: grpc.experimental.GrpcUri, options: grpc.ChannelOptions, callCredentials?: grpc.CallCredentials): grpc.experimental.SecureConnector {
    const name = expectedServerName(target, options);
    const secureContext = this.secureContext;
    return {
      connect: (socket) =>
        new Promise((resolve, reject) => {
          const tlsSocket = connect(
            {
              socket,
              secureContext,
              ALPNProtocols: ['h2'],
              ...(isIP(name) === 0 && { servername: name }),
              checkServerIdentity: (_host, certificate) => checkServerIdentity(name, certificate),
            },
            () => {
              if (!tlsSocket.authorized) {
                reject(tlsSocket.authorizationError);
                return;
              }
              resolve({ socket: tlsSocket, secure: true });
            },
          );
          tlsSocket.on('error', reject);
        }),
      waitForReady: () => Promise.resolve(),
      getCallCredentials: () => callCredentials ?? grpc.CallCredentials.createEmpty(),
      destroy: () => undefined,
    };
  }
}

/** Channel options that go with channelCredentialsOf (the name a certificate is checked for). */
export function tlsChannelOptionsOf(tls: TlsClientOptions | undefined): grpc.ChannelOptions {
  const name = tls?.serverNameOverride;
  return name === undefined ? {} : { 'grpc.ssl_target_name_override': name, 'grpc.default_authority': name };
}

/**
 * A TLS port presenting `identity`. With `clientCa` the handshake requires a client certificate
 * that chains to it and refuses every other connection; without, it asks for none.
 */
export function serverCredentialsOf(identity: TlsIdentity, clientCa?: Buffer): grpc.ServerCredentials {
  return grpc.ServerCredentials.createSsl(clientCa ?? null, [{ cert_chain: identity.cert, private_key: identity.key }], clientCa !== undefined);
}
