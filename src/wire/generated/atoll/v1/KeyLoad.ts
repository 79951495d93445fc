// Original file: proto/atoll/v1/cluster.proto


/**
 * One hot key, estimated by a space-bounded sketch (Space-Saving over decayed counts, src/hotkeys):
 * its true rate lies in [requests_per_second - error_per_second, requests_per_second].
 */
export interface KeyLoad {
  /**
   * The key. A prefix read counts under its prefix, a transaction commit under its bucket, a
   * script under the bucket its request names (if none, in the partition's rate only). Cut to its
   * first 256 characters when truncated is set.
   */
  'key'?: (string);
  /**
   * Estimated requests per second; never below the true (decayed) rate.
   */
  'requestsPerSecond'?: (number | string);
  /**
   * How much requests_per_second may overestimate; at most 1/64 of the partition's rate.
   */
  'errorPerSecond'?: (number | string);
  /**
   * True when key is only the first 256 characters of a longer key.
   */
  'truncated'?: (boolean);
}

/**
 * One hot key, estimated by a space-bounded sketch (Space-Saving over decayed counts, src/hotkeys):
 * its true rate lies in [requests_per_second - error_per_second, requests_per_second].
 */
export interface KeyLoad__Output {
  /**
   * The key. A prefix read counts under its prefix, a transaction commit under its bucket, a
   * script under the bucket its request names (if none, in the partition's rate only). Cut to its
   * first 256 characters when truncated is set.
   */
  'key': (string);
  /**
   * Estimated requests per second; never below the true (decayed) rate.
   */
  'requestsPerSecond': (number);
  /**
   * How much requests_per_second may overestimate; at most 1/64 of the partition's rate.
   */
  'errorPerSecond': (number);
  /**
   * True when key is only the first 256 characters of a longer key.
   */
  'truncated': (boolean);
}
