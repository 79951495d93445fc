/**
 * How the CLI prints results: values as UTF-8 text, tables for people, JSON for scripts. JSON
 * numbers stay numbers while they are exact; a 64-bit counter beyond 2^53 prints as a string. In
 * JSON a value that is not UTF-8 text is base64, and `valueEncoding` says which of the two it is.
 */
import { isUtf8 } from 'node:buffer';
import type { ClusterInfo, GetResult, KeyEntry } from '../client/index.js';

const utf8Decoder = new TextDecoder('utf-8');

export function textOf(value: Uint8Array): string {
  return utf8Decoder.decode(value);
}

/** A bigint as a JSON number when exact, else as a string (JSON.parse would round it). */
export function jsonInteger(value: bigint): number | string {
  return value >= BigInt(Number.MIN_SAFE_INTEGER) && value <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(value) : value.toString();
}

export function json(value: unknown): string {
  return JSON.stringify(value);
}

/** A value in JSON: its text when it is UTF-8, else its bytes in base64; `valueEncoding` says which. */
export function valueJson(value: Uint8Array): { value: string; valueEncoding: 'utf8' | 'base64' } {
  return isUtf8(value) ? { value: utf8Decoder.decode(value), valueEncoding: 'utf8' } : { value: Buffer.from(value).toString('base64'), valueEncoding: 'base64' };
}

export function entryJson(entry: KeyEntry): Record<string, unknown> {
  return {
    key: entry.key,
    ...valueJson(entry.value),
    createRevision: entry.createRevision,
    modRevision: entry.modRevision,
    version: entry.version,
    expiresAtMs: entry.expiresAtMs,
  };
}

export function getJson(key: string, result: GetResult): Record<string, unknown> {
  return {
    key,
    found: result.found,
    ...(result.found ? valueJson(result.value) : { value: null, valueEncoding: null }),
    createRevision: result.createRevision,
    modRevision: result.modRevision,
    version: result.version,
    expiresAtMs: result.expiresAtMs,
    revision: result.revision,
  };
}

/** Left-aligned columns separated by two spaces. */
export function table(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = header.map((title, column) => Math.max(title.length, ...rows.map((row) => (row[column] ?? '').length)));
  const line = (cells: readonly string[]): string =>
    cells
      .map((cell, column) => (column === cells.length - 1 ? cell : cell.padEnd(widths[column]!)))
      .join('  ')
      .trimEnd();
  return [line(header), ...rows.map(line)].join('\n');
}

/** A node's admin URL (metrics, health) from its admin address; '' when the answering node does not know it. */
function adminUrlOf(address: string | undefined): string {
  return address === undefined || address === '' ? '' : `http://${address}`;
}

/** The `cluster status --json` shape: nodes, and partitions with their range, leader and term. */
export function clusterStatusJson(info: ClusterInfo): Record<string, unknown> {
  return {
    clusterId: info.clusterId ?? '',
    hashFunction: info.hashFunction,
    nodes: info.nodes.map((node) => ({
      id: node.id,
      address: node.address,
      reachable: node.reachable,
      ...(adminUrlOf(node.adminAddress) !== '' && { admin: adminUrlOf(node.adminAddress) }),
      ...(node.state !== undefined && { state: node.state }),
      ...(node.zone !== undefined && { zone: node.zone }),
      replicas: info.partitions.filter((partition) => partition.replicas.includes(node.id)).length,
      leads: info.partitions.filter((partition) => partition.leader === node.id).length,
    })),
    movesInProgress: info.partitions.filter((partition) => partition.replicas.length > info.replicationFactor).map((partition) => partition.id),
    partitions: info.partitions.map((partition) => ({
      id: partition.id,
      range: { start: partition.rangeStart, end: partition.rangeEnd },
      leader: partition.leader,
      replicas: [...partition.replicas],
      term: partition.term,
    })),
  };
}

/** Two tables: each node and the partitions it leads, then each partition and its leader. */
export function clusterStatusText(info: ClusterInfo): string {
  const addressOf = new Map(info.nodes.map((node) => [node.id, node.address]));
  const nodeRows = info.nodes.map((node) => {
    const led = info.partitions.filter((partition) => partition.leader === node.id).map((partition) => String(partition.id));
    const held = info.partitions.filter((partition) => partition.replicas.includes(node.id)).length;
    const state = (node.state ?? 'active') + (node.zone !== undefined ? ` (zone ${node.zone})` : '');
    return [String(node.id), node.address, state, adminUrlOf(node.adminAddress) || '-', node.reachable ? 'yes' : 'no', String(held), String(led.length), led.join(',') || '-'];
  });
  const partitionRows = info.partitions.map((partition) => [
    String(partition.id),
    `[${partition.rangeStart}, ${partition.rangeEnd})`,
    partition.leader === 0 ? '(none)' : `${partition.leader} ${addressOf.get(partition.leader) ?? '?'}`,
    // More voters than the replication factor: a replica move is between its promotion and removal.
    partition.replicas.join(',') + (partition.replicas.length > info.replicationFactor ? ' (moving)' : ''),
    String(partition.term),
  ]);
  return [
    `cluster ${info.clusterId || '(no id: a server older than cluster descriptors)'}, hash ${info.hashFunction}`,
    `answered by node ${info.nodeId}: ${Math.max(info.partitionCount, info.partitions.length)} partitions, replication factor ${info.replicationFactor}, member table version ${info.memberTableVersion ?? 0}`,
    `moves in progress: ${info.partitions.filter((partition) => partition.replicas.length > info.replicationFactor).map((partition) => `partition ${partition.id}`).join(', ') || 'none'}`,
    '',
    table(['node', 'address', 'state', 'admin', 'reachable', 'replicas', 'leads', 'partitions led'], nodeRows),
    '',
    table(['partition', 'hash range', 'leader', 'replicas', 'term'], partitionRows),
  ].join('\n');
}
