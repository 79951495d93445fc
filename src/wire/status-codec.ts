/**
 * One node's own status for the status page (src/server/status-page.ts), and its wire form for Peer.NodeStatus
 * (proto/atoll/v1/cluster.proto): a node asks its peers for theirs over the peer port, with the
 * peer secret, never with the viewer's token.
 */
import { AtollError } from '../errors.js';
import type { ClusterInfoResponse, LeaderChange } from '../api/node-api.js';
import { decodeClusterInfoResponse, encodeClusterInfoResponse } from './cluster-convert.js';
import type { NodeStatusResponse as NodeStatusResponseMessage } from './generated/atoll/v1/NodeStatusResponse.js';
import { formatWireInt64, parseWireCount, parseWireUint32 } from './wire-numbers.js';

/** One node's own view: its readiness, its ClusterInfo (every tenant's hot keys), its leader changes. */
export interface NodeStatus {
  readonly nodeId: number;
  readonly ready: boolean;
  readonly problems: readonly string[];
  readonly info: ClusterInfoResponse;
  readonly leaderChanges: readonly LeaderChange[];
}

/** Bounds on a peer's answer (readinessProblems gives a few lines; the ring keeps 64 changes). */
const MAX_PROBLEMS = 16;
const MAX_PROBLEM_CHARS = 1_024;
const MAX_LEADER_CHANGES = 256;

export function encodeNodeStatus(status: NodeStatus): NodeStatusResponseMessage {
  return {
    nodeId: status.nodeId,
    ready: status.ready,
    problems: status.problems.slice(0, MAX_PROBLEMS).map((problem) => problem.slice(0, MAX_PROBLEM_CHARS)),
    info: encodeClusterInfoResponse(status.info),
    leaderChanges: status.leaderChanges.slice(-MAX_LEADER_CHANGES).map((change) => ({
      partition: change.partition,
      fromNode: change.from,
      toNode: change.to,
      term: formatWireInt64(change.term),
      atMs: formatWireInt64(change.atMs),
    })),
  };
}

const invalid = (message: string): AtollError => new AtollError('INVALID_ARGUMENT', `NodeStatusResponse: ${message}`);

function list(value: unknown, field: string, max: number): unknown[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) throw invalid(`${field} must be a list`);
  if (value.length > max) throw invalid(`${field} lists ${value.length} items; at most ${max}`);
  return value;
}

export function decodeNodeStatus(value: unknown): NodeStatus {
  if (value === null || typeof value !== 'object') throw invalid('not a message');
  const message = value as Partial<Record<keyof NodeStatusResponseMessage, unknown>>;
  if (message.info === undefined || message.info === null) throw invalid('no info');
  return {
    nodeId: parseWireUint32(message.nodeId ?? 0, 'node_id'),
    ready: message.ready === true,
    problems: list(message.problems, 'problems', MAX_PROBLEMS).map((problem) => {
      if (typeof problem !== 'string') throw invalid('problems must be strings');
      return problem.slice(0, MAX_PROBLEM_CHARS);
    }),
    info: decodeClusterInfoResponse(message.info),
    leaderChanges: list(message.leaderChanges, 'leader_changes', MAX_LEADER_CHANGES).map((item) => {
      if (item === null || typeof item !== 'object') throw invalid('leader_changes must be messages');
      const change = item as Record<string, unknown>;
      return {
        partition: parseWireUint32(change['partition'] ?? 0, 'partition'),
        from: parseWireUint32(change['fromNode'] ?? 0, 'from_node'),
        to: parseWireUint32(change['toNode'] ?? 0, 'to_node'),
        term: parseWireCount(change['term'] ?? '0', 'term'),
        atMs: parseWireCount(change['atMs'] ?? '0', 'at_ms'),
      };
    }),
  };
}
