/** Conversions from the MVCC store's read results to the NodeApi's records and responses. */
import type { GetResult, KeyVersion } from '../../mvcc/index.js';
import type { GetResponse, KeyRecord } from '../../api/node-api.js';

export function keyRecordOf(version: KeyVersion): KeyRecord {
  return {
    key: version.key,
    value: version.value,
    createRevision: version.createRevision,
    modRevision: version.modRevision,
    version: version.version,
    expiresAtMs: version.expiresAtMs ?? 0,
  };
}

export function getResponseOf(result: GetResult): GetResponse {
  return {
    found: result.found,
    value: result.value ?? new Uint8Array(0),
    createRevision: result.createRevision,
    modRevision: result.modRevision,
    version: result.version,
    expiresAtMs: result.expiresAtMs ?? 0,
    revision: result.revision,
  };
}
