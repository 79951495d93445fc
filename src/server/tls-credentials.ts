/**
 * gRPC credentials for Atoll's TLS ports and channels, from PEM contents already in memory (files
 * are read and checked by server-tls.ts; the client library takes what its caller passes). The
 * design, which port verifies what, is in docs/security.md ("TLS").
 */
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
  return grpc.credentials.createSsl(bufferOf(tls.ca), bufferOf(tls.key), bufferOf(tls.cert));
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
