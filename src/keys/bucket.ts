import assert from 'node:assert/strict';

/** The character that ends a key's bucket. */
export const bucketSeparator = '/';

/**
 * The bucket of a key is its text before the first `/`; a key without `/` is its own bucket.
 * `services/auth` and `services/inventory` share bucket `services`, so they share a partition.
 * A key starting with `/` has the empty bucket, which is a bucket like any other.
 */
export function bucketOf(key: string): string {
  assert.equal(typeof key, 'string');
  const separatorIndex = key.indexOf(bucketSeparator);
  return separatorIndex === -1 ? key : key.slice(0, separatorIndex);
}
