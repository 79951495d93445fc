/**
 * Which key a request is counted under in the load report. Written against the request shapes
 * (api/node-api.ts) structurally, so this folder depends on nothing outside src/keys.
 *
 * - single-key reads and writes: the key;
 * - prefix reads: the prefix (a hot scan shows up as its prefix);
 * - beginning a transaction: the bucket or key it names;
 * - a transaction commit: its bucket (the bucket of its first written, read or scanned key);
 * - a script: the bucket it names, if any. The node does not use this for scripts: a script's
 *   request names a user bucket (its keys are mapped into the tenant only where it runs), so
 *   AtollNode counts a script under its internal bucket, (tenant, bucket), derived from the
 *   script when the request names none. Every other request reaches here with internal keys.
 */
import { bucketOf } from '../keys/bucket.js';

export interface CountedRequest {
  readonly key?: string;
  readonly prefix?: string;
  readonly bucket?: string;
  readonly writes?: readonly { readonly key: string }[];
  readonly readKeys?: readonly string[];
  readonly readPrefixes?: readonly string[];
}

/** The key to count `request` under; undefined when it names none cheaply. */
export function loadKeyOf(request: CountedRequest): string | undefined {
  if (request.key !== undefined) return request.key;
  if (request.prefix !== undefined) return request.prefix;
  if (request.bucket !== undefined && request.bucket !== '') return bucketOf(request.bucket);
  const named = request.writes?.[0]?.key ?? request.readKeys?.[0] ?? request.readPrefixes?.[0];
  return named === undefined ? undefined : bucketOf(named);
}
