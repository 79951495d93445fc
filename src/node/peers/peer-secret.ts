/**
 * The cluster peer secret: what every node proves on every call to another node's peer port
 * (Peer.Raft, Peer.Forward, the Cluster lookups nodes make of each other). It never authorizes a
 * client call (docs/security.md, "Peers").
 *
 * Where a node gets it, first match wins:
 * 1. ATOLL_PEER_SECRET: the value itself (several separated by newlines or commas).
 * 2. --peer-secret-file FILE (ATOLL_PEER_SECRET_FILE) when FILE exists.
 * 3. The copy in the data directory (`atoll-peer-secret`), so later starts need no flag.
 * 4. Made at first start: the data directory's copy when there is one, else a new random secret,
 *    written to FILE. Without --peer-secret-file only a one-node cluster makes one (in the data
 *    directory): the nodes of a larger cluster must share it, so they refuse to start instead. The file is
 *    written to a temporary name and then link()ed into place, which fails if FILE exists: so when
 *    several nodes given the same path start together, exactly one secret wins and the others read it.
 * Whatever was found is copied into the data directory.
 *
 * Rotation: a file holds up to `maxPeerSecrets` secrets, one a line ('#' starts a comment). The
 * first is the one this node sends; every one is accepted. Add the new secret second everywhere,
 * then make it first everywhere, then remove the old one.
 */
import { hash, randomBytes, timingSafeEqual } from 'node:crypto';
import { closeSync, fsyncSync, linkSync, mkdirSync, openSync, readFileSync, renameSync, unlinkSync, writeSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { AtollError } from '../../errors.js';

/** The metadata key a node sends its secret in. */
export const peerSecretMetadataKey = 'atoll-peer-secret';
/** The copy of the secrets in a node's data directory. */
export const peerSecretDataFileName = 'atoll-peer-secret';
export const maxPeerSecrets = 8;
const minSecretLength = 16;
const maxSecretLength = 256;
/** A secret travels as a gRPC metadata value: visible ASCII, no spaces. */
const secretPattern = /^[\x21-\x7e]+$/;
const maxFileBytes = maxPeerSecrets * (maxSecretLength + 2) + 4_096;

function invalid(message: string): AtollError {
  return new AtollError('INVALID_ARGUMENT', message);
}

/** A new random secret: 32 bytes, base64url (43 characters). */
export function newPeerSecret(): string {
  return randomBytes(32).toString('base64url');
}

/**
 * The secrets in a file's text (or ATOLL_PEER_SECRET's value: commas separate too), current first.
 * Throws INVALID_ARGUMENT naming `source` for an empty list, a malformed secret or too many.
 */
export function parsePeerSecrets(text: string, source: string, options: { commas?: boolean } = {}): string[] {
  if (text.length > maxFileBytes) throw invalid(`${source}: longer than ${maxFileBytes} bytes; it holds at most ${maxPeerSecrets} secrets, one a line`);
  const secrets: string[] = [];
  for (const line of text.split(options.commas === true ? /[\r\n,]/ : /\r?\n/)) {
    const secret = line.trim();
    if (secret === '' || secret.startsWith('#')) continue;
    if (!secretPattern.test(secret)) throw invalid(`${source}: a peer secret is printable ASCII without spaces`);
    if (secret.length < minSecretLength || secret.length > maxSecretLength) {
      throw invalid(`${source}: a peer secret has ${minSecretLength} to ${maxSecretLength} characters (got ${secret.length})`);
    }
    if (!secrets.includes(secret)) secrets.push(secret);
  }
  if (secrets.length === 0) throw invalid(`${source}: no peer secret in it (one a line; the first is sent, all are accepted)`);
  if (secrets.length > maxPeerSecrets) throw invalid(`${source}: at most ${maxPeerSecrets} peer secrets`);
  return secrets;
}

function formatSecrets(secrets: readonly string[]): string {
  return `# Atoll cluster peer secrets, one a line: the first is sent, all are accepted (docs/security.md, "Peers").\n${secrets.join('\n')}\n`;
}

const digestOf = (secret: string): Buffer => hash('sha256', secret, 'buffer');

/**
 * Checks presented secrets against the accepted ones in constant time: both sides are hashed to
 * equal-length digests, compared with timingSafeEqual, and every accepted secret is always tried.
 */
export class PeerSecretCheck {
  private readonly digests: readonly Buffer[];

  constructor(secrets: readonly string[]) {
    if (secrets.length === 0) throw new AtollError('INVALID_ARGUMENT', 'a peer secret check needs at least one secret');
    this.digests = secrets.map(digestOf);
  }

  matches(presented: unknown): boolean {
    if (typeof presented !== 'string' || presented.length === 0 || presented.length > maxSecretLength) return false;
    const digest = digestOf(presented);
    let match = false;
    for (const accepted of this.digests) match = timingSafeEqual(digest, accepted) || match;
    return match;
  }
}

function errnoOf(error: unknown): string {
  return (error as NodeJS.ErrnoException).code ?? (error as Error).message;
}

function readSecretsFile(path: string, source: string): string[] | undefined {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    if (errnoOf(error) === 'ENOENT' || errnoOf(error) === 'ENOTDIR') return undefined;
    throw invalid(`${source} ${path}: cannot read it (${errnoOf(error)})`);
  }
  return parsePeerSecrets(text, `${source} ${path}`);
}

/** Writes `text` to a fresh temporary file beside `path`, synced; returns its name. */
function writeTemporary(path: string, text: string): string {
  const temporary = `${path}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`;
  const fd = openSync(temporary, 'wx', 0o600);
  try {
    writeSync(fd, text);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  return temporary;
}

/**
 * Creates `path` holding `secrets` unless it exists; returns what the file holds afterwards (the
 * winner's secrets when another process created it first). Never overwrites an existing file.
 */
export function createPeerSecretFile(path: string, secrets: readonly string[], source = '--peer-secret-file'): string[] {
  const temporary = writeTemporary(path, formatSecrets(secrets));
  try {
    linkSync(temporary, path);
  } catch (error) {
    if (errnoOf(error) !== 'EEXIST') throw error;
  } finally {
    unlinkSync(temporary);
  }
  const held = readSecretsFile(path, source);
  if (held === undefined) throw invalid(`${source} ${path}: vanished right after it was created`);
  return held;
}

/** Replaces `path` with `secrets` (the data directory's copy; a rename, so never half-written). */
function replaceFile(path: string, secrets: readonly string[]): void {
  renameSync(writeTemporary(path, formatSecrets(secrets)), path);
}

export interface PeerSecretSources {
  /** ATOLL_PEER_SECRET. */
  readonly value?: string | undefined;
  /** --peer-secret-file (ATOLL_PEER_SECRET_FILE). */
  readonly file?: string | undefined;
  /** The node's data directory: holds the copy. */
  readonly dataDir: string;
  /** Nodes in the cluster: a node of several cannot invent a secret the others would not know. */
  readonly nodeCount: number;
}

export interface LoadedPeerSecrets {
  /** Current first. */
  readonly secrets: readonly string[];
  /** Where they came from, for the start-up log line (never the secret). */
  readonly origin: 'environment' | 'file' | 'data-dir' | 'created';
}

/**
 * Finds or makes this node's peer secrets (the order is in the file comment). Throws an
 * INVALID_ARGUMENT AtollError whose message is one line fit to print, naming the flag.
 */
export function loadPeerSecrets(sources: PeerSecretSources): LoadedPeerSecrets {
  const copyPath = join(sources.dataDir, peerSecretDataFileName);
  const loaded = findOrMake(sources, copyPath);
  try {
    mkdirSync(sources.dataDir, { recursive: true });
    const copy = readSecretsFileQuietly(copyPath);
    if (copy === undefined || copy.join('\n') !== loaded.secrets.join('\n')) replaceFile(copyPath, loaded.secrets);
  } catch (error) {
    throw invalid(`--data-dir ${sources.dataDir}: cannot keep the peer secret's copy there (${errnoOf(error)})`);
  }
  return loaded;
}

function readSecretsFileQuietly(path: string): string[] | undefined {
  try {
    return readSecretsFile(path, 'data directory copy');
  } catch {
    return undefined;
  }
}

function findOrMake(sources: PeerSecretSources, copyPath: string): LoadedPeerSecrets {
  if (sources.value !== undefined && sources.value !== '') {
    return { secrets: parsePeerSecrets(sources.value, 'ATOLL_PEER_SECRET', { commas: true }), origin: 'environment' };
  }
  const file = sources.file === '' ? undefined : sources.file;
  if (file !== undefined) {
    const held = readSecretsFile(file, '--peer-secret-file');
    if (held !== undefined) return { secrets: held, origin: 'file' };
  }
  const copy = readSecretsFile(copyPath, `--data-dir copy`);
  if (file === undefined) {
    if (copy !== undefined) return { secrets: copy, origin: 'data-dir' };
    if (sources.nodeCount === 1) return { secrets: [newPeerSecret()], origin: 'created' };
    throw invalid(
      'no peer secret: give every node the same --peer-secret-file FILE (ATOLL_PEER_SECRET_FILE; the first node to start creates it), or the secret in ATOLL_PEER_SECRET',
    );
  }
  try {
    mkdirSync(dirname(file), { recursive: true });
    return { secrets: createPeerSecretFile(file, copy ?? [newPeerSecret()]), origin: copy !== undefined ? 'data-dir' : 'created' };
  } catch (error) {
    if (error instanceof AtollError) throw error;
    // A read-only place (a Kubernetes Secret that is missing now): the copy from before will do.
    if (copy !== undefined) return { secrets: copy, origin: 'data-dir' };
    const onKubernetes = process.env['KUBERNETES_SERVICE_HOST'] !== undefined;
    const hint = onKubernetes
      ? 'create the Secret once: kubectl create secret generic atoll-peer-secret --from-literal=secret=$(head -c 32 /dev/urandom | base64 | tr -d =+/)'
      : 'give every node the same --peer-secret-file (ATOLL_PEER_SECRET_FILE) in a writable place, or the secret in ATOLL_PEER_SECRET';
    throw invalid(`no peer secret: --peer-secret-file ${file} does not exist and cannot be created (${errnoOf(error)}); ${hint}`);
  }
}
