/** Wire forms of Cluster.MoveReplica and Peer.PrepareReplica (proto/atoll/v1/cluster.proto). */
import { AtollError } from '../errors.js';
import type { MoveReplicaRequest, MoveReplicaResponse } from '../node/api.js';
import type { MoveReplicaRequest as MoveReplicaRequestMessage } from './generated/atoll/v1/MoveReplicaRequest.js';
import type { MoveReplicaResponse as MoveReplicaResponseMessage } from './generated/atoll/v1/MoveReplicaResponse.js';
import { parseWireUint32 } from './wire-numbers.js';

function fields(value: unknown, name: string): Record<string, unknown> {
  if (value === undefined || value === null) return {};
  if (typeof value !== 'object') throw new AtollError('INVALID_ARGUMENT', `${name} must be a message`);
  return value as Record<string, unknown>;
}

export function encodeMoveReplicaRequest(request: MoveReplicaRequest): MoveReplicaRequestMessage {
  return { partition: request.partition, fromNode: request.fromNode, toNode: request.toNode };
}

export function decodeMoveReplicaRequest(value: unknown): MoveReplicaRequest {
  const message = fields(value, 'MoveReplicaRequest');
  const fromNode = parseWireUint32(message['fromNode'] ?? 0, 'from_node');
  const toNode = parseWireUint32(message['toNode'] ?? 0, 'to_node');
  if (fromNode === 0 || toNode === 0) throw new AtollError('INVALID_ARGUMENT', 'a move needs from_node and to_node: node ids');
  return { partition: parseWireUint32(message['partition'] ?? 0, 'partition'), fromNode, toNode };
}

export function encodeMoveReplicaResponse(response: MoveReplicaResponse): MoveReplicaResponseMessage {
  return { voters: [...response.voters] };
}

export function decodeMoveReplicaResponse(value: unknown): MoveReplicaResponse {
  const voters = fields(value, 'MoveReplicaResponse')['voters'] ?? [];
  if (!Array.isArray(voters)) throw new AtollError('INVALID_ARGUMENT', 'voters must be a list');
  return { voters: voters.map((voter) => parseWireUint32(voter, 'voters')) };
}

export function decodePrepareReplicaRequest(value: unknown): number {
  return parseWireUint32(fields(value, 'PrepareReplicaRequest')['partition'] ?? 0, 'partition');
}
