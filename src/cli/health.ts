/**
 * `atoll health [ADDRESS] [--leaders]`: a probe for container health checks and Kubernetes probes.
 * It asks one node, never the cluster: the standard gRPC health service (grpc.health.v1, the whole
 * server's status) must answer SERVING, and with `--leaders` that node's ClusterInfo must also name
 * a leader for every partition (a node cut off from its peers soon knows none for some).
 *
 * Exit codes follow the CLI's: 0 healthy; 1 the node answered but is not healthy (NOT_SERVING, as
 * while it shuts down, or a partition without a leader); 2 the node did not answer in time.
 */
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import type { Command } from 'commander';
import { protoPath as healthProtoPath } from 'grpc-health-check';
import { NodeConnection } from '../client/node-connection.js';
import type { ClusterInfoResponse } from '../api/node-api.js';
import { channelCredentialsOf, tlsChannelOptionsOf, type TlsClientOptions } from '../wire/tls-credentials.js';
import { clientTlsOf, type TlsFlags } from './tls-flags.js';

/** The same codes as run.ts's exitCodes (not imported from there: run.ts imports this file). */
const healthExitCodes = Object.freeze({ healthy: 0, unhealthy: 1, error: 2 });

/** A probe must answer within a health check's own timeout (10 s in our image and compose file). */
const defaultTimeoutMs = 5_000;

export interface HealthReport {
  /** The health service's status of the whole server: SERVING, NOT_SERVING, ... */
  readonly status: string;
  /** Partitions this node knows no leader for; only checked with `requireLeaders`. */
  readonly partitionsWithoutLeader: readonly number[];
  readonly healthy: boolean;
}

export interface HealthCheckOptions {
  /** The node's client address, host:port. */
  readonly address: string;
  readonly timeoutMs: number;
  readonly requireLeaders: boolean;
  /** The node's client port serves TLS (docs/security.md); plaintext when absent. */
  readonly tls?: TlsClientOptions;
}

interface HealthClient extends grpc.Client {
  check(request: { service: string }, options: grpc.CallOptions, callback: (error: grpc.ServiceError | null, response?: { status: string }) => void): void;
}

function loadHealthClientConstructor(): new (address: string, credentials: grpc.ChannelCredentials, options?: grpc.ChannelOptions) => HealthClient {
  const definition = protoLoader.loadSync(healthProtoPath, { keepCase: false, longs: String, enums: String, defaults: true });
  const health = (grpc.loadPackageDefinition(definition) as unknown as { grpc: { health: { v1: { Health: grpc.ServiceClientConstructor } } } }).grpc.health.v1.Health;
  return health as unknown as new (address: string, credentials: grpc.ChannelCredentials, options?: grpc.ChannelOptions) => HealthClient;
}

/** The whole server's status from the health service (the empty service name). */
async function servingStatus(address: string, deadlineMs: number, tls: TlsClientOptions | undefined): Promise<string> {
  const HealthClientConstructor = loadHealthClientConstructor();
  const client = new HealthClientConstructor(address, channelCredentialsOf(tls), tlsChannelOptionsOf(tls));
  try {
    return await new Promise<string>((resolve, reject) => {
      client.check({ service: '' }, { deadline: deadlineMs }, (error, response) => (error ? reject(error) : resolve(response?.status ?? 'UNKNOWN')));
    });
  } finally {
    client.close();
  }
}

/**
 * The partitions a ClusterInfo answer names without a leader: every partition of its range table,
 * those a split created (ids past the founding count) included, and a founding id it does not list
 * at all; [0] for an answer with no partitions.
 */
export function leaderlessPartitions(info: Pick<ClusterInfoResponse, 'partitionCount' | 'partitions'>): number[] {
  if (info.partitionCount === 0 || info.partitions.length === 0) return [0];
  const leaders = new Map(info.partitions.map((partition) => [partition.id, partition.leader]));
  const ids = new Set([...leaders.keys(), ...Array.from({ length: info.partitionCount }, (_, id) => id)]);
  return [...ids].sort((a, b) => a - b).filter((id) => (leaders.get(id) ?? 0) === 0);
}

async function partitionsWithoutLeader(address: string, deadlineMs: number, tls: TlsClientOptions | undefined): Promise<number[]> {
  const connection = new NodeConnection(address, { pipelining: false, maxStreamInFlight: 1, tls });
  try {
    return leaderlessPartitions(await connection.clusterInfo(deadlineMs, undefined));
  } finally {
    connection.close();
  }
}

/** Asks one node; throws when it does not answer within the timeout. */
export async function checkNodeHealth(options: HealthCheckOptions): Promise<HealthReport> {
  const deadlineMs = Date.now() + options.timeoutMs;
  const status = await servingStatus(options.address, deadlineMs, options.tls);
  const leaderless = status === 'SERVING' && options.requireLeaders ? await partitionsWithoutLeader(options.address, deadlineMs, options.tls) : [];
  return { status, partitionsWithoutLeader: leaderless, healthy: status === 'SERVING' && leaderless.length === 0 };
}

function summary(address: string, report: HealthReport): string {
  if (report.status !== 'SERVING') return `${address} ${report.status}`;
  if (report.partitionsWithoutLeader.length === 0) return `${address} SERVING`;
  return `${address} SERVING, no leader known for partitions ${report.partitionsWithoutLeader.join(',')}`;
}

export interface HealthCommandContext {
  stdout(text: string): void;
  stderr(text: string): void;
  readonly env: Readonly<Record<string, string | undefined>>;
  setExitCode(code: number): void;
}

/** Adds `health` to the `atoll` program (run.ts calls this once). */
export function addHealthCommand(program: Command, context: HealthCommandContext): void {
  program
    .command('health')
    .description("ask one node's gRPC health service (exit 0 SERVING, 1 not, 2 no answer); for probes")
    .argument('[address]', 'host:port of the node (default: the first of --endpoints)')
    .option('--leaders', 'also require that the node knows a leader for every partition')
    .action(async (address: string | undefined, options: { leaders?: boolean }, command: Command) => {
      const globals = command.optsWithGlobals<{ endpoints?: string; timeout?: number; json?: boolean } & TlsFlags>();
      const target = address ?? (globals.endpoints ?? context.env['ATOLL_ENDPOINTS'] ?? '127.0.0.1:7001').split(',')[0]?.trim() ?? '';
      const timeoutMs = globals.timeout ?? defaultTimeoutMs;
      try {
        const tls = clientTlsOf(globals, context.env);
        const report = await checkNodeHealth({ address: target, timeoutMs, requireLeaders: options.leaders === true, ...(tls !== undefined && { tls }) });
        context.stdout(`${globals.json === true ? JSON.stringify({ address: target, ...report }) : summary(target, report)}\n`);
        context.setExitCode(report.healthy ? healthExitCodes.healthy : healthExitCodes.unhealthy);
      } catch (error) {
        const reason = (error as Partial<grpc.ServiceError>).details ?? (error instanceof Error ? error.message : String(error));
        context.stderr(`error UNAVAILABLE: ${target}: ${reason.trim()}\n`);
        context.setExitCode(healthExitCodes.error);
      }
    });
}
