/**
 * `atoll top`: the hottest partitions and keys across the cluster, refreshed every second.
 *
 * Each refresh asks every node for its ClusterInfo (the endpoints given, then every node they
 * list), and merges what each node served (src/hotkeys/cluster-load.ts): a partition's rate is
 * the sum over nodes, almost all of it from its leader. Rates are decayed averages (a request
 * counts half after 5 s), so a key shows up within a second of getting hot and fades within a
 * few half-lives of cooling down. Key rates are estimates: the true rate is within `±err` below.
 *
 * On a terminal the screen is redrawn in place until Ctrl-C; otherwise each refresh is printed in
 * turn (with --json, one JSON object per line). `--once` prints one refresh and exits, for
 * scripts. Exit codes follow the CLI's: 0 some node answered, 2 none did (the last refresh).
 *
 * On a cluster with authentication the caller's token (--token or $ATOLL_TOKEN) decides which hot
 * keys appear: a tenant's token sees its own keys (without the tenant tag), the cluster admin's
 * every tenant's (internal keys, tag included), no token none. Partition rates are always shown.
 */
import { InvalidArgumentError, type Command } from 'commander';
import { sleep } from '../client/call-options.js';
import { NodeConnection } from '../client/node-connection.js';
import { mergeClusterLoad, type ClusterLoad } from '../hotkeys/cluster-load.js';
import type { ClusterInfoResponse } from '../api/node-api.js';
import { table } from './format.js';

/** The same codes as run.ts's exitCodes (not imported from there: run.ts imports this file). */
const topExitCodes = Object.freeze({ ok: 0, error: 2 });

const defaultIntervalMs = 1_000;
const minIntervalMs = 100;
const defaultLimit = 10;
/** One node's ClusterInfo waits at most this long unless --timeout says otherwise. */
const defaultNodeTimeoutMs = 2_000;
/** Nodes asked per refresh, whatever the answers claim. */
const maxNodes = 1_024;
/** Clear the screen and move to its top-left corner. */
const clearScreen = '\x1b[H\x1b[2J';

export interface TopCommandContext {
  stdout(text: string): void;
  stderr(text: string): void;
  readonly env: Readonly<Record<string, string | undefined>>;
  setExitCode(code: number): void;
  /** Endpoints when neither --endpoints nor $ATOLL_ENDPOINTS names any. */
  readonly defaultEndpoints: string;
  /** Whether stdout is a terminal (redraw in place); default: process.stdout.isTTY. */
  readonly isTty?: boolean;
}

interface TopOptions {
  once?: boolean;
  count?: number;
  interval: number;
  limit: number;
}

export interface NodeAnswer {
  readonly id: number;
  readonly address: string;
  readonly answered: boolean;
}

/** One refresh: who answered, and the merged load. */
export interface TopSnapshot extends ClusterLoad {
  readonly atMs: number;
  readonly nodes: readonly NodeAnswer[];
}

function parseInteger(name: string, minimum: number) {
  return (text: string): number => {
    const value = Number(text);
    if (!/^\d+$/.test(text) || !Number.isSafeInteger(value) || value < minimum) throw new InvalidArgumentError(`${name} must be an integer >= ${minimum}`);
    return value;
  };
}

/**
 * Asks nodes for their ClusterInfo, keeping one connection per address across refreshes. Answers
 * are told apart by node id, so a node reached under two addresses counts once.
 */
export class ClusterPoller {
  private readonly connections = new Map<string, NodeConnection>();
  /** Every address learnt from answers' node lists, by node id. */
  private readonly advertised = new Map<number, string>();

  /**
   * `token` is sent with every ClusterInfo: hot keys name keys, so a node shows a tenant's token
   * only that tenant's keys, the cluster admin every tenant's, and a caller without a token none.
   */
  constructor(
    private readonly endpoints: readonly string[],
    private readonly options: { readonly token?: string } = {},
  ) {}

  async poll(timeoutMs: number, nowMs: () => number = Date.now): Promise<{ answers: ClusterInfoResponse[]; nodes: NodeAnswer[] }> {
    const answers = new Map<number, ClusterInfoResponse>();
    const asked = new Set<string>();
    // Two passes: the endpoints and known nodes, then nodes the first answers named for the first time.
    for (let pass = 0; pass < 2; pass++) {
      const addresses = [...new Set([...this.endpoints, ...this.advertised.values()])].filter((address) => !asked.has(address)).slice(0, maxNodes);
      if (addresses.length === 0) break;
      for (const address of addresses) asked.add(address);
      const deadlineMs = nowMs() + timeoutMs;
      const results = await Promise.allSettled(addresses.map((address) => this.connectionTo(address).clusterInfo(deadlineMs, undefined)));
      for (const result of results) {
        if (result.status !== 'fulfilled') continue;
        answers.set(result.value.nodeId, result.value);
        for (const node of result.value.nodes) if (this.advertised.size < maxNodes || this.advertised.has(node.id)) this.advertised.set(node.id, node.address);
      }
    }
    const nodes = [...this.advertised].sort(([a], [b]) => a - b).map(([id, address]) => ({ id, address, answered: answers.has(id) }));
    return { answers: [...answers.values()], nodes };
  }

  close(): void {
    for (const connection of this.connections.values()) connection.close();
    this.connections.clear();
  }

  private connectionTo(address: string): NodeConnection {
    let connection = this.connections.get(address);
    if (connection === undefined) {
      connection = new NodeConnection(address, { pipelining: false, maxStreamInFlight: 1, ...(this.options.token !== undefined && { token: this.options.token }) });
      this.connections.set(address, connection);
    }
    return connection;
  }
}

export async function topSnapshot(poller: ClusterPoller, options: { timeoutMs: number; limit: number }): Promise<TopSnapshot> {
  const { answers, nodes } = await poller.poll(options.timeoutMs);
  return { atMs: Date.now(), nodes, ...mergeClusterLoad(answers, options.limit) };
}

const rateText = (rate: number): string => rate.toFixed(1);
const shareText = (share: number): string => `${(share * 100).toFixed(1)}%`;

/** A key as one printable cell: control characters escaped, a cut key marked with "…". */
function keyText(key: string, truncated: boolean): string {
  const printable = /[\u0000-\u001f\u007f]/.test(key) ? JSON.stringify(key) : key;
  return truncated ? `${printable}…` : printable;
}

export function topText(snapshot: TopSnapshot): string {
  const answered = snapshot.nodes.filter((node) => node.answered).length;
  const silent = snapshot.nodes.filter((node) => !node.answered).map((node) => `${node.id} (${node.address})`);
  const header = [
    `atoll top  ${new Date(snapshot.atMs).toISOString()}  ${answered} of ${snapshot.nodes.length} nodes answered  ${rateText(snapshot.totalRequestsPerSecond)} requests/s`,
    ...(silent.length > 0 ? [`no answer from node ${silent.join(', ')}: its share is missing`] : []),
  ];
  const partitions = snapshot.partitions.map((p) => [String(p.id), p.leader === 0 ? '-' : String(p.leader), rateText(p.requestsPerSecond), shareText(p.share)]);
  const keys = snapshot.keys.map((k) => [keyText(k.key, k.truncated), String(k.partition), rateText(k.requestsPerSecond), rateText(k.errorPerSecond), shareText(k.share)]);
  return [
    ...header,
    '',
    table(['partition', 'leader', 'req/s', 'share'], partitions),
    '',
    table(['key', 'partition', 'req/s', '±err', 'share'], keys),
  ].join('\n');
}

/** Adds `top` to the `atoll` program (run.ts calls this once). */
export function addTopCommand(program: Command, context: TopCommandContext): void {
  program
    .command('top')
    .description('show the hottest partitions and keys across the cluster, refreshed live (Ctrl-C to stop)')
    .option('--once', 'print one refresh and exit')
    .option('--count <n>', 'stop after N refreshes', parseInteger('--count', 1))
    .option('--interval <ms>', 'milliseconds between refreshes', parseInteger('--interval', minIntervalMs), defaultIntervalMs)
    .option('--limit <n>', 'partitions and keys to show', parseInteger('--limit', 1), defaultLimit)
    .action(async (options: TopOptions, command: Command) => {
      const globals = command.optsWithGlobals<{ endpoints?: string; timeout?: number; json?: boolean; token?: string }>();
      // As the other commands: --token, else $ATOLL_TOKEN (empty counts as unset).
      const token = globals.token ?? (context.env['ATOLL_TOKEN'] || undefined);
      const endpoints = (globals.endpoints ?? context.env['ATOLL_ENDPOINTS'] ?? context.defaultEndpoints)
        .split(',')
        .map((endpoint) => endpoint.trim())
        .filter((endpoint) => endpoint !== '');
      const refreshes = options.once === true ? 1 : (options.count ?? Number.POSITIVE_INFINITY);
      const live = globals.json !== true && refreshes > 1 && (context.isTty ?? process.stdout.isTTY === true);
      const stop = new AbortController();
      const onInterrupt = (): void => stop.abort();
      if (refreshes > 1) process.once('SIGINT', onInterrupt);
      const poller = new ClusterPoller(endpoints, token === undefined ? {} : { token });
      try {
        // Bounded by --count, or by Ctrl-C.
        for (let refresh = 0; refresh < refreshes && !stop.signal.aborted; refresh++) {
          if (refresh > 0) await sleep(options.interval, stop.signal).catch(() => undefined);
          if (stop.signal.aborted) break;
          const snapshot = await topSnapshot(poller, { timeoutMs: globals.timeout ?? defaultNodeTimeoutMs, limit: options.limit });
          const anyAnswer = snapshot.nodes.some((node) => node.answered);
          context.setExitCode(anyAnswer ? topExitCodes.ok : topExitCodes.error);
          if (!anyAnswer) context.stderr(`error UNAVAILABLE: no node answered ClusterInfo (asked ${endpoints.join(', ')})\n`);
          if (globals.json === true) context.stdout(`${JSON.stringify(snapshot)}\n`);
          else context.stdout(`${live ? clearScreen : refresh > 0 ? '\n' : ''}${topText(snapshot)}\n`);
        }
      } finally {
        process.removeListener('SIGINT', onInterrupt);
        poller.close();
      }
    });
}
