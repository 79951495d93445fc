/**
 * Every size, count and duration bound that the key model and the MVCC store enforce, in one
 * place so the relations between them can be asserted (TigerBeetle style: a limit on every
 * queue, buffer and loop, checked against the others at start-up, not discovered in production).
 *
 * Limits that the MVCC store checks while applying log entries (value size, batch size, TTL
 * range) must be identical on every replica of a partition: a replica with a smaller limit would
 * reject an entry the others accepted and its state would diverge. Treat them as cluster
 * configuration, never as a per-node tuning knob.
 */
import assert from 'node:assert/strict';

const kibibyte = 1024;
const mebibyte = 1024 * kibibyte;
const dayMs = 24 * 60 * 60 * 1000;

export interface Limits {
  /** A key is at most this many UTF-8 bytes (a product promise: 4 KiB). */
  readonly maxKeyBytes: number;
  /** A stored value is at most this many bytes. */
  readonly maxValueBytes: number;
  /** The largest gRPC message or Raft log entry the system builds or accepts. */
  readonly maxMessageBytes: number;
  /** Room a message needs besides one key and one value: framing, metadata, revisions. */
  readonly messageOverheadBytes: number;
  /** A structured key has at most this many parts after its bucket. */
  readonly maxKeyParts: number;
  /** Scans return at most this many keys per page. */
  readonly maxPageSize: number;
  /** The page size when a scan does not ask for one. */
  readonly defaultPageSize: number;
  /**
   * One scan page examines at most about this many stored versions before it stops and returns
   * a continuation, so a prefix full of tombstones or expired keys cannot stall a node.
   */
  readonly maxScanVersions: number;
  /** TTLs are whole milliseconds in [minTtlMs, maxTtlMs]. */
  readonly minTtlMs: number;
  readonly maxTtlMs: number;
  /** Partition counts are in [1, maxPartitionCount]. */
  readonly maxPartitionCount: number;
  /** A batch or transaction writes at most this many keys. */
  readonly maxBatchOps: number;
  /** A batch or transaction carries at most this many key and value bytes in total. */
  readonly maxBatchBytes: number;
  /** A serializable transaction declares at most this many read keys and read prefixes. */
  readonly maxTxnReadKeys: number;
  readonly maxTxnReadPrefixes: number;
  /** Snapshot chunks are cut once they reach this size (one entry may push a chunk past it). */
  readonly snapshotChunkBytes: number;
  /** Physical compaction deletes at most this many versions per storage write. */
  readonly compactionBatchOps: number;
  /** A request that arrives without a deadline gets this long, so no call waits forever. */
  readonly defaultCallTimeoutMs: number;
  /**
   * One KV.Stream runs at most this many requests at once; past it the server stops reading the
   * stream (gRPC flow control then slows the client) instead of queueing without bound. 256, not
   * 1,024: a tenant's never-read streams put their whole bound in flight at once, and at 1,024 a
   * stream the ordinary tenant of the hostile load run saw errors for seconds (docs/security.md).
   */
  readonly maxStreamRequestsInFlight: number;
  /** A transaction commits at most this long after it began (its handle then fails with TXN_EXPIRED). */
  readonly maxTxnDurationMs: number;
  /** A prefix read inside a transaction or script returns at most this many keys (else RESOURCE_EXHAUSTED). */
  readonly maxTxnPrefixKeys: number;
  /** A script's source is at most this many UTF-8 bytes. */
  readonly maxScriptBytes: number;
  /** A script evaluates at most this many steps (statements, expressions and loop turns). */
  readonly maxScriptSteps: number;
  /** A script reads and writes at most this many distinct keys (keys returned by prefix reads count). */
  readonly maxScriptKeys: number;
  /** A script evaluates for at most this long (its reads included) before it fails with SCRIPT_LIMIT. */
  readonly maxScriptMs: number;
  /** Parameters bound to a script: at most this many. */
  readonly maxScriptParams: number;
  /** A transaction's note (a script's return value, kept for retries) is at most this many bytes. */
  readonly maxTxnNoteBytes: number;
  /** A script that only reads returns at most this many bytes of JSON (one that writes: maxTxnNoteBytes). */
  readonly maxScriptResultBytes: number;
  /**
   * Scripts running at one node at once, all tenants, and one tenant's; more wait in line, at most
   * maxPendingRequestsPerPartition of a tenant (else RESOURCE_EXHAUSTED, reason
   * script-concurrency) and maxPendingRequestsPerNode in all (else OVERLOADED). Per node, not
   * cluster configuration.
   */
  readonly maxScriptsPerNode: number;
  readonly maxScriptsPerTenant: number;
  /**
   * A tenant's script time at one node: a budget of scriptCpuBurstMs that refills at
   * scriptCpuMsPerSecond; a script is refused (QUOTA_EXCEEDED, reason script-cpu) while its
   * tenant's budget is spent. Per node (src/node/service/script-scheduler.ts).
   */
  readonly scriptCpuMsPerSecond: number;
  readonly scriptCpuBurstMs: number;
  /**
   * A call's deadline is at most this far away; a later one is clamped to it, so every timer a
   * deadline sets is a real one (setTimeout fires delays past 2^31 - 1 ms at once).
   */
  readonly maxCallTimeoutMs: number;
  /**
   * Client work admitted at one node and not yet answered: proposals waiting to apply and
   * linearizable reads waiting for their ReadIndex round, per partition and per node. Past either
   * bound a request fails at once with OVERLOADED; ticks and Raft messages are never refused.
   * Together they also bound the loop's queue of client tasks (each admitted request queues one).
   */
  readonly maxPendingRequestsPerPartition: number;
  readonly maxPendingRequestsPerNode: number;
  /** Requests one node has forwarded to others and not yet had answered (else OVERLOADED). */
  readonly maxForwardsInFlight: number;
  /** A tenant has at most this many tokens, revoked ones included (else RESOURCE_EXHAUSTED). */
  readonly maxTokensPerTenant: number;
  /**
   * Leases a tenant may hold at once, all partitions, when its quota record sets no lease quota
   * (QUOTA_EXCEEDED past it; `atoll auth quota set --leases` sets a tenant's own).
   */
  readonly defaultLeaseQuota: number;
  /**
   * A connection (remote address and port) whose calls presented a token that failed to
   * authenticate this many times within failedAuthWindowMs is refused at once (UNAUTHENTICATED),
   * without a token lookup, until the window passes.
   */
  readonly maxFailedAuthsPerConnection: number;
  readonly failedAuthWindowMs: number;
  /**
   * A source address whose connections failed to authenticate this many times within
   * failedAuthSourceWindowMs has its new connections closed at accept until the window passes
   * (its connections that never failed keep serving; src/node/service/failed-auths.ts).
   */
  readonly maxFailedAuthsPerSource: number;
  readonly failedAuthSourceWindowMs: number;
  /** Connections tracked for failed authentications, and unknown token hashes remembered. */
  readonly maxTrackedConnections: number;
  readonly maxUnknownTokensCached: number;
  /** Open watches one node serves, and one tenant at one node (else RESOURCE_EXHAUSTED). */
  readonly maxWatchersPerNode: number;
  readonly maxWatchersPerTenant: number;
  /** A partition's in-memory tail of recent changes (src/watch/watch-hub.ts): versions and bytes. */
  readonly watchRingChanges: number;
  readonly watchRingBytes: number;
  /** One read of retained history by a watcher behind the ring: versions and bytes. */
  readonly watchReadChanges: number;
  readonly watchReadBytes: number;
  /**
   * Reads of retained history by watchers that run at once at a node; more wait for a turn,
   * tenant by tenant (src/watch/history-turns.ts).
   */
  readonly maxHistoryReadsPerNode: number;
  /**
   * A tenant's reads of retained history at one node, in bytes of keys and values a second, and
   * the burst it may read at once: past them its watchers wait for their next read while other
   * tenants' go on (src/watch/history-turns.ts).
   */
  readonly watchHistoryBytesPerSecond: number;
  readonly watchHistoryBurstBytes: number;
  /** An idle watch that asked for progress gets a progress message this often. */
  readonly watchProgressIntervalMs: number;
  /**
   * A watcher whose stream buffer stays full this long is cancelled (WATCH_OVERFLOW), and a stream
   * that has watch bytes queued and gets none of them written for this long is cut off (closed
   * with RST_STREAM, its queued bytes dropped).
   */
  readonly watchStallMs: number;
  /**
   * Bytes held for watch clients (src/watch/watch-memory.ts): history read for a watcher and
   * messages queued for the transport until it has written them, per HTTP/2 stream, per
   * connection, per tenant and per node. A watch is refused (RESOURCE_EXHAUSTED, reason
   * watch-memory) while any of its levels is full; a watcher waits for room at a full level.
   */
  readonly watchStreamBytes: number;
  readonly watchConnectionBytes: number;
  readonly watchTenantBytes: number;
  readonly watchNodeBytes: number;
}

/**
 * What one watch event costs in memory besides its key and value bytes (its objects, revision
 * strings and protobuf framing; src/watch/watch-memory.ts estimates with it), message overhead
 * included. A watcher reserves, before a read of history, watchReadBytes plus this much for
 * each of watchReadChanges.
 */
export const watchChangeOverheadBytes = 192;

export const defaultLimits: Limits = Object.freeze({
  maxKeyBytes: 4 * kibibyte,
  maxValueBytes: 1 * mebibyte,
  maxMessageBytes: 4 * mebibyte,
  messageOverheadBytes: 64 * kibibyte,
  maxKeyParts: 64,
  maxPageSize: 1000,
  defaultPageSize: 100,
  maxScanVersions: 10_000,
  minTtlMs: 1,
  maxTtlMs: 10 * 365 * dayMs,
  maxPartitionCount: 65_536,
  maxBatchOps: 128,
  maxBatchBytes: 3 * mebibyte,
  maxTxnReadKeys: 1024,
  maxTxnReadPrefixes: 16,
  snapshotChunkBytes: 256 * kibibyte,
  compactionBatchOps: 1000,
  defaultCallTimeoutMs: 10_000,
  maxStreamRequestsInFlight: 64,
  maxTxnDurationMs: 60_000,
  maxTxnPrefixKeys: 10_000,
  maxScriptBytes: 64 * kibibyte,
  maxScriptSteps: 100_000,
  maxScriptKeys: 10_000,
  maxScriptMs: 2_000,
  maxScriptParams: 256,
  maxTxnNoteBytes: 64 * kibibyte,
  maxScriptResultBytes: 2 * mebibyte,
  maxScriptsPerNode: 32,
  maxScriptsPerTenant: 4,
  scriptCpuMsPerSecond: 50,
  scriptCpuBurstMs: 2_000,
  maxCallTimeoutMs: 5 * 60_000,
  maxPendingRequestsPerPartition: 2_000,
  maxPendingRequestsPerNode: 20_000,
  maxForwardsInFlight: 10_000,
  maxTokensPerTenant: 1_000,
  defaultLeaseQuota: 10_000,
  maxFailedAuthsPerConnection: 20,
  failedAuthWindowMs: 10_000,
  maxFailedAuthsPerSource: 100,
  failedAuthSourceWindowMs: 60_000,
  maxTrackedConnections: 10_000,
  maxUnknownTokensCached: 10_000,
  maxWatchersPerNode: 10_000,
  maxWatchersPerTenant: 1_000,
  watchRingChanges: 10_000,
  watchRingBytes: 16 * mebibyte,
  watchReadChanges: 1_000,
  watchReadBytes: 4 * mebibyte,
  maxHistoryReadsPerNode: 2,
  watchHistoryBytesPerSecond: 8 * mebibyte,
  watchHistoryBurstBytes: 4 * mebibyte,
  watchProgressIntervalMs: 2_000,
  watchStallMs: 30_000,
  watchStreamBytes: 8 * mebibyte,
  watchConnectionBytes: 32 * mebibyte,
  watchTenantBytes: 64 * mebibyte,
  watchNodeBytes: 256 * mebibyte,
});

/** Builds a limits object from the defaults and some overrides, asserting that it is coherent. */
export function makeLimits(overrides: Partial<Limits> = {}): Limits {
  const limits: Limits = Object.freeze({ ...defaultLimits, ...overrides });
  assertLimits(limits);
  return limits;
}

/** Asserts the relations the code relies on; a violation is a configuration bug, so it crashes. */
export function assertLimits(limits: Limits): void {
  for (const [name, value] of Object.entries(limits)) {
    if (!(Number.isSafeInteger(value) && value > 0)) assert.fail(`limit ${name} must be a positive integer`);
  }
  // The key size is a product promise that clients rely on, not a tuning knob.
  assert.equal(limits.maxKeyBytes, 4 * kibibyte, 'maxKeyBytes is fixed at 4 KiB');
  // One maximal write (key + value + framing) must fit in one message and one log entry.
  assert(
    limits.maxMessageBytes > limits.maxKeyBytes + limits.maxValueBytes + limits.messageOverheadBytes,
    'maxMessageBytes must hold one maximal key and value plus overhead',
  );
  // A maximal batch, with a key per op and its framing, must fit in one message too.
  assert(
    limits.maxMessageBytes >= limits.maxBatchBytes + limits.messageOverheadBytes,
    'maxMessageBytes must hold one maximal batch plus overhead',
  );
  assert(limits.maxBatchBytes >= limits.maxKeyBytes + limits.maxValueBytes, 'one maximal write must fit in a batch');
  assert(limits.defaultPageSize <= limits.maxPageSize, 'defaultPageSize <= maxPageSize');
  // A page must be able to examine at least one version of every key it returns.
  assert(limits.maxScanVersions >= limits.maxPageSize, 'maxScanVersions >= maxPageSize');
  assert(limits.minTtlMs <= limits.maxTtlMs, 'minTtlMs <= maxTtlMs');
  // A script's prefix reads are transaction prefix reads, and it may write a whole batch.
  assert(limits.maxScriptKeys >= limits.maxBatchOps, 'maxScriptKeys >= maxBatchOps');
  // The script's time budget must leave a default call time to commit.
  assert(limits.maxScriptMs < limits.defaultCallTimeoutMs, 'maxScriptMs < defaultCallTimeoutMs');
  // A stream request's timeout travels as a uint32 of milliseconds.
  assert(limits.defaultCallTimeoutMs <= 0xffff_ffff, 'defaultCallTimeoutMs fits a uint32');
  // Expiry times are nowMs + ttlMs and must stay exact doubles for any plausible wall clock.
  assert(Date.UTC(3000, 0) + limits.maxTtlMs < Number.MAX_SAFE_INTEGER, 'maxTtlMs keeps expiry times exact');
  // The hash space has 2^32 points; every partition must own at least one.
  assert(limits.maxPartitionCount <= 2 ** 32, 'maxPartitionCount <= 2^32');
  // One tenant cannot take every script slot, and a tenant with a full budget can run a script to its time limit.
  assert(limits.maxScriptsPerTenant <= limits.maxScriptsPerNode, 'maxScriptsPerTenant <= maxScriptsPerNode');
  assert(limits.scriptCpuBurstMs >= limits.maxScriptMs, 'scriptCpuBurstMs >= maxScriptMs');
  // A read-only script may return at least what a writing one may, and its answer fits a message.
  assert(limits.maxTxnNoteBytes <= limits.maxScriptResultBytes, 'maxTxnNoteBytes <= maxScriptResultBytes');
  assert(limits.maxScriptResultBytes + limits.messageOverheadBytes <= limits.maxMessageBytes, 'a maximal script result fits a message');
  // Deadlines: the default is within the maximum, the maximum fits a timer and a stream's uint32
  // timeout, and a script's time budget plus a transaction's life fit in it.
  assert(limits.defaultCallTimeoutMs <= limits.maxCallTimeoutMs, 'defaultCallTimeoutMs <= maxCallTimeoutMs');
  assert(limits.maxCallTimeoutMs <= 2 ** 31 - 1, 'maxCallTimeoutMs fits a timer (2^31 - 1 ms)');
  assert(limits.maxTxnDurationMs <= limits.maxCallTimeoutMs, 'maxTxnDurationMs <= maxCallTimeoutMs');
  // One partition's share never exceeds the node's, and one stream alone cannot fill a partition.
  assert(limits.maxPendingRequestsPerPartition <= limits.maxPendingRequestsPerNode, 'maxPendingRequestsPerPartition <= maxPendingRequestsPerNode');
  assert(limits.maxStreamRequestsInFlight <= limits.maxPendingRequestsPerPartition, 'maxStreamRequestsInFlight <= maxPendingRequestsPerPartition');
  // A forwarded request becomes pending work at the leader's node.
  assert(limits.maxForwardsInFlight <= limits.maxPendingRequestsPerNode, 'maxForwardsInFlight <= maxPendingRequestsPerNode');
  assert(limits.failedAuthWindowMs <= limits.maxCallTimeoutMs, 'failedAuthWindowMs <= maxCallTimeoutMs');
  assert(limits.failedAuthSourceWindowMs <= limits.maxCallTimeoutMs, 'failedAuthSourceWindowMs <= maxCallTimeoutMs');
  assert(limits.maxWatchersPerTenant <= limits.maxWatchersPerNode, 'maxWatchersPerTenant <= maxWatchersPerNode');
  // Watch timers are real timers.
  assert(limits.watchProgressIntervalMs <= 2 ** 31 - 1 && limits.watchStallMs <= 2 ** 31 - 1, 'watch timers fit a timer');
  // A watch stream holds one read of history (its reservation), so a watcher can always make
  // progress (a stream holding nothing takes any one message); each wider level holds a stream.
  assert(
    limits.watchStreamBytes >= limits.watchReadBytes + limits.watchReadChanges * watchChangeOverheadBytes,
    'watchStreamBytes holds one read of history (watchReadBytes + watchReadChanges * watchChangeOverheadBytes)',
  );
  assert(limits.watchStreamBytes <= limits.watchConnectionBytes && limits.watchStreamBytes <= limits.watchTenantBytes, 'watchStreamBytes <= watchConnectionBytes, watchTenantBytes');
  assert(limits.watchConnectionBytes <= limits.watchNodeBytes && limits.watchTenantBytes <= limits.watchNodeBytes, 'watchConnectionBytes, watchTenantBytes <= watchNodeBytes');
  // A snapshot chunk travels in one message, plus at most one oversized entry's worth.
  assert(
    limits.snapshotChunkBytes + limits.maxKeyBytes + limits.maxValueBytes + limits.messageOverheadBytes <=
      limits.maxMessageBytes,
    'a snapshot chunk plus one maximal entry must fit in a message',
  );
}

assertLimits(defaultLimits);

/** The limits in force by default; modules take a `Limits` option where a deployment may differ. */
export const limits = defaultLimits;

/**
 * How often the event-loop lag histogram samples (prom-client's eventLoopMonitoringPrecision on the admin port's /metrics; the hostile load run reads it back).
 * Node's monitorEventLoopDelay records the time between two runs of its timer, this interval
 * included: an idle loop shows about 100 ms in nodejs_eventloop_lag_min/max_seconds, and a value
 * less 100 ms is how late the timer ran (a loop held for 300 ms shows up to 400 ms).
 */
export const EVENT_LOOP_SAMPLE_MS = 100;
