/**
 * Get-by-prefix is single-partition, so a prefix must lie inside one bucket. Two forms:
 *
 * - A bucket name with no "/" (`services`): every key that starts with `services/`. This is what
 *   etcd and Kahuna users expect. The key equal to `services` itself is NOT included: it is a
 *   different key that happens to be the bucket's own name; ask for it with get.
 * - Any text containing "/" (`services/au`): every key that starts with exactly that text. Its
 *   bucket is the text before the first "/".
 *
 * The empty prefix would name every bucket at once, so it is refused with PREFIX_SPANS_BUCKETS.
 */
import { AtollError } from '../errors.js';
import { limits } from '../limits.js';
import { bucketOf, bucketSeparator } from './bucket.js';
import { isWellFormedUtf16, utf8ByteLength } from './utf8.js';

export interface PrefixScope {
  /** The one bucket, and so the one partition, every matching key lives in. */
  readonly bucket: string;
  /** The raw key prefix to scan: matching keys start with exactly this text. */
  readonly keyPrefix: string;
}

export function prefixBucket(prefix: string): PrefixScope {
  if (typeof prefix !== 'string') throw new AtollError('INVALID_ARGUMENT', 'a prefix must be a string');
  if (prefix.length === 0) {
    throw new AtollError(
      'PREFIX_SPANS_BUCKETS',
      'the empty prefix matches keys in every bucket, but a prefix scan is served by one partition; ' +
        'name a bucket (`services`) or a prefix inside one (`services/au`)',
    );
  }
  if (!isWellFormedUtf16(prefix)) {
    throw new AtollError('INVALID_ARGUMENT', 'a prefix must be well-formed UTF-8 (it contains a lone surrogate)');
  }
  const prefixBytes = utf8ByteLength(prefix);
  if (prefixBytes > limits.maxKeyBytes) {
    throw new AtollError('KEY_TOO_LARGE', `a prefix must be at most ${limits.maxKeyBytes} UTF-8 bytes, got ${prefixBytes}`, {
      keyBytes: prefixBytes,
      maxKeyBytes: limits.maxKeyBytes,
    });
  }
  if (!prefix.includes(bucketSeparator)) return { bucket: prefix, keyPrefix: prefix + bucketSeparator };
  return { bucket: bucketOf(prefix), keyPrefix: prefix };
}
