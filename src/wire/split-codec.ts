/** Wire forms of Cluster.SplitPartition and Cluster.MergePartition (proto/atoll/v1/cluster.proto). */
import { AtollError } from '../errors.js';
import type { MergePartitionResult, SplitPartitionResult } from '../api/node-api.js';
import type { MergePartitionResponse as MergePartitionResponseMessage } from './generated/atoll/v1/MergePartitionResponse.js';
import type { SplitPartitionRequest as SplitPartitionRequestMessage } from './generated/atoll/v1/SplitPartitionRequest.js';
import type { SplitPartitionResponse as SplitPartitionResponseMessage } from './generated/atoll/v1/SplitPartitionResponse.js';
import { parseWireCount, parseWireUint32 } from './wire-numbers.js';

function fields(value: unknown, name: string): Record<string, unknown> {
  if (value === undefined || value === null) return {};
  if (typeof value !== 'object') throw new AtollError('INVALID_ARGUMENT', `${name} must be a message`);
  return value as Record<string, unknown>;
}

export function encodeSplitPartitionRequest(request: { readonly partition: number }): SplitPartitionRequestMessage {
  return { partition: request.partition };
}

export function decodeSplitPartitionRequest(value: unknown): { partition: number } {
  return { partition: parseWireUint32(fields(value, 'SplitPartitionRequest')['partition'] ?? 0, 'partition') };
}

export function encodeSplitPartitionResponse(result: SplitPartitionResult): SplitPartitionResponseMessage {
  return { partition: result.partition, newPartition: result.newPartition, rangeStart: result.start, splitHash: result.mid, rangeEnd: result.end };
}

export function decodeSplitPartitionResponse(value: unknown): SplitPartitionResult {
  const message = fields(value, 'SplitPartitionResponse');
  return {
    partition: parseWireUint32(message['partition'] ?? 0, 'partition'),
    newPartition: parseWireUint32(message['newPartition'] ?? 0, 'new_partition'),
    start: parseWireCount(message['rangeStart'] ?? 0, 'range_start'),
    mid: parseWireCount(message['splitHash'] ?? 0, 'split_hash'),
    end: parseWireCount(message['rangeEnd'] ?? 0, 'range_end'),
  };
}

export function encodeMergePartitionRequest(request: { readonly partition: number }): { partition: number } {
  return { partition: request.partition };
}

export function decodeMergePartitionRequest(value: unknown): { partition: number } {
  return { partition: parseWireUint32(fields(value, 'MergePartitionRequest')['partition'] ?? 0, 'partition') };
}

export function encodeMergePartitionResponse(result: MergePartitionResult): MergePartitionResponseMessage {
  return { partition: result.partition, mergedPartition: result.mergedPartition, rangeStart: result.start, rangeEnd: result.end };
}

export function decodeMergePartitionResponse(value: unknown): MergePartitionResult {
  const message = fields(value, 'MergePartitionResponse');
  return {
    partition: parseWireUint32(message['partition'] ?? 0, 'partition'),
    mergedPartition: parseWireUint32(message['mergedPartition'] ?? 0, 'merged_partition'),
    start: parseWireCount(message['rangeStart'] ?? 0, 'range_start'),
    end: parseWireCount(message['rangeEnd'] ?? 0, 'range_end'),
  };
}
