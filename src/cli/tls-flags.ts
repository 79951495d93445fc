/**
 * The `atoll` command's global TLS flags (docs/security.md, "TLS"): --tls-ca, --tls-cert,
 * --tls-key and --tls-server-name, or ATOLL_TLS_CA, ATOLL_TLS_CERT, ATOLL_TLS_KEY and
 * ATOLL_TLS_SERVER_NAME. Any of them turns TLS on. In a node's container the server's own
 * ATOLL_TLS_CERT/ATOLL_TLS_KEY are set, so the CLI there speaks TLS and presents the node's
 * certificate (dev-certs.sh issues node certificates for client use too).
 */
import type { Command } from 'commander';
import { AtollError } from '../errors.js';
import { readPemFile } from '../wire/pem-file.js';
import type { TlsClientOptions } from '../wire/tls-credentials.js';

export interface TlsFlags {
  readonly tlsCa?: string;
  readonly tlsCert?: string;
  readonly tlsKey?: string;
  readonly tlsServerName?: string;
}

/** Adds the global TLS options to the `atoll` program. */
export function addTlsOptions(program: Command): Command {
  return program
    .option('--tls-ca <file>', 'use TLS and trust the nodes this PEM CA signed (default: $ATOLL_TLS_CA; system CAs)')
    .option('--tls-cert <file>', 'use TLS with this PEM client certificate, for nodes that require one (default: $ATOLL_TLS_CERT)')
    .option('--tls-key <file>', 'the PEM private key of --tls-cert (default: $ATOLL_TLS_KEY)')
    .option('--tls-server-name <name>', "check the nodes' certificates for NAME, not the address's host (default: $ATOLL_TLS_SERVER_NAME)");
}

/**
 * The client's TLS option from the flags, falling back to the environment; undefined (plaintext)
 * when none is set. Throws an INVALID_ARGUMENT AtollError naming an unreadable file or a lone half
 * of a certificate pair.
 */
export function clientTlsOf(flags: TlsFlags, env: Readonly<Record<string, string | undefined>>): TlsClientOptions | undefined {
  // An empty variable counts as unset, as compose files often leave them.
  const setting = (flag: string | undefined, name: string): string | undefined => flag ?? (env[name] || undefined);
  const ca = setting(flags.tlsCa, 'ATOLL_TLS_CA');
  const cert = setting(flags.tlsCert, 'ATOLL_TLS_CERT');
  const key = setting(flags.tlsKey, 'ATOLL_TLS_KEY');
  const serverNameOverride = setting(flags.tlsServerName, 'ATOLL_TLS_SERVER_NAME');
  if (ca === undefined && cert === undefined && key === undefined && serverNameOverride === undefined) return undefined;
  if ((cert === undefined) !== (key === undefined)) {
    throw new AtollError('INVALID_ARGUMENT', '--tls-cert and --tls-key (ATOLL_TLS_CERT, ATOLL_TLS_KEY) go together: a client certificate needs its private key');
  }
  return {
    ...(ca !== undefined && { ca: readPemFile('--tls-ca', ca) }),
    ...(cert !== undefined && { cert: readPemFile('--tls-cert', cert) }),
    ...(key !== undefined && { key: readPemFile('--tls-key', key) }),
    ...(serverNameOverride !== undefined && { serverNameOverride }),
  };
}
