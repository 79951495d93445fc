/**
 * `atoll backup --out DIR` and `atoll restore --from DIR` (issue 20; format in README.md, "Backup
 * and restore").
 *
 * A backup reads every partition at its leader, one page at a time, at one revision per partition
 * (Cluster.BackupPage: the first page after a ReadIndex barrier fixes it), while the cluster keeps
 * serving writes. Each partition goes to its own file of JSON lines, hashed (SHA-256) as it is
 * written; the manifest, written last, records per partition its revision, key count and hash. A
 * directory without manifest.json is not a backup.
 *
 * Shapes (issue 32): a cluster's partition table is not always P equal ranges: splits and merges
 * make it any list of contiguous ranges, and a split-made partition's id is not below P. So the
 * manifest (version 2) records each partition's hash range [start, end) beside its id, and restore
 * checks that the ranges tile the hash space exactly once and that every key of a file hashes
 * into its entry's range. Restore never routes by the backup's table: it writes with ordinary
 * puts, which the client routes by the TARGET's own ClusterInfo ranges (its splits and merges, any
 * partition and node count). A version-1 manifest (no ranges) is read as the equal table of its
 * partitionCount, as the build that wrote it assumed.
 *
 * A restore first checks everything it can without writing: the manifest's shape, every file's
 * SHA-256 and size, every record's shape and the per-file key counts (BACKUP_DAMAGED), the
 * caller's right to write every tenant in it, and that the target holds no keys
 * (RESTORE_TARGET_NOT_EMPTY unless --force). Only then does it write the keys through ordinary
 * puts, a bounded number at a time. Values and remaining TTLs are kept; revisions are new.
 *
 * Signing (issue 33): the SHA-256 sums detect damage, not tampering (whoever can write the backup
 * can rewrite them). Given `--signing-key-file` (or ATOLL_BACKUP_KEY_FILE), `atoll backup` adds to
 * the manifest an HMAC-SHA256 of the rest of it under the operator's key, and `atoll restore` given
 * the same key refuses a manifest whose HMAC is missing or wrong (BACKUP_SIGNATURE_INVALID) before
 * it reads anything else. The manifest holds every file's size and SHA-256, so the HMAC covers
 * every byte of the backup. A restore without a key checks the sums only, and says so when the
 * manifest is signed.
 */
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import { createReadStream, createWriteStream, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync, type WriteStream } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { InvalidArgumentError, type Command } from 'commander';
import { AtollClient, type AtollClientOptions } from '../client/index.js';
import { AtollError } from '../errors.js';
import { bucketOf } from '../keys/bucket.js';
import { bucketHash, isBucketHashName, legacyBucketHash, type BucketHashName } from '../keys/bucket-hash.js';
import { equalRangeOf, partitionIdLimit, RangeTable, type PartitionRange } from '../keys/partition-table.js';
import { tenantTag } from '../keys/tenant-keys.js';
import { limits } from '../limits.js';
import { clientTlsOf, type TlsFlags } from './tls-flags.js';

/** A backup's files and the directory it creates are its owner's only: a cluster admin's backup holds every tenant's values. */
const backupFileMode = 0o600;
const backupDirMode = 0o700;

type Print = (line: string) => void;
interface Globals extends TlsFlags {
  json?: boolean;
  token?: string;
  tokenFile?: string;
  endpoints?: string;
  timeout?: number;
}
type Action = (client: AtollClient, print: Print, globals: Globals) => Promise<number>;
type Act = (work: (...args: unknown[]) => Action) => (...args: unknown[]) => Promise<void>;

export interface BackupIo {
  stderr(text: string): void;
  readonly env: Readonly<Record<string, string | undefined>>;
  createClient?: (options: AtollClientOptions) => AtollClient;
  readonly defaultEndpoints: string;
}

export const backupFormat = 'atoll-backup';
/** The version `atoll backup` writes: 2 records each partition's hash range. */
export const backupFormatVersion = 2;
/** Versions `atoll restore` reads: 1 (before ranges: P equal ranges, ids 0..P-1) and 2. */
const readableVersions: readonly number[] = [1, 2];
export const manifestName = 'manifest.json';

/** One partition's entry in the manifest. */
export interface ManifestPartition {
  readonly id: number;
  /** The partition's hash range [start, end) in the source's table when it was read (version 2). */
  readonly start: number;
  readonly end: number;
  /** Every key of the file is the partition's state at this revision. */
  readonly revision: number;
  readonly keys: number;
  readonly file: string;
  readonly bytes: number;
  /** Lower-case hex SHA-256 of the file's bytes. */
  readonly sha256: string;
}

export interface Manifest {
  readonly format: typeof backupFormat;
  /** 2 when written now; restore also reads 1 (whose entries carry no start and end). */
  readonly version: number;
  readonly createdAt: string;
  /**
   * partitionCount is the source's initial (equal-table) count, as ClusterInfo reports it; the
   * partitions list may hold more entries (splits) or fewer (merges). hashFunction names the
   * bucket hash the ranges are of.
   */
  readonly cluster: { readonly partitionCount: number; readonly replicationFactor: number; readonly hashFunction: string; readonly nodes: readonly string[] };
  /** The tenant the backup is limited to (a tenant admin's), or null: every tenant but the system's. */
  readonly tenant: string | null;
  /** The tenants whose keys the files hold. */
  readonly tenants: readonly string[];
  readonly partitions: readonly ManifestPartition[];
  /** Present when the backup was taken with a signing key: see manifestSignature. */
  readonly signature?: ManifestSignature;
}

export interface ManifestSignature {
  readonly algorithm: typeof signatureAlgorithm;
  /** Lower-case hex HMAC-SHA256, under the operator's key, of the manifest without this field (manifestSignature). */
  readonly mac: string;
}

const signatureAlgorithm = 'hmac-sha256';
/** A signing key file holds one key: at least this many characters (a random one: `head -c 32 /dev/urandom | base64`), at most a few KiB. */
const minSigningKeyChars = 32;
const maxSigningKeyFileBytes = 4096;

/** One line of a partition file. */
interface BackupRecord {
  /** Tenant ("default" for keys written without a tenant token). */
  readonly t: string;
  /** Key, as its tenant sees it. */
  readonly k: string;
  /** Value, base64. */
  readonly v: string;
  /** Expiry, Unix epoch ms; 0: never. */
  readonly e: number;
}

/** The manifest holds one entry (under 512 bytes, pretty-printed) per partition; anything larger is not one. */
const maxManifestBytes = limits.maxPartitionCount * 512 + 64 * 1024;
/** A record holds one key and one value, base64 (4/3), plus framing. */
const maxRecordChars = limits.maxKeyBytes * 6 + Math.ceil(limits.maxValueBytes / 3) * 4 + 1024;
/** How many times a partition's backup starts over when its revision was compacted meanwhile. */
const maxPartitionAttempts = 3;
/** How many times the whole backup starts over when the partition table changed while it ran. */
const maxTableAttempts = 3;
const maxConcurrency = 64;

function parseConcurrency(text: string): number {
  const value = Number(text);
  if (!/^\d+$/.test(text) || value < 1 || value > maxConcurrency) throw new InvalidArgumentError(`--concurrency must be an integer in [1, ${maxConcurrency}]`);
  return value;
}

function damaged(message: string): AtollError {
  return new AtollError('BACKUP_DAMAGED', message);
}

function partitionFileName(id: number): string {
  return `partition-${String(id).padStart(4, '0')}.jsonl`;
}

/**
 * The bucket hash of a record's key as the cluster routes it: the hash of the INTERNAL key's bucket,
 * which starts with the tenant's tag (tenant-keys.ts), so two tenants' buckets of one name hash apart.
 */
function recordHash(tenant: string, key: string, hash: BucketHashName): number {
  return bucketHash(bucketOf(`${tenantTag(tenant)}${key}`), hash);
}

/** The cluster's partition table from its ClusterInfo (its splits and merges), or undefined when the answer lists no complete table. */
function tableOfInfo(info: { readonly partitions: ReadonlyArray<{ readonly id: number; readonly rangeStart: number; readonly rangeEnd: number }> }): RangeTable | undefined {
  try {
    return RangeTable.of(info.partitions.map((partition) => ({ id: partition.id, start: partition.rangeStart, end: partition.rangeEnd })));
  } catch {
    return undefined;
  }
}

function sameTable(a: RangeTable, b: RangeTable): boolean {
  return a.size === b.size && a.ranges.every((range, i) => range.id === b.ranges[i]!.id && range.start === b.ranges[i]!.start && range.end === b.ranges[i]!.end);
}

/**
 * Reads a signing key file: its content without surrounding whitespace, at least
 * minSigningKeyChars characters (INVALID_ARGUMENT otherwise, naming the file).
 */
function readSigningKey(path: string): Buffer {
  let text: string;
  try {
    if (statSync(path).size > maxSigningKeyFileBytes) throw new AtollError('INVALID_ARGUMENT', `--signing-key-file ${path} is larger than ${maxSigningKeyFileBytes} bytes: it holds one key`);
    text = readFileSync(path, 'utf8').trim();
  } catch (error) {
    if (error instanceof AtollError) throw error;
    throw new AtollError('INVALID_ARGUMENT', `cannot read --signing-key-file ${path}: ${error instanceof Error ? error.message : String(error)}`);
  }
  if (text.length < minSigningKeyChars) {
    throw new AtollError('INVALID_ARGUMENT', `--signing-key-file ${path} holds ${text.length} characters; a signing key has at least ${minSigningKeyChars} (make one: head -c 32 /dev/urandom | base64 > ${path})`);
  }
  return Buffer.from(text, 'utf8');
}

/**
 * The signature of a manifest: HMAC-SHA256 under `key` of a domain tag and the manifest's compact
 * JSON without its `signature` field, in the manifest's own field order. Restore computes it over
 * the manifest as parsed, so any change to what it reads (a field, a file's size or SHA-256) changes it.
 */
function manifestSignature(manifest: Readonly<Record<string, unknown>>, key: Buffer): ManifestSignature {
  const { signature: _ignored, ...signed } = manifest;
  const mac = createHmac('sha256', key).update(`atoll-backup-manifest/v1\n${JSON.stringify(signed)}`, 'utf8').digest('hex');
  return { algorithm: signatureAlgorithm, mac };
}

/** BACKUP_SIGNATURE_INVALID unless the parsed manifest carries a valid signature under `key`. */
function checkSignature(manifest: unknown, key: Buffer, path: string): void {
  const invalid = (why: string): AtollError =>
    new AtollError('BACKUP_SIGNATURE_INVALID', `${path}: ${why}; the backup may have been altered since it was taken (or the key is not the one it was taken with): nothing was restored`);
  if (typeof manifest !== 'object' || manifest === null || Array.isArray(manifest)) throw invalid('not a JSON object');
  const signature = (manifest as Record<string, unknown>)['signature'] as Record<string, unknown> | undefined;
  if (typeof signature !== 'object' || signature === null) throw invalid('the manifest is not signed, and --signing-key-file was given');
  if (signature['algorithm'] !== signatureAlgorithm || typeof signature['mac'] !== 'string' || !/^[0-9a-f]{64}$/.test(signature['mac'])) {
    throw invalid(`the signature is not an ${signatureAlgorithm} of 64 hex digits`);
  }
  const expected = Buffer.from(manifestSignature(manifest as Record<string, unknown>, key).mac, 'hex');
  if (!timingSafeEqual(expected, Buffer.from(signature['mac'], 'hex'))) throw invalid('the signature does not match the manifest under the given key');
}

/** The signing key file of a backup or restore: --signing-key-file, else ATOLL_BACKUP_KEY_FILE; undefined for none. */
function signingKeyOf(options: { signingKeyFile?: string }, env: Readonly<Record<string, string | undefined>>): Buffer | undefined {
  const path = options.signingKeyFile ?? env['ATOLL_BACKUP_KEY_FILE'];
  return path === undefined || path === '' ? undefined : readSigningKey(path);
}

/** Thrown inside a backup attempt when a partition served a key outside the range the backup's table gives it: the table changed. */
class TableChanged extends Error {}

/** Runs `work` over `items`, at most `concurrency` at a time; the first failure stops new starts and is thrown. */
async function forEachBounded<T>(items: readonly T[], concurrency: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  let failure: unknown;
  const worker = async (): Promise<void> => {
    while (failure === undefined && next < items.length) {
      const item = items[next++] as T;
      try {
        await work(item);
      } catch (error) {
        failure ??= error;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, items.length) }, worker));
  if (failure !== undefined) throw failure;
}

function writeChunk(stream: WriteStream, text: string): Promise<void> {
  return new Promise((resolve, reject) => {
    stream.write(text, (error) => (error ? reject(error) : resolve()));
  });
}

function closeStream(stream: WriteStream): Promise<void> {
  return new Promise((resolve, reject) => {
    stream.once('error', reject);
    stream.end(() => resolve());
  });
}

/** Reads one partition at one revision into its file in `dir` (hashing as it writes); returns its manifest entry. */
async function backupPartition(
  client: AtollClient,
  range: PartitionRange,
  hashName: BucketHashName,
  dir: string,
  timeoutMs: number | undefined,
  tenants: Set<string>,
  progress: (keys: number) => void,
): Promise<ManifestPartition> {
  const id = range.id;
  const file = partitionFileName(id);
  const temporary = join(dir, `${file}.partial`);
  for (let attempt = 1; ; attempt++) {
    // Owner-only (issue 33): a cluster admin's backup holds every tenant's values.
    const stream = createWriteStream(temporary, { flags: 'w', mode: backupFileMode });
    const hash = createHash('sha256');
    let revision = 0;
    let pageToken = '';
    let keys = 0;
    let bytes = 0;
    try {
      // Bounded by the partition's keys: every page either ends the loop or moves the token on.
      do {
        const page = await client.backupPage({ partition: id, revision, pageToken, limit: limits.maxPageSize }, timeoutMs === undefined ? {} : { timeoutMs });
        if (revision !== 0 && page.revision !== revision) throw new AtollError('INTERNAL', `partition ${id} answered at revision ${page.revision}, not ${revision}`);
        revision = page.revision;
        let chunk = '';
        for (const item of page.items) {
          // Invariant of a finished backup: every key of a file hashes into its entry's range
          // (restore checks it). A key outside means the table changed since it was read.
          const hash = recordHash(item.tenant, item.key, hashName);
          if (hash < range.start || hash >= range.end) throw new TableChanged(`partition ${id} holds a key of hash ${hash}, outside [${range.start}, ${range.end})`);
          tenants.add(item.tenant);
          const record: BackupRecord = { t: item.tenant, k: item.key, v: Buffer.from(item.value).toString('base64'), e: item.expiresAtMs };
          chunk += `${JSON.stringify(record)}\n`;
        }
        if (chunk !== '') {
          hash.update(chunk, 'utf8');
          bytes += Buffer.byteLength(chunk, 'utf8');
          await writeChunk(stream, chunk);
        }
        keys += page.items.length;
        progress(page.items.length);
        if (page.nextPageToken !== '' && page.nextPageToken === pageToken) throw new AtollError('INTERNAL', `partition ${id}: the page token did not advance`);
        pageToken = page.nextPageToken;
      } while (pageToken !== '');
      await closeStream(stream);
      renameSync(temporary, join(dir, file));
      return { id, start: range.start, end: range.end, revision, keys, file, bytes, sha256: hash.digest('hex') };
    } catch (error) {
      stream.destroy();
      // A long partition read at an old revision can meet the compaction floor: start it over.
      if (error instanceof AtollError && error.code === 'COMPACTED' && attempt < maxPartitionAttempts) {
        progress(-keys);
        continue;
      }
      throw error;
    }
  }
}

/** A manifest that passed its checks, with every entry's range (version 1: the equal table's) and the hash its ranges are of. */
interface CheckedManifest {
  readonly manifest: Manifest;
  readonly hash: BucketHashName;
}

/**
 * Checks a manifest's shape (BACKUP_DAMAGED otherwise). Version 2: the entries' ranges tile
 * [0, 2^32) exactly once (RangeTable.of), ids are distinct partition ids, files are named by id.
 * Version 1 recorded no ranges: it must hold exactly the partitionCount equal partitions 0..P-1
 * (one taken after a split or merge cannot be checked, and is refused), and each entry is given
 * its equal range. Either way the result's entries all carry start and end.
 */
function checkManifest(value: unknown): CheckedManifest {
  const fail = (what: string): never => {
    throw damaged(`${manifestName}: ${what}`);
  };
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return fail('not a JSON object');
  const manifest = value as Record<string, unknown>;
  if (manifest['format'] !== backupFormat) fail(`format is not "${backupFormat}"`);
  const version = manifest['version'];
  if (typeof version !== 'number' || !readableVersions.includes(version)) fail(`version ${String(version)} is not one this build reads (${readableVersions.join(', ')})`);
  const cluster = manifest['cluster'] as Record<string, unknown> | undefined;
  if (typeof cluster !== 'object' || cluster === null) return fail('cluster is missing');
  const count = cluster['partitionCount'];
  if (!Number.isSafeInteger(count) || (count as number) < 1 || (count as number) > limits.maxPartitionCount) fail(`cluster.partitionCount is not an integer in [1, ${limits.maxPartitionCount}]`);
  // Servers always name their hash; an empty name could only come from a build before the field
  // was filled, all of which routed by FNV-1a (as the client's ClusterMap reads it).
  const named = version === 1 && cluster['hashFunction'] === '' ? legacyBucketHash : cluster['hashFunction'];
  if (!isBucketHashName(named)) return fail(`cluster.hashFunction ${JSON.stringify(String(named).slice(0, 64))} is not a bucket hash this build knows`);
  const tenants = manifest['tenants'];
  if (!Array.isArray(tenants) || !tenants.every((tenant) => typeof tenant === 'string')) fail('tenants is not a list of names');
  const partitions = manifest['partitions'];
  if (!Array.isArray(partitions)) return fail('partitions is not a list');
  if (partitions.length < 1 || partitions.length > limits.maxPartitionCount) fail(`${partitions.length} partition entries: a table has 1 to ${limits.maxPartitionCount}`);
  if (version === 1 && partitions.length !== count) {
    fail(`${partitions.length} partition entries for ${String(count)} partitions (a version-1 backup records no ranges, so it must hold the ${String(count)} equal partitions; take a new backup with this build)`);
  }
  const seen = new Set<number>();
  const entries: ManifestPartition[] = [];
  for (const entry of partitions as unknown[]) {
    if (typeof entry !== 'object' || entry === null) return fail('a partition entry is not an object');
    const p = entry as Record<string, unknown>;
    const id = p['id'];
    const idLimit = version === 1 ? (count as number) : partitionIdLimit;
    if (!Number.isSafeInteger(id) || (id as number) < 0 || (id as number) >= idLimit || seen.has(id as number)) fail('a partition entry has a bad or repeated id');
    seen.add(id as number);
    for (const field of ['revision', 'keys', 'bytes']) {
      if (!Number.isSafeInteger(p[field]) || (p[field] as number) < 0) fail(`partition ${String(id)}: ${field} is not a count`);
    }
    if (p['file'] !== partitionFileName(id as number)) fail(`partition ${String(id)}: file must be ${partitionFileName(id as number)}`);
    if (typeof p['sha256'] !== 'string' || !/^[0-9a-f]{64}$/.test(p['sha256'])) fail(`partition ${String(id)}: sha256 is not 64 hex digits`);
    let range: { start: number; end: number };
    if (version === 1) {
      range = equalRangeOf(id as number, count as number);
    } else {
      if (!Number.isSafeInteger(p['start']) || !Number.isSafeInteger(p['end'])) fail(`partition ${String(id)}: start and end are not a hash range`);
      range = { start: p['start'] as number, end: p['end'] as number };
    }
    entries.push({ ...(p as unknown as ManifestPartition), start: range.start, end: range.end });
  }
  // Every hash has exactly one owner among the entries: no gap (a missing partition) and no overlap.
  try {
    RangeTable.of(entries.map((entry) => ({ id: entry.id, start: entry.start, end: entry.end })));
  } catch (error) {
    fail(`the partitions' hash ranges do not cover [0, 2^32) exactly once: ${error instanceof Error ? error.message : String(error)}`);
  }
  return { manifest: { ...(value as Manifest), partitions: entries }, hash: named };
}

function readManifest(dir: string, key: Buffer | undefined): CheckedManifest {
  const path = join(dir, manifestName);
  let text: string;
  try {
    if (statSync(path).size > maxManifestBytes) throw damaged(`${path} is larger than ${maxManifestBytes} bytes`);
    text = readFileSync(path, 'utf8');
  } catch (error) {
    if (error instanceof AtollError) throw error;
    throw damaged(`cannot read ${path}: ${error instanceof Error ? error.message : String(error)} (a backup without its manifest is incomplete)`);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw damaged(`${path} is not JSON`);
  }
  // The signature first: a forged manifest is refused before anything it names is read.
  if (key !== undefined) checkSignature(parsed, key, path);
  return checkManifest(parsed);
}

/** The lines of a partition file, each checked to be one record; bounded memory (one line at a time). */
async function* recordsOf(path: string): AsyncGenerator<BackupRecord> {
  const lines = createInterface({ input: createReadStream(path, { encoding: 'utf8' }), crlfDelay: Infinity });
  let number = 0;
  for await (const line of lines) {
    number++;
    if (line.length > maxRecordChars) throw damaged(`${path}:${number}: a line longer than any record`);
    let record: unknown;
    try {
      record = JSON.parse(line);
    } catch {
      throw damaged(`${path}:${number}: not JSON`);
    }
    const r = record as Record<string, unknown>;
    if (typeof r !== 'object' || r === null || typeof r['t'] !== 'string' || typeof r['k'] !== 'string' || r['k'] === '' || typeof r['v'] !== 'string' || !Number.isSafeInteger(r['e']) || (r['e'] as number) < 0) {
      throw damaged(`${path}:${number}: not a backup record`);
    }
    yield r as unknown as BackupRecord;
  }
}

/** Checks one file against its manifest entry: size, SHA-256, then every record's shape, that its key hashes into the entry's range, and the key count. */
async function verifyPartitionFile(dir: string, entry: ManifestPartition, tenants: ReadonlySet<string>, hashName: BucketHashName): Promise<void> {
  const path = join(dir, entry.file);
  if (!existsSync(path)) throw damaged(`${path} is missing`);
  const size = statSync(path).size;
  if (size !== entry.bytes) throw damaged(`${path} has ${size} bytes; the manifest says ${entry.bytes}`);
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  const digest = hash.digest('hex');
  if (digest !== entry.sha256) throw damaged(`${path}: SHA-256 ${digest} does not match the manifest's ${entry.sha256}`);
  let keys = 0;
  for await (const record of recordsOf(path)) {
    keys++;
    if (!tenants.has(record.t)) throw damaged(`${path}: a key of tenant ${record.t}, which the manifest does not list`);
    // The file is the partition of its entry's range: a key outside it is in the wrong file.
    const hash = recordHash(record.t, record.k, hashName);
    if (hash < entry.start || hash >= entry.end) {
      throw damaged(`${path}:${keys}: key ${JSON.stringify(record.k.slice(0, 64))} hashes to ${hash}, outside partition ${entry.id}'s range [${entry.start}, ${entry.end})`);
    }
  }
  if (keys !== entry.keys) throw damaged(`${path} holds ${keys} keys; the manifest says ${entry.keys}`);
}

export function addBackupCommands(program: Command, act: Act, io: BackupIo): void {
  const progressLine = (text: string): void => io.stderr(`${text}\n`);

  program
    .command('backup')
    .description('write an online, consistent backup of every partition (each at one revision) into DIR')
    .requiredOption('--out <dir>', 'a new or empty directory for the backup')
    .option('--concurrency <n>', `partitions read at a time (1..${maxConcurrency}, default 2)`, parseConcurrency, 2)
    .option('--signing-key-file <file>', 'sign the manifest with HMAC-SHA256 under the key in FILE (at least 32 characters; default: $ATOLL_BACKUP_KEY_FILE); give it to restore too')
    .action(
      act((options) => async (client, print, globals) => {
        const { out, concurrency } = options as { out: string; concurrency: number };
        // Read before anything is written, so a bad key file leaves no directory.
        const key = signingKeyOf(options as { signingKeyFile?: string }, io.env);
        if (existsSync(out) && (!statSync(out).isDirectory() || readdirSync(out).length > 0)) {
          throw new AtollError('INVALID_ARGUMENT', `--out ${out} exists and is not an empty directory`);
        }
        const whoami = await client.authCall('WhoAmI');
        // Checked here too (each node checks every page), so a refused backup leaves no directory.
        if (whoami['clusterAdmin'] !== true && whoami['role'] !== 'admin') {
          throw new AtollError('PERMISSION_DENIED', `a backup needs a tenant admin token or the cluster admin token; this token's role is ${String(whoami['role'])}`);
        }
        mkdirSync(out, { recursive: true, mode: backupDirMode });
        const started = Date.now();
        let keys = 0;
        let entries: ManifestPartition[] = [];
        let manifest: Manifest | undefined;
        // Bounded: maxTableAttempts attempts. Each reads the partition table, backs up every
        // partition of it, and reads the table again: the backup is kept only when the table did
        // not change in between (a split or merge meanwhile would have moved keys between
        // partitions read at different moments), so the ranges the manifest records are the ones
        // the files were read under.
        for (let attempt = 1; manifest === undefined; attempt++) {
          const info = await client.clusterInfo();
          const table = tableOfInfo(info);
          if (table === undefined) throw new AtollError('UNAVAILABLE', 'the cluster listed no complete partition table (a node still starting?); try again');
          // Servers always name their hash; an empty name is an old build's FNV-1a (as ClusterMap reads it).
          const hashName = info.hashFunction === '' ? legacyBucketHash : info.hashFunction;
          if (!isBucketHashName(hashName)) throw new AtollError('CLUSTER_MISMATCH', `the cluster routes keys by the bucket hash ${JSON.stringify(hashName.slice(0, 64))}, which this build does not know; use a newer atoll`);
          // Files of an attempt that started over (the directory was new or empty: all of it is ours).
          for (const name of readdirSync(out)) if (name.startsWith('partition-')) rmSync(join(out, name), { force: true });
          keys = 0;
          entries = [];
          let reported = 0;
          let done = 0;
          const tenants = new Set<string>();
          const ranges = table.ranges;
          progressLine(`backup: ${ranges.length} partitions (initial count ${info.partitionCount}) from ${info.nodes.length} nodes into ${out}`);
          try {
            await forEachBounded(ranges, concurrency, async (range) => {
              const entry = await backupPartition(client, range, hashName, out, globals.timeout, tenants, (added) => {
                keys += added;
                // A line per 10,000 keys, so a large partition shows progress before it is done.
                if (keys - reported >= 10_000) {
                  reported = keys;
                  progressLine(`backup: ${keys} keys so far (${done}/${ranges.length} partitions done)`);
                }
              });
              entries.push(entry);
              done++;
              progressLine(`backup: partition ${range.id} done at revision ${entry.revision}: ${entry.keys} keys (${done}/${ranges.length} partitions, ${keys} keys)`);
            });
          } catch (error) {
            if (!(error instanceof TableChanged)) throw error;
          }
          const after = tableOfInfo(await client.clusterInfo());
          if (entries.length === ranges.length && after !== undefined && sameTable(table, after)) {
            entries.sort((a, b) => a.start - b.start);
            manifest = {
              format: backupFormat,
              version: backupFormatVersion,
              createdAt: new Date().toISOString(),
              cluster: { partitionCount: info.partitionCount, replicationFactor: info.replicationFactor, hashFunction: hashName, nodes: info.nodes.map((node) => node.address) },
              tenant: whoami['clusterAdmin'] === true ? null : String(whoami['tenant']),
              tenants: [...tenants].sort(),
              partitions: entries,
            };
            if (key !== undefined) manifest = { ...manifest, signature: manifestSignature(manifest as unknown as Record<string, unknown>, key) };
          } else if (attempt >= maxTableAttempts) {
            throw new AtollError('UNAVAILABLE', `the partition table changed during each of ${maxTableAttempts} attempts (splits or merges); run the backup again when they settle`);
          } else {
            progressLine('backup: the partition table changed while the backup ran (a split or merge): starting over');
          }
        }
        // The manifest is written last and renamed into place: a directory with one is complete.
        writeFileSync(join(out, `${manifestName}.partial`), `${JSON.stringify(manifest, null, 2)}\n`, { mode: backupFileMode });
        renameSync(join(out, `${manifestName}.partial`), join(out, manifestName));
        const seconds = ((Date.now() - started) / 1000).toFixed(1);
        if (globals.json === true) print(JSON.stringify({ out, partitions: entries.length, keys, seconds: Number(seconds), signed: key !== undefined }));
        else print(`backup of ${entries.length} partitions, ${keys} keys, written to ${out} in ${seconds} s${key !== undefined ? ' (manifest signed)' : ''}`);
        return 0;
      }),
    );

  program
    .command('restore')
    .description('check a backup in DIR, then write its keys into a new, empty cluster (values and remaining TTLs kept; revisions are new)')
    .requiredOption('--from <dir>', 'the backup directory (with manifest.json)')
    .option('--addresses <list>', 'comma-separated host:port list of the target cluster (default: --endpoints)')
    .option('--force', 'write even when the target cluster already holds keys')
    .option('--concurrency <n>', `puts in flight (1..${maxConcurrency}, default 16)`, parseConcurrency, 16)
    .option('--signing-key-file <file>', 'refuse the backup unless its manifest is signed under the key in FILE, the one backup was given (default: $ATOLL_BACKUP_KEY_FILE)')
    .action(
      act((options) => async (client, print, globals) => {
        const { from, force, concurrency } = options as { from: string; force?: boolean; concurrency: number };
        // 1. The backup, whole, before anything is written; its signature first when a key is given.
        const key = signingKeyOf(options as { signingKeyFile?: string }, io.env);
        const { manifest, hash } = readManifest(from, key);
        if (key === undefined && manifest.signature !== undefined) {
          progressLine(`restore: the manifest is signed, but no --signing-key-file was given: only its checksums are checked, which detect damage, not tampering`);
        }
        const tenants = new Set(manifest.tenants);
        let total = 0;
        for (const entry of manifest.partitions) {
          await verifyPartitionFile(from, entry, tenants, hash);
          total += entry.keys;
        }
        progressLine(`restore: ${from} verified: ${manifest.partitions.length} partition files, ${total} keys, ${tenants.size} tenants`);
        // 2. The right to write every tenant of the backup.
        const whoami = await client.authCall('WhoAmI');
        const clusterAdmin = whoami['clusterAdmin'] === true;
        const ownTenant = String(whoami['tenant']);
        for (const tenant of tenants) {
          if (tenant !== ownTenant && !clusterAdmin) {
            throw new AtollError('PERMISSION_DENIED', `the backup holds keys of tenant ${tenant}: restore it with that tenant's token or the cluster admin token`);
          }
        }
        // 3. The target holds no keys the caller can see (or --force).
        const info = await client.clusterInfo();
        if (force !== true) {
          for (const partition of info.partitions) {
            const page = await client.backupPage({ partition: partition.id, revision: 0, pageToken: '', limit: 1 });
            if (page.items.length > 0) {
              throw new AtollError('RESTORE_TARGET_NOT_EMPTY', `the target cluster holds keys (partition ${partition.id}); restore into a new cluster, or give --force to write over it`);
            }
          }
        }
        // 4. The writes. Other tenants' keys go through a short-lived readwrite token of that tenant.
        // Routing: every key goes where the TARGET's own table puts it, never by the backup's
        // ranges: a put is routed by the client's map, which is the target's ClusterInfo (its
        // splits and merges; any partition and node count), refreshed below before the first put,
        // and a node that no longer owns a key's range answers PARTITION_MOVED, which the client
        // follows. So the source's and the target's shapes are independent.
        progressLine(`restore: the target has ${info.partitions.length} partitions (initial count ${info.partitionCount}) on ${info.nodes.length} nodes; keys are routed by its table`);
        const clients = new Map<string, AtollClient>([[ownTenant, client]]);
        const temporaryTokens: string[] = [];
        const endpoints = ((options as { addresses?: string }).addresses ?? globals.endpoints ?? io.env['ATOLL_ENDPOINTS'] ?? io.defaultEndpoints).split(',');
        const tls = clientTlsOf(globals, io.env);
        let written = 0;
        let expired = 0;
        let reported = 0;
        try {
          for (const tenant of tenants) {
            if (clients.has(tenant)) continue;
            const created = await client.authCall('CreateToken', { tenant, role: 'readwrite', name: 'atoll-restore' });
            temporaryTokens.push(String((created['info'] as Record<string, unknown>)['id']));
            const tenantOptions: AtollClientOptions = { endpoints, pipelining: true, token: String(created['token']), ...(globals.timeout !== undefined && { defaultTimeoutMs: globals.timeout }), ...(tls !== undefined && { tls }) };
            const tenantClient = io.createClient?.(tenantOptions) ?? new AtollClient(tenantOptions);
            clients.set(tenant, tenantClient);
            // Its routing map is the target's table before its first put (ClusterInfo refreshes it).
            await tenantClient.clusterInfo();
          }
          for (const entry of manifest.partitions) {
            const inFlight = new Set<Promise<void>>();
            let failure: unknown;
            for await (const record of recordsOf(join(from, entry.file))) {
              if (failure !== undefined) break;
              let ttlMs: number | undefined;
              if (record.e !== 0) {
                const remaining = record.e - Date.now();
                if (remaining <= 0) {
                  expired++;
                  continue;
                }
                ttlMs = Math.max(remaining, limits.minTtlMs);
              }
              const target = clients.get(record.t) as AtollClient;
              const put = target
                .put(record.k, Buffer.from(record.v, 'base64'), ttlMs === undefined ? {} : { ttlMs })
                .then(() => {
                  written++;
                })
                .catch((error: unknown) => {
                  failure ??= error;
                })
                .finally(() => inFlight.delete(put));
              inFlight.add(put);
              // Bounded: at most `concurrency` puts in flight.
              if (inFlight.size >= concurrency) await Promise.race(inFlight);
              if (written - reported >= 10_000) {
                reported = written;
                progressLine(`restore: ${written}/${total} keys written`);
              }
            }
            await Promise.all(inFlight);
            if (failure !== undefined) throw failure;
            progressLine(`restore: partition file ${entry.file} done (${written}/${total} keys written)`);
          }
        } finally {
          for (const [tenant, tenantClient] of clients) if (tenant !== ownTenant) tenantClient.close();
          for (const id of temporaryTokens) await client.authCall('RevokeToken', { id }).catch(() => progressLine(`restore: could not revoke the temporary token ${id}; revoke it with atoll auth token revoke ${id}`));
        }
        if (globals.json === true) print(JSON.stringify({ from, written, expired }));
        else print(`restored ${written} keys from ${from}${expired > 0 ? ` (${expired} had expired and were skipped)` : ''}`);
        return 0;
      }),
    );
}
