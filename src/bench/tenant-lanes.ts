/**
 * Many keyspaces at once (`atoll bench --system etcd --tenants N`): N clients, one per tenant, and
 * the benchmark's workers spread over them (worker w drives tenant w mod N). Every key of tenant i
 * is prefixed `tenant-<i>/`, the same on every system, so a run against real etcd (one keyspace,
 * no tenants) writes N key prefixes, and a run against Atoll's etcd port, where each client
 * authenticates as a tenant of its own (Auth.Authenticate with that tenant's Atoll token as the
 * password, --etcd-password-file), writes into N etcd keyspaces: N buckets, spread over partitions.
 */
import { readFileSync } from 'node:fs';
import { AtollError } from '../errors.js';
import type { BenchSystem, BenchTarget, ReadConsistency } from './bench-target.js';

/** The prefix of every key of tenant `index` (the same against etcd and against Atoll). */
export function tenantPrefix(index: number): string {
  return `tenant-${index}/`;
}

/** One tenant's view of its client: every key prefixed. */
class PrefixedTarget implements BenchTarget {
  readonly system: BenchSystem;

  constructor(
    private readonly inner: BenchTarget,
    private readonly prefix: string,
  ) {
    this.system = inner.system;
  }

  put(key: string, value: Uint8Array): Promise<void> {
    return this.inner.put(this.prefix + key, value);
  }

  get(key: string, consistency: ReadConsistency): Promise<boolean> {
    return this.inner.get(this.prefix + key, consistency);
  }

  increment(key: string): Promise<void> {
    return this.inner.increment(this.prefix + key);
  }

  readPrefix(prefix: string): Promise<number> {
    return this.inner.readPrefix(this.prefix + prefix);
  }

  readTwoWriteTwo(keyA: string, keyB: string, value: Uint8Array): Promise<void> {
    return this.inner.readTwoWriteTwo(this.prefix + keyA, this.prefix + keyB, value);
  }

  close(): void {
    this.inner.close();
  }
}

/**
 * The tenants' clients as one target: BenchRun gives each worker a lane (`lanes`) and preloads
 * every lane. Called directly, the target is the first tenant's.
 */
export class TenantLanes implements BenchTarget {
  readonly system: BenchSystem;
  readonly lanes: readonly BenchTarget[];

  constructor(clients: readonly BenchTarget[]) {
    const [first] = clients;
    if (first === undefined) throw new AtollError('INVALID_ARGUMENT', 'tenant lanes need at least one client');
    this.system = first.system;
    this.lanes = clients.map((client, index) => new PrefixedTarget(client, tenantPrefix(index)));
  }

  private get first(): BenchTarget {
    return this.lanes[0] as BenchTarget;
  }

  put(key: string, value: Uint8Array): Promise<void> {
    return this.first.put(key, value);
  }

  get(key: string, consistency: ReadConsistency): Promise<boolean> {
    return this.first.get(key, consistency);
  }

  increment(key: string): Promise<void> {
    return this.first.increment(key);
  }

  readPrefix(prefix: string): Promise<number> {
    return this.first.readPrefix(prefix);
  }

  readTwoWriteTwo(keyA: string, keyB: string, value: Uint8Array): Promise<void> {
    return this.first.readTwoWriteTwo(keyA, keyB, value);
  }

  close(): void {
    for (const lane of this.lanes) lane.close();
  }
}

/** A password file holds one password a line; it is small (a token is 47 bytes). */
const maxPasswordFileBytes = 1024 * 1024;

/**
 * The passwords of --etcd-password-file, one a line (blank lines skipped): tenant i authenticates
 * with line i, so the file needs at least `tenants` lines.
 */
export function readPasswords(file: string, tenants: number): string[] {
  let text: string;
  try {
    const bytes = readFileSync(file);
    if (bytes.length > maxPasswordFileBytes) throw new AtollError('INVALID_ARGUMENT', `--etcd-password-file ${file} is larger than ${maxPasswordFileBytes} bytes`);
    text = bytes.toString('utf8');
  } catch (error) {
    if (error instanceof AtollError) throw error;
    throw new AtollError('INVALID_ARGUMENT', `--etcd-password-file ${file}: ${(error as Error).message}`);
  }
  const passwords = text
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '');
  if (passwords.length < tenants) {
    throw new AtollError('INVALID_ARGUMENT', `--etcd-password-file ${file} has ${passwords.length} passwords; ${tenants} tenant(s) need one each (one a line)`);
  }
  return passwords.slice(0, tenants);
}

/** Each tenant needs a worker of its own: --concurrency below --tenants would leave some idle. */
export function checkTenants(tenants: number, concurrencies: readonly number[]): void {
  const lowest = Math.min(...concurrencies);
  if (lowest < tenants) throw new AtollError('INVALID_ARGUMENT', `--tenants ${tenants} needs --concurrency of at least ${tenants} (each tenant gets one worker or more); got ${lowest}`);
}
