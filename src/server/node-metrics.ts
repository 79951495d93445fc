/**
 * Prometheus metrics of one node, made with prom-client on a registry of the node's own (never the
 * global default registry), so several nodes in one process (tests) keep their series apart.
 *
 * Cost: the hot paths (every request, loop iteration and Raft message) only add to plain numbers
 * in small maps keyed by label values from fixed sets (CountTable, FastHistogram); prom-client
 * reads them when scraped. Measured on the 2-core development machine: a counter add about 20 to
 * 40 ns, a request's count plus latency observation about 100 ns, where prom-client's own
 * Histogram.observe (it hashes a label object each time) took about 500 ns. Per-partition gauges (role, term, indexes, sizes) are
 * computed at scrape time from AtollNode.metricsView(), never updated per request.
 *
 * Labels never carry keys: `method`/`kind` (operation kinds), `code` (OK or an AtollError code),
 * `type` (Raft message types), `partition` (at most the partition count), `peer` (node ids),
 * `tenant` (at most MAX_TENANT_SERIES, only with authentication on).
 *
 * Tenant series (atoll_tenant_*) name tenants and their usage, so they live in a registry of their
 * own, `tenantRegistry`, which the admin port serves only as --tenant-metrics allows (off by
 * default; admin-server.ts). Their usage records are read only when that registry is scraped.
 */
import { collectDefaultMetrics, Counter, Gauge, Registry, type Metric } from 'prom-client';
import { isAtollError } from '../errors.js';
import { EVENT_LOOP_SAMPLE_MS } from '../limits.js';
import type { TenantUsage } from '../node/service/auth.js';
import type { NodeMetrics, NodeMetricsView } from '../node/metrics.js';

/** Requests counted and timed where the client's call arrived (the serving node). */
export interface RpcMetrics {
  rpc(method: string, code: string, seconds: number): void;
}

/** The outcome label of an error at the serving node: the AtollError code, else INTERNAL. */
export function rpcCode(error: unknown): string {
  return isAtollError(error) ? error.code : 'INTERNAL';
}

/** Tenants exported with usage and quota series, the largest by stored bytes first. */
export const MAX_TENANT_SERIES = 200;
/** A scrape waits at most this long for tenant usage (a read of the usage records); then it goes without. */
const TENANT_USAGE_TIMEOUT_MS = 2_000;

/** The memory consumers exported as atoll_memory_<name>_bytes (a fixed set; src/node/service/memory-view.ts). */
const MEMORY_CONSUMERS: ReadonlyArray<[string, string]> = [
  ['version_cache', 'Bytes the version cache holds (newest versions of recently used keys; estimate).'],
  ['key_index', 'Bytes the key indexes of all partitions hold (estimate).'],
  ['raft_log', 'Bytes of Raft log entries held in memory, all partitions (estimate).'],
  ['dedup', 'Bytes the dedup tables hold in memory (read-ahead and eviction lists; estimate).'],
  ['watch', 'Bytes held for watch clients: history read for watchers and messages not yet written to their connections (estimate; bounded per stream, connection, tenant and node).'],
  ['leveldb', 'LevelDB memtables and block cache (leveldb.approximate-memory-usage).'],
  ['write_behind', 'Bytes of unsynced writes buffered before LevelDB (keys and values).'],
];

/** Request latencies, seconds: 250 µs to 10 s. */
const LATENCY_BUCKETS = [0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
/** Loop iteration and storage write times, seconds: 50 µs to 5 s. */
const LOOP_BUCKETS = [0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 5];
/** Storage write sizes, bytes: 256 B to 64 MiB. */
const WRITE_BYTES_BUCKETS = [256, 1024, 4096, 16_384, 65_536, 262_144, 1_048_576, 4_194_304, 16_777_216, 67_108_864];
/** Snapshot export and install times, seconds. */
const SNAPSHOT_BUCKETS = [0.001, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300];

/**
 * Counts by up to two label values, as nested maps (no string building on the hot path). The
 * number of entries is bounded by the label sets the callers use (see the file comment).
 */
class CountTable {
  private readonly counts = new Map<string, Map<string, number>>();

  add(first: string, second: string, amount: number): void {
    let inner = this.counts.get(first);
    if (inner === undefined) this.counts.set(first, (inner = new Map()));
    inner.set(second, (inner.get(second) ?? 0) + amount);
  }

  *entries(): Generator<[string, string, number]> {
    for (const [first, inner] of this.counts) for (const [second, count] of inner) yield [first, second, count];
  }
}

/**
 * A histogram with at most one label, for the hot paths: an observation is a map lookup, a search
 * of a short sorted bucket list and three additions. It is registered on a prom-client Registry
 * as a custom metric (get() answers in the shape prom-client's own histograms do: cumulative
 * `_bucket` series with `le`, then `_sum` and `_count`), so the registry formats it like any other.
 * Series: one per label value the callers use (fixed sets, see the file comment).
 */
class FastHistogram {
  readonly type = 'histogram';
  readonly aggregator = 'sum';
  private readonly series = new Map<string, { readonly counts: Float64Array; sum: number; count: number }>();

  constructor(
    readonly name: string,
    readonly help: string,
    private readonly labelName: string | undefined,
    private readonly buckets: readonly number[],
    registry: Registry,
  ) {
    registry.registerMetric(this as unknown as Metric);
  }

  observe(labelValue: string, value: number): void {
    let series = this.series.get(labelValue);
    if (series === undefined) this.series.set(labelValue, (series = { counts: new Float64Array(this.buckets.length + 1), sum: 0, count: 0 }));
    // Bucket i counts observations <= buckets[i] (not cumulative here); the last one is +Inf.
    let i = 0;
    while (i < this.buckets.length && value > (this.buckets[i] as number)) i++;
    (series.counts[i] as number)++;
    series.sum += value;
    series.count++;
  }

  get(): { name: string; help: string; type: string; aggregator: string; values: Array<{ metricName: string; labels: Record<string, string | number>; value: number }> } {
    const values: Array<{ metricName: string; labels: Record<string, string | number>; value: number }> = [];
    for (const [labelValue, series] of this.series) {
      const base: Record<string, string | number> = this.labelName === undefined ? {} : { [this.labelName]: labelValue };
      let cumulative = 0;
      for (let i = 0; i <= this.buckets.length; i++) {
        cumulative += series.counts[i] as number;
        values.push({ metricName: `${this.name}_bucket`, labels: { ...base, le: i < this.buckets.length ? (this.buckets[i] as number) : '+Inf' }, value: cumulative });
      }
      values.push({ metricName: `${this.name}_sum`, labels: base, value: series.sum });
      values.push({ metricName: `${this.name}_count`, labels: base, value: series.count });
    }
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values };
  }

  reset(): void {
    this.series.clear();
  }
}

/** A prom-client counter whose values are read from a CountTable when scraped. */
function tableCounter(registry: Registry, name: string, help: string, labelNames: readonly [string, string] | readonly [string], table: CountTable): void {
  new Counter({
    name,
    help,
    labelNames,
    registers: [registry],
    collect() {
      this.reset();
      for (const [first, second, count] of table.entries()) {
        const labels = labelNames.length === 2 ? { [labelNames[0]]: first, [labelNames[1] as string]: second } : { [labelNames[0]]: first };
        this.inc(labels, count);
      }
    },
  });
}

export interface NodeMetricsSource {
  metricsView(): NodeMetricsView;
  tenantUsageForMetrics(maxTenants: number): Promise<TenantUsage[]>;
}

/** One node's registry and the recorder the node and the gRPC layer report to. */

export class PrometheusNodeMetrics implements NodeMetrics, RpcMetrics {
  readonly registry = new Registry();
  /** The atoll_tenant_* series (see the file comment): served apart from `registry`. */
  readonly tenantRegistry = new Registry();
  private source: NodeMetricsSource | undefined;
  private failedAuths: { readonly closed: number; readonly refusedAtAccept: number } | undefined;
  private readonly rpcCounts = new CountTable();
  private readonly rpcLatency: FastHistogram;
  private readonly executedCounts = new CountTable();
  private readonly executedLatency: FastHistogram;
  private readonly forwardedCounts = new CountTable();
  private readonly transactionCounts = new CountTable();
  private readonly messageCounts = new CountTable();
  private readonly loopSeconds: FastHistogram;
  private loopTasks = 0;
  private readonly writeSeconds: FastHistogram;
  private readonly writeBytes: FastHistogram;
  private writeOperations = 0;
  private readonly snapshotSeconds: FastHistogram;
  private elections = 0;
  private leaderChanges = 0;

  constructor(options: { readonly processMetrics?: boolean } = {}) {
    const registry = this.registry;
    // Node.js process metrics: event loop lag, heap, GC, CPU, file descriptors. The lag histogram
    // samples with a libuv timer every eventLoopMonitoringPrecision ms: prom-client's default (10)
    // woke an idle node 100 times a second, most of its idle wakeups (issue 18); 100 ms still
    // measures every stall longer than that and wakes the node 10 times a second.
    if (options.processMetrics !== false) collectDefaultMetrics({ register: registry, eventLoopMonitoringPrecision: EVENT_LOOP_SAMPLE_MS });

    tableCounter(registry, 'atoll_rpc_requests_total', 'Client requests answered by this node (where the call arrived), by method and outcome code.', ['method', 'code'], this.rpcCounts);
    this.rpcLatency = new FastHistogram('atoll_rpc_duration_seconds', 'Client request latency at the node where the call arrived, forwarding included.', 'method', LATENCY_BUCKETS, registry);
    tableCounter(registry, 'atoll_leader_requests_total', 'Requests run on a replica of this node (as the leader, or a stale or transaction read), by kind and outcome code.', ['kind', 'code'], this.executedCounts);
    this.executedLatency = new FastHistogram('atoll_leader_request_duration_seconds', 'Latency of requests run on a replica of this node (the leader side).', 'kind', LATENCY_BUCKETS, registry);
    tableCounter(registry, 'atoll_forwarded_requests_total', 'Requests this node forwarded to the leader on another node, by kind and outcome code.', ['kind', 'code'], this.forwardedCounts);
    tableCounter(registry, 'atoll_transactions_total', 'Transaction commits run here as the leader: outcome committed or aborted, and the reason (OK or the error code).', ['outcome', 'reason'], this.transactionCounts);
    tableCounter(registry, 'atoll_raft_messages_total', 'Raft messages sent to and received from peers, by direction and message type.', ['direction', 'type'], this.messageCounts);

    this.loopSeconds = new FastHistogram('atoll_loop_iteration_duration_seconds', 'Time of one node loop iteration (tasks, Ready handling, the storage write, apply).', undefined, LOOP_BUCKETS, registry);
    const self = this;
    new Counter({ name: 'atoll_loop_tasks_total', help: 'Tasks the node loop ran.', registers: [registry], collect() { this.reset(); this.inc(self.loopTasks); } });
    this.writeSeconds = new FastHistogram('atoll_storage_write_duration_seconds', 'Time of the node loop\'s storage write, by whether it was synced to disk.', 'synced', LOOP_BUCKETS, registry);
    this.writeBytes = new FastHistogram('atoll_storage_write_bytes', 'Key and value bytes of the node loop\'s storage writes.', undefined, WRITE_BYTES_BUCKETS, registry);
    new Counter({ name: 'atoll_storage_write_operations_total', help: 'Put and delete operations in the node loop\'s storage writes.', registers: [registry], collect() { this.reset(); this.inc(self.writeOperations); } });
    this.snapshotSeconds = new FastHistogram('atoll_snapshot_duration_seconds', 'Snapshots exported for followers and installed from the leader (kind), and their duration.', 'kind', SNAPSHOT_BUCKETS, registry);
    new Counter({ name: 'atoll_elections_total', help: 'Elections replicas of this node started (became candidates).', registers: [registry], collect() { this.reset(); this.inc(self.elections); } });
    new Counter({ name: 'atoll_leader_changes_total', help: 'Leader changes replicas of this node saw (including to no leader).', registers: [registry], collect() { this.reset(); this.inc(self.leaderChanges); } });
    new Counter({ name: 'atoll_failed_auth_connections_closed_total', help: 'Client connections closed for failed authentications (src/node/service/failed-auths.ts).', registers: [registry], collect() { this.reset(); this.inc(self.failedAuths?.closed ?? 0); } });
    new Counter({ name: 'atoll_failed_auth_connections_refused_total', help: 'Client connections closed at accept: their source address was blocked for failed authentications.', registers: [registry], collect() { this.reset(); this.inc(self.failedAuths?.refusedAtAccept ?? 0); } });

    this.defineScrapeGauges();
  }

  /** The node whose state the scrape-time gauges read (set once the node is open). */
  attach(source: NodeMetricsSource): void {
    this.source = source;
  }

  /** The failed-authentication gate the client listeners share, for its counters. */
  attachFailedAuths(view: { readonly closed: number; readonly refusedAtAccept: number }): void {
    this.failedAuths = view;
  }

  // ------------------------------------------------------------------ recorders (hot paths)

  rpc(method: string, code: string, seconds: number): void {
    this.rpcCounts.add(method, code, 1);
    this.rpcLatency.observe(method, seconds);
  }

  executed(kind: string, code: string, seconds: number): void {
    this.executedCounts.add(kind, code, 1);
    this.executedLatency.observe(kind, seconds);
    if (kind === 'commit') this.transactionCounts.add(code === 'OK' ? 'committed' : 'aborted', code, 1);
  }

  forwarded(kind: string, code: string): void {
    this.forwardedCounts.add(kind, code, 1);
  }

  loopIteration(seconds: number, tasks: number): void {
    this.loopSeconds.observe('', seconds);
    this.loopTasks += tasks;
  }

  storageWrite(seconds: number, operations: number, bytes: number, synced: boolean): void {
    this.writeSeconds.observe(synced ? 'true' : 'false', seconds);
    this.writeBytes.observe('', bytes);
    this.writeOperations += operations;
  }

  raftMessages(direction: 'sent' | 'received', type: string, count: number): void {
    this.messageCounts.add(direction, type, count);
  }

  snapshot(kind: 'exported' | 'installed', seconds: number): void {
    this.snapshotSeconds.observe(kind, seconds);
  }

  electionStarted(): void {
    this.elections++;
  }

  leaderChanged(): void {
    this.leaderChanges++;
  }

  // ------------------------------------------------------------------ scrape-time gauges

  private defineScrapeGauges(): void {
    const registry = this.registry;
    // One view per scrape: every per-partition gauge below reads the same moment.
    let view: { at: number; value: NodeMetricsView } | undefined;
    const current = (): NodeMetricsView | undefined => {
      if (this.source === undefined) return undefined;
      const now = performance.now();
      if (view === undefined || now - view.at > 100) view = { at: now, value: this.source.metricsView() };
      return view.value;
    };
    const perPartition = (name: string, help: string, value: (p: NodeMetricsView['partitions'][number]) => number): void => {
      new Gauge({
        name,
        help,
        labelNames: ['partition'],
        registers: [registry],
        collect() {
          this.reset();
          for (const p of current()?.partitions ?? []) this.set({ partition: String(p.partition) }, value(p));
        },
      });
    };
    new Gauge({
      name: 'atoll_node_info',
      help: 'Always 1, labelled with this node\'s id.',
      labelNames: ['node'],
      registers: [registry],
      collect() {
        this.reset();
        const v = current();
        if (v !== undefined) this.set({ node: String(v.nodeId) }, 1);
      },
    });
    // Memory by consumer (src/node/service/memory-view.ts; bounds in docs/operations.md, "Memory").
    for (const [consumer, help] of MEMORY_CONSUMERS) {
      new Gauge({
        name: `atoll_memory_${consumer}_bytes`,
        help,
        registers: [registry],
        collect() {
          this.reset();
          const found = current()?.memory?.find((m) => m.consumer === consumer);
          if (found !== undefined) this.set(found.bytes);
        },
      });
    }
    new Gauge({
      name: 'atoll_memory_limit_bytes',
      help: 'The configured bound of a memory consumer (those with a bound in bytes).',
      labelNames: ['consumer'],
      registers: [registry],
      collect() {
        this.reset();
        for (const m of current()?.memory ?? []) if (m.limitBytes !== undefined && Number.isFinite(m.limitBytes)) this.set({ consumer: m.consumer }, m.limitBytes);
      },
    });
    new Gauge({
      name: 'atoll_watchers_open',
      help: 'Watchers running on this node.',
      registers: [registry],
      collect() {
        this.set(current()?.watches?.open ?? 0);
      },
    });
    new Gauge({
      name: 'atoll_watch_streams',
      help: 'HTTP/2 streams with at least one watch counted in the watch memory.',
      registers: [registry],
      collect() {
        this.set(current()?.watches?.streams ?? 0);
      },
    });
    new Counter({
      name: 'atoll_watch_cut_offs_total',
      help: 'Watch streams closed because their queued bytes were not written for the stall time (RST_STREAM; the connection too when the stream would not close).',
      registers: [registry],
      collect() {
        this.reset();
        this.inc(current()?.watches?.cutOffs ?? 0);
      },
    });
    new Counter({
      name: 'atoll_watch_memory_refusals_total',
      help: 'Watches refused (RESOURCE_EXHAUSTED, reason watch-memory) because a stream, connection, tenant or the node held its bound of bytes.',
      registers: [registry],
      collect() {
        this.reset();
        this.inc(current()?.watches?.memoryRefusals ?? 0);
      },
    });
    new Gauge({
      name: 'atoll_loop_tasks_queued',
      help: 'Tasks waiting for the node loop\'s next iteration.',
      registers: [registry],
      collect() {
        this.set(current()?.tasksQueued ?? 0);
      },
    });
    new Gauge({
      name: 'atoll_peer_reachable',
      help: '1 when this node hears from the peer, else 0 (itself included, always 1).',
      labelNames: ['peer'],
      registers: [registry],
      collect() {
        this.reset();
        for (const r of current()?.reachable ?? []) this.set({ peer: String(r.node) }, r.reachable ? 1 : 0);
      },
    });
    new Gauge({
      name: 'atoll_partition_role',
      help: '1 for the Raft role this node\'s replica of the partition has (follower, preCandidate, candidate, leader).',
      labelNames: ['partition', 'role'],
      registers: [registry],
      collect() {
        this.reset();
        for (const p of current()?.partitions ?? []) this.set({ partition: String(p.partition), role: p.role }, 1);
      },
    });
    perPartition('atoll_partition_is_leader', '1 when this node leads the partition, else 0.', (p) => (p.role === 'leader' ? 1 : 0));
    perPartition('atoll_partition_has_leader', '1 when this node\'s replica knows a leader of the partition, else 0.', (p) => (p.leader !== 0 ? 1 : 0));
    perPartition('atoll_partition_leader', 'The node id of the leader this replica knows, 0 when none.', (p) => p.leader);
    perPartition('atoll_partition_term', 'The Raft term of this node\'s replica.', (p) => p.term);
    perPartition('atoll_partition_commit_index', 'The highest log index this replica knows committed.', (p) => p.commitIndex);
    perPartition('atoll_partition_applied_index', 'The highest log index this replica applied.', (p) => p.appliedIndex);
    perPartition('atoll_partition_log_entries', 'Entries in this replica\'s Raft log after its snapshot point.', (p) => p.logEntries);
    perPartition('atoll_partition_proposals_pending', 'Proposals of this replica waiting to be applied.', (p) => p.proposalsPending);
    perPartition('atoll_partition_requests_per_second', 'The decayed request rate this node served for the partition.', (p) => p.requestsPerSecond);
    perPartition('atoll_partition_keys', 'Live keys this replica stores.', (p) => p.keys);
    perPartition('atoll_partition_bytes', 'Bytes this replica stores: live values plus retained history.', (p) => p.bytes);
    perPartition('atoll_partition_dedup_records', 'Live records of the replica\'s dedup table (request ids a retry is recognised by).', (p) => p.dedupRecords);

    // Tenant usage against quota (only with authentication on), in the tenant registry: one read of
    // the usage records per scrape at most, bounded in time and in tenants.
    let usage: Promise<TenantUsage[]> | undefined;
    const tenants = async (): Promise<TenantUsage[]> => {
      if (this.source === undefined) return [];
      usage ??= withTimeout(this.source.tenantUsageForMetrics(MAX_TENANT_SERIES), TENANT_USAGE_TIMEOUT_MS).finally(() => {
        setTimeout(() => (usage = undefined), 500).unref();
      });
      return usage.catch(() => []);
    };
    const perTenant = (name: string, help: string, value: (u: TenantUsage) => number): void => {
      new Gauge({
        name,
        help,
        labelNames: ['tenant'],
        registers: [this.tenantRegistry],
        async collect() {
          this.reset();
          for (const u of await tenants()) this.set({ tenant: u.tenant }, value(u));
        },
      });
    };
    perTenant('atoll_tenant_keys', 'Keys a tenant stores, cluster-wide (published usage).', (u) => u.keys);
    perTenant('atoll_tenant_bytes', 'Bytes a tenant stores, cluster-wide: live values plus retained history.', (u) => u.bytes + u.historyBytes);
    perTenant('atoll_tenant_requests_per_second', 'A tenant\'s request rate, cluster-wide (published usage).', (u) => u.requestsPerSecond);
    perTenant('atoll_tenant_quota_keys', 'A tenant\'s key quota; 0: unlimited.', (u) => u.quota.maxKeys);
    perTenant('atoll_tenant_quota_bytes', 'A tenant\'s bytes quota; 0: unlimited.', (u) => u.quota.maxBytes);
    perTenant('atoll_tenant_quota_requests_per_second', 'A tenant\'s request rate quota (per leader node); 0: unlimited.', (u) => u.quota.maxRequestsPerSecond);
  }
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms`)), ms);
    timer.unref();
    promise.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (error: unknown) => {
        clearTimeout(timer);
        reject(error instanceof Error ? error : new Error(String(error)));
      },
    );
  });
}
