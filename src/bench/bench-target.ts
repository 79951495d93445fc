/**
 * What the benchmark drives: the handful of operations its workloads need, behind one interface,
 * so the same load loop, the same key choice and the same clock measure Atoll (atoll-target.ts) and
 * etcd (etcd-target.ts) from the same kind of Node.js process.
 */

export const benchSystems = ['atoll', 'etcd'] as const;
export type BenchSystem = (typeof benchSystems)[number];

export type ReadConsistency = 'linearizable' | 'stale';

export interface BenchTarget {
  readonly system: BenchSystem;
  put(key: string, value: Uint8Array): Promise<void>;
  /** Resolves to whether the key was found. 'stale' is Atoll's stale read, etcd's serializable one. */
  get(key: string, consistency: ReadConsistency): Promise<boolean>;
  /** One atomic increment of a counter (etcd has none: there it is a put to the one key). */
  increment(key: string): Promise<void>;
  /** Reads every key under `prefix` (one bucket); resolves to how many there were. */
  readPrefix(prefix: string): Promise<number>;
  /** A transaction: read both keys at one snapshot, write both, commit (conflicts retried). */
  readTwoWriteTwo(keyA: string, keyB: string, value: Uint8Array): Promise<void>;
  /**
   * The targets the workers are spread over, worker w driving lanes[w mod n], each preloaded
   * (tenant-lanes.ts: one client per tenant); absent, every worker drives this target.
   */
  readonly lanes?: readonly BenchTarget[];
  close(): void;
}

/** Runs of a transaction after a conflict, the same for both systems (AtollClient's default). */
export const transactionRetries = 10;

/** "GRPCDeadlineExceededError" -> "DEADLINE_EXCEEDED" (etcd3's error classes). */
function codeOfClassName(name: string): string | undefined {
  const match = /^GRPC(\w+?)Error$/.exec(name);
  return match?.[1]?.replace(/([a-z])([A-Z])/g, '$1_$2').toUpperCase();
}

/**
 * A stable code for counting errors: an AtollError's `code`, an etcd3 error's gRPC status name, or
 * the error's class name when it has neither.
 */
export function errorCodeOf(error: unknown): string {
  if (typeof error !== 'object' || error === null) return 'UNKNOWN';
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string' && code !== '') return code;
  const name = (error as { name?: unknown }).name;
  const className = error.constructor?.name ?? '';
  return codeOfClassName(className) ?? (typeof name === 'string' && name !== 'Error' ? name : className || 'UNKNOWN');
}
