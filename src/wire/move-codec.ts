/** Wire forms of Cluster.MoveReplica, Cluster.ChangeMember, Cluster.Rebalance and Peer.PrepareReplica (proto/atoll/v1/cluster.proto). */
import { AtollError } from '../errors.js';
import type { ChangeMemberRequest, ChangeMemberResponse, MoveReplicaRequest, MoveReplicaResponse, RebalanceRequest, RebalanceResponse } from '../api/node-api.js';
import { decodeNodeInfo, encodeNodeInfo } from './cluster-convert.js';
import type { ChangeMemberRequest as ChangeMemberRequestMessage } from './generated/atoll/v1/ChangeMemberRequest.js';
import type { ChangeMemberResponse as ChangeMemberResponseMessage } from './generated/atoll/v1/ChangeMemberResponse.js';
import type { MoveReplicaRequest as MoveReplicaRequestMessage } from './generated/atoll/v1/MoveReplicaRequest.js';
import type { MoveReplicaResponse as MoveReplicaResponseMessage } from './generated/atoll/v1/MoveReplicaResponse.js';
import type { RebalanceRequest as RebalanceRequestMessage } from './generated/atoll/v1/RebalanceRequest.js';
import type { RebalanceResponse as RebalanceResponseMessage } from './generated/atoll/v1/RebalanceResponse.js';
import { parseWireCount, parseWireUint32 } from './wire-numbers.js';

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

export function decodePrepareReplicaRequest(value: unknown): { partition: number; voteFloor: { term: number; index: number } } {
  const message = fields(value, 'PrepareReplicaRequest');
  const voteFloor = { term: parseWireCount(message['voteFloorTerm'] ?? 0, 'vote_floor_term'), index: parseWireCount(message['voteFloorIndex'] ?? 0, 'vote_floor_index') };
  return { partition: parseWireUint32(message['partition'] ?? 0, 'partition'), voteFloor };
}

const memberActions = ['add', 'activate', 'leave', 'remove'] as const;

export function encodeChangeMemberRequest(request: ChangeMemberRequest): ChangeMemberRequestMessage {
  return { action: request.action, id: request.id, address: request.address ?? '', peerAddress: request.peerAddress ?? '', zone: request.zone ?? '' };
}

export function decodeChangeMemberRequest(value: unknown): ChangeMemberRequest {
  const message = fields(value, 'ChangeMemberRequest');
  const text = (name: string, field: unknown): string => {
    if (field === undefined || field === null) return '';
    if (typeof field !== 'string' || field.length > 1_024) throw new AtollError('INVALID_ARGUMENT', `${name} must be a string of at most 1024 characters`);
    return field;
  };
  const action = text('action', message['action']);
  if (!(memberActions as readonly string[]).includes(action)) throw new AtollError('INVALID_ARGUMENT', `action must be one of ${memberActions.join(', ')}`);
  const id = parseWireUint32(message['id'] ?? 0, 'id');
  if (id === 0) throw new AtollError('INVALID_ARGUMENT', 'a member change needs the node id (at least 1)');
  const address = text('address', message['address']);
  const peerAddress = text('peer_address', message['peerAddress']);
  const zone = text('zone', message['zone']);
  return { action: action as ChangeMemberRequest['action'], id, ...(address !== '' && { address }), ...(peerAddress !== '' && { peerAddress }), ...(zone !== '' && { zone }) };
}

export function encodeChangeMemberResponse(response: ChangeMemberResponse): ChangeMemberResponseMessage {
  return { version: String(response.version), members: response.members.map(encodeNodeInfo) };
}

export function decodeChangeMemberResponse(value: unknown): ChangeMemberResponse {
  const message = fields(value, 'ChangeMemberResponse');
  const members = message['members'] ?? [];
  if (!Array.isArray(members)) throw new AtollError('INVALID_ARGUMENT', 'members must be a list');
  return { version: parseWireCount(message['version'] ?? '0', 'version'), members: members.map(decodeNodeInfo) };
}

const rebalanceActions = ['pause', 'resume', 'status'] as const;

export function encodeRebalanceRequest(request: RebalanceRequest): RebalanceRequestMessage {
  return { action: request.action };
}

export function decodeRebalanceRequest(value: unknown): RebalanceRequest {
  const action = fields(value, 'RebalanceRequest')['action'] ?? '';
  if (typeof action !== 'string' || !(rebalanceActions as readonly string[]).includes(action)) throw new AtollError('INVALID_ARGUMENT', `action must be one of ${rebalanceActions.join(', ')}`);
  return { action: action as RebalanceRequest['action'] };
}

export function encodeRebalanceResponse(response: RebalanceResponse): RebalanceResponseMessage {
  return {
    state: response.state,
    paused: response.paused,
    version: String(response.version),
    moves: response.moves.map((move) => ({ partition: move.partition, fromNode: move.fromNode, toNode: move.toNode })),
    plannedLeaders: response.plannedLeaders.map((planned) => ({ partition: planned.partition, node: planned.node })),
  };
}

export function decodeRebalanceResponse(value: unknown): RebalanceResponse {
  const message = fields(value, 'RebalanceResponse');
  const moves = message['moves'] ?? [];
  if (!Array.isArray(moves)) throw new AtollError('INVALID_ARGUMENT', 'moves must be a list');
  const plannedLeaders = message['plannedLeaders'] ?? [];
  if (!Array.isArray(plannedLeaders)) throw new AtollError('INVALID_ARGUMENT', 'planned_leaders must be a list');
  const state = message['state'] ?? '';
  if (typeof state !== 'string' || state.length > 64) throw new AtollError('INVALID_ARGUMENT', 'state must be a short string');
  return {
    state,
    paused: message['paused'] === true,
    version: parseWireCount(message['version'] ?? '0', 'version'),
    moves: moves.map((move: unknown) => {
      const entry = fields(move, 'RebalanceMove');
      return { partition: parseWireUint32(entry['partition'] ?? 0, 'partition'), fromNode: parseWireUint32(entry['fromNode'] ?? 0, 'from_node'), toNode: parseWireUint32(entry['toNode'] ?? 0, 'to_node') };
    }),
    plannedLeaders: plannedLeaders.map((planned: unknown) => {
      const entry = fields(planned, 'PlannedLeader');
      return { partition: parseWireUint32(entry['partition'] ?? 0, 'partition'), node: parseWireUint32(entry['node'] ?? 0, 'node') };
    }),
  };
}
