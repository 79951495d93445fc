/**
 * What the client's calls return. Values are bytes (`value: Uint8Array`) with a `text()` helper
 * that decodes them as UTF-8, because most stored values are text but Atoll promises bytes. Times
 * are Unix epoch milliseconds; `expiresAtMs` is 0 for a key that never expires. Revisions are
 * plain numbers (they stay below 2^53).
 */
import type { GetResponse, KeyRecord } from '../api/node-api.js';

const utf8Decoder = new TextDecoder('utf-8');

/** One live key as stored. */
export interface KeyEntry {
  readonly key: string;
  readonly value: Uint8Array;
  /** The value decoded as UTF-8 (invalid sequences become U+FFFD). */
  text(): string;
  readonly createRevision: number;
  readonly modRevision: number;
  readonly version: number;
  readonly expiresAtMs: number;
}

/**
 * The answer of get. `found` is the only test of presence: a stored empty value or "0" is
 * found = true; a missing key is found = false with an empty value and zero revisions.
 */
export interface GetResult {
  readonly found: boolean;
  readonly value: Uint8Array;
  /** The value decoded as UTF-8; "" when not found. */
  text(): string;
  readonly createRevision: number;
  readonly modRevision: number;
  readonly version: number;
  readonly expiresAtMs: number;
  /** The partition revision the read was served at. */
  readonly revision: number;
}

export interface PutResult {
  /** False when a condition (ifAbsent, ifPresent, ifModRevision, ifValue) did not hold. */
  readonly applied: boolean;
  /** The write's revision; when not applied, the partition's current one. */
  readonly revision: number;
  /** With returnPrevious: the version the write replaced (undefined when the key was absent). */
  readonly previous?: KeyEntry;
}

export interface DeleteResult {
  /** False when the key was absent or a condition did not hold. */
  readonly deleted: boolean;
  readonly revision: number;
}

export interface IncrementResult {
  /** The counter after the increment (a signed 64-bit integer). */
  readonly value: bigint;
  readonly revision: number;
}

export interface ExistsResult {
  readonly exists: boolean;
  readonly revision: number;
}

export interface ExtendResult {
  /** False when the key is absent. */
  readonly extended: boolean;
  /** The new expiry, Unix epoch ms; 0 when not extended. */
  readonly expiresAtMs: number;
  readonly revision: number;
}

export interface PrefixPage {
  readonly items: readonly KeyEntry[];
  /** The revision every item was read at. */
  readonly revision: number;
  /** Pass as `pageToken` for the next page; "" when there are no more. */
  readonly nextPageToken: string;
}

class Entry implements KeyEntry {
  readonly key: string;
  readonly value: Uint8Array;
  readonly createRevision: number;
  readonly modRevision: number;
  readonly version: number;
  readonly expiresAtMs: number;

  constructor(record: KeyRecord) {
    this.key = record.key;
    this.value = record.value;
    this.createRevision = record.createRevision;
    this.modRevision = record.modRevision;
    this.version = record.version;
    this.expiresAtMs = record.expiresAtMs;
  }

  text(): string {
    return utf8Decoder.decode(this.value);
  }
}

class Got implements GetResult {
  readonly found: boolean;
  readonly value: Uint8Array;
  readonly createRevision: number;
  readonly modRevision: number;
  readonly version: number;
  readonly expiresAtMs: number;
  readonly revision: number;

  constructor(response: GetResponse) {
    this.found = response.found;
    this.value = response.value;
    this.createRevision = response.createRevision;
    this.modRevision = response.modRevision;
    this.version = response.version;
    this.expiresAtMs = response.expiresAtMs;
    this.revision = response.revision;
  }

  text(): string {
    return utf8Decoder.decode(this.value);
  }
}

export function keyEntryOf(record: KeyRecord): KeyEntry {
  return new Entry(record);
}

export function getResultOf(response: GetResponse): GetResult {
  return new Got(response);
}
