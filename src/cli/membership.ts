/**
 * `atoll cluster rebalance --pause|--resume` (the node's rebalancer, src/node/cluster/rebalancer.ts) and
 * `atoll cluster add-node`, `remove-node` and `replace-node`: change the cluster's member table
 * (Cluster.ChangeMember) and move replicas with Cluster.MoveReplica, one at a time, along the plan
 * of src/keys/placement.ts (planMoves), re-planned from ClusterInfo after every move. Each command
 * is idempotent: run it again after an interruption and it goes on from where the cluster is.
 */
import { InvalidArgumentError, type Command } from 'commander';
import type { AtollClient } from '../client/index.js';
import type { RebalanceResponse } from '../api/node-api.js';
import { AtollError } from '../errors.js';
import { planMoves, type PlannedMove } from '../keys/placement.js';
import { json } from './format.js';

type Print = (line: string) => void;
type Action = (client: AtollClient, print: Print, globals: { json?: boolean; timeout?: number }) => Promise<number>;
type Act = (work: (...args: unknown[]) => Action) => (...args: unknown[]) => Promise<void>;

/** One move copies a whole partition: it gets minutes unless --timeout says otherwise. */
const MOVE_TIMEOUT_MS = 120_000;
/** Moves (and refused attempts) one command runs at most: a bound on an unattended loop. */
const MAX_ROUNDS = 100_000;
/** Errors after which a move is planned and run again (it resumes where the partition's configuration is). */
const retriedCodes: ReadonlySet<string> = new Set(['NOT_LEADER', 'NO_LEADER', 'UNAVAILABLE', 'DEADLINE_EXCEEDED']);
/** How long the answering node may lag behind the member table change the command made. */
const MAX_BEHIND_MS = 30_000;
/** Refused or failed moves in a row (a stale view, a leader change) before the command gives up. */
const MAX_REFUSALS_IN_A_ROW = 30;

function nodeSpec(text: string): { id: number; address: string } {
  const match = /^(\d+)=(\S+:\d{1,5})$/.exec(text);
  const id = Number(match?.[1]);
  if (match === null || !Number.isSafeInteger(id) || id < 1) throw new InvalidArgumentError('expected ID=HOST:PORT (the node\'s id and its client address)');
  return { id, address: match[2] as string };
}

function nodeId(text: string): number {
  const id = Number(text);
  if (!/^\d+$/.test(text) || !Number.isSafeInteger(id) || id < 1) throw new InvalidArgumentError('a node id is an integer >= 1');
  return id;
}

/**
 * Moves replicas until the plan is empty: every replica off leaving nodes, then counts even.
 * Returns the moves made. A move refused because this view of the partition was stale
 * (MOVE_REFUSED 'not-replica' / 'already-replica') is re-planned after a pause.
 */
export async function rebalance(client: AtollClient, print: Print, timeoutMs: number, minVersion = 0): Promise<PlannedMove[]> {
  const done: PlannedMove[] = [];
  // The voters the leader reported after each move: first-hand, newer than another node's view.
  const known = new Map<number, readonly number[]>();
  let refusedInARow = 0;
  let behindSinceMs: number | undefined;
  for (let round = 0; round < MAX_ROUNDS; round++) {
    const info = await client.clusterInfo();
    // The answering node may not have followed the change yet (it reads the table every second,
    // or every ten without a replica of its partition); a bounded wait, then an error to retry on.
    if ((info.memberTableVersion ?? 0) < minVersion) {
      behindSinceMs ??= Date.now();
      if (Date.now() - behindSinceMs > MAX_BEHIND_MS) {
        throw new AtollError('UNAVAILABLE', `node ${info.nodeId} still answers with member table version ${info.memberTableVersion ?? 0} after ${MAX_BEHIND_MS / 1000} s, not ${minVersion}; run the command again`);
      }
      await new Promise((resolve) => setTimeout(resolve, 200));
      continue;
    }
    behindSinceMs = undefined;
    const partitions = info.partitions.map((partition) => ({ id: partition.id, replicas: known.get(partition.id) ?? partition.replicas }));
    const members = info.nodes.map((node) => ({ id: node.id, state: node.state ?? 'active', ...(node.zone !== undefined && { zone: node.zone }) }));
    const next = planMoves(partitions, members)[0];
    if (next === undefined) return done;
    try {
      const result = await client.moveReplica(next.partition, next.from, next.to, { timeoutMs });
      known.set(next.partition, result.voters);
      done.push(next);
      refusedInARow = 0;
      print(`partition ${next.partition}: moved a replica from node ${next.from} to node ${next.to} (replicas ${result.voters.join(',')})`);
    } catch (error) {
      const code = error instanceof AtollError ? error.code : undefined;
      const reason = code === 'MOVE_REFUSED' ? String((error as AtollError).details?.['reason']) : undefined;
      // A stale view, or leadership moving mid-move (a move hands leadership away from its source):
      // moves are resumable, so the plan is made again and the move repeated, a bounded number of times.
      // 'in-progress': the node's rebalancer runs a move of that partition; wait for it and plan again.
      const again = reason === 'not-replica' || reason === 'already-replica' || reason === 'in-progress' || (code !== undefined && retriedCodes.has(code));
      if (!again) throw error;
      known.delete(next.partition);
      if (++refusedInARow > MAX_REFUSALS_IN_A_ROW) throw error;
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
  }
  throw new AtollError('DEADLINE_EXCEEDED', `the rebalance did not finish in ${MAX_ROUNDS} rounds; run the command again to go on`);
}

/** Attempts of remove-node's last step (each after moving what the refusal named) before it gives up. */
const MAX_REMOVE_ATTEMPTS = 20;

/**
 * Moves every replica off leaving node `id` (rebalance, above), then removes it. The node refuses
 * the removal while a partition's configuration still names it (MEMBERSHIP_REFUSED
 * 'holds-replicas': a move onto it that started before it left landed after the moves), or while it
 * cannot see every partition's leader ('view-incomplete'); then the moves run again and it asks
 * again, a bounded number of times.
 */
export async function removeAfterMoves(client: AtollClient, print: Print, timeoutMs: number, id: number, minVersion: number): Promise<{ moves: PlannedMove[]; version: number }> {
  const moves: PlannedMove[] = [];
  for (let attempt = 1; ; attempt++) {
    moves.push(...(await rebalance(client, print, timeoutMs, minVersion)));
    try {
      return { moves, version: (await client.changeMember({ action: 'remove', id })).version };
    } catch (error) {
      const reason = error instanceof AtollError && error.code === 'MEMBERSHIP_REFUSED' ? String(error.details?.['reason']) : undefined;
      if ((reason !== 'holds-replicas' && reason !== 'view-incomplete') || attempt >= MAX_REMOVE_ATTEMPTS) throw error;
      print(`node ${id}: ${error instanceof Error ? error.message : String(error)}; moving again`);
      await new Promise((resolve) => setTimeout(resolve, 1_000));
    }
  }
}

/** The status page's rebalancer line ('' when it could not be read: no admin token, or an older server). */
export function rebalancerText(response: RebalanceResponse | undefined): string {
  if (response === undefined) return '';
  const moves = response.moves.map((move) => `partition ${move.partition} ${move.fromNode}->${move.toNode}`).join(', ');
  return `\nrebalancer: ${response.state}${moves !== '' ? ` (moves assigned: ${moves})` : ''}`;
}

export function addMembershipCommands(cluster: Command, act: Act): void {
  cluster
    .command('rebalance')
    .description('pause or resume the rebalancer that evens replicas and leaders across the members (a replicated flag: it survives leader changes and restarts; a running move finishes), or show it (cluster admin)')
    .option('--pause', 'stop planning replica moves and leader changes (a running move finishes)')
    .option('--resume', 'start them again')
    .action(
      act((options) => async (client, print, globals) => {
        const { pause, resume } = options as { pause?: boolean; resume?: boolean };
        if (pause === true && resume === true) throw new AtollError('INVALID_ARGUMENT', 'give --pause or --resume, not both');
        const result = await client.rebalance({ action: pause === true ? 'pause' : resume === true ? 'resume' : 'status' });
        print(globals.json === true ? json(result) : rebalancerText(result).trim());
        return 0;
      }),
    );
  cluster
    .command('add-node')
    .description('add node ID (started empty with --join) at its client address HOST:PORT, move replicas onto it until counts are even, and mark it active (cluster admin)')
    .argument('<node>', 'ID=HOST:PORT', nodeSpec)
    .option('--peer-address <host:port>', 'its peer port (default: its client port + 100)')
    .option('--zone <zone>', 'its zone label: a partition\'s replicas spread over zones')
    .action(
      act((spec, options) => async (client, print, globals) => {
        const { id, address } = spec as { id: number; address: string };
        const { peerAddress, zone } = options as { peerAddress?: string; zone?: string };
        const out: Print = globals.json === true ? () => undefined : print;
        const added = await client.changeMember({ action: 'add', id, address, ...(peerAddress !== undefined && { peerAddress }), ...(zone !== undefined && { zone }) });
        out(`node ${id} is a member (joining) at ${address}; moving replicas onto it`);
        const moves = await rebalance(client, out, globals.timeout ?? MOVE_TIMEOUT_MS, added.version);
        const result = await client.changeMember({ action: 'activate', id });
        out(`node ${id} is active; ${moves.length} replicas moved`);
        if (globals.json === true) print(json({ node: id, state: 'active', moves, version: result.version }));
        return 0;
      }),
    );
  cluster
    .command('remove-node')
    .description('move every replica off node ID to the other members, then remove it for good (its id is never reused; the node then shuts itself down with exit code 4; cluster admin)')
    .argument('<node>', 'node id', nodeId)
    .action(
      act((id) => async (client, print, globals) => {
        const out: Print = globals.json === true ? () => undefined : print;
        const leaving = await client.changeMember({ action: 'leave', id: id as number });
        out(`node ${String(id)} is leaving; moving its replicas to the other members`);
        const { moves, version } = await removeAfterMoves(client, out, globals.timeout ?? MOVE_TIMEOUT_MS, id as number, leaving.version);
        out(`node ${String(id)} is removed; ${moves.length} replicas moved; it shuts itself down once it learns it (exit code 4)`);
        if (globals.json === true) print(json({ node: id, state: 'removed', moves, version }));
        return 0;
      }),
    );
  cluster
    .command('replace-node')
    .description('replace node OLD (its disk is gone) by NEW, started empty with --join at HOST:PORT: NEW receives OLD\'s replicas (each as a learner first), then OLD is removed (cluster admin)')
    .argument('<old>', 'the node being replaced', nodeId)
    .argument('<new>', 'NEW=HOST:PORT', nodeSpec)
    .option('--peer-address <host:port>', 'the new node\'s peer port (default: its client port + 100)')
    .option('--zone <zone>', 'the new node\'s zone label')
    .action(
      act((old, spec, options) => async (client, print, globals) => {
        const { id, address } = spec as { id: number; address: string };
        const { peerAddress, zone } = options as { peerAddress?: string; zone?: string };
        const out: Print = globals.json === true ? () => undefined : print;
        // NEW joins before OLD leaves, so the members that may hold replicas never drop below the replication factor.
        await client.changeMember({ action: 'add', id, address, ...(peerAddress !== undefined && { peerAddress }), ...(zone !== undefined && { zone }) });
        const leaving = await client.changeMember({ action: 'leave', id: old as number });
        out(`node ${id} is joining at ${address}; node ${String(old)} is leaving: moving its replicas`);
        const moved = await rebalance(client, out, globals.timeout ?? MOVE_TIMEOUT_MS, leaving.version);
        await client.changeMember({ action: 'activate', id });
        const { moves, version } = await removeAfterMoves(client, out, globals.timeout ?? MOVE_TIMEOUT_MS, old as number, leaving.version);
        moves.unshift(...moved);
        out(`node ${String(old)} is removed and replaced by node ${id}; ${moves.length} replicas moved`);
        if (globals.json === true) print(json({ replaced: old, by: id, moves, version }));
        return 0;
      }),
    );
}
