// Original file: proto/atoll/v1/kv.proto

import type { Long } from '@grpc/proto-loader';

export interface WatchRequest {
  /**
   * Watch exactly this key. Set key or prefix, not both.
   */
  'key'?: (string);
  /**
   * Watch every key under a bucket (`services` = every key starting `services/`) or under a prefix
   * inside one bucket (`services/au`). One watch is served by the one partition of its bucket.
   */
  'prefix'?: (string);
  /**
   * Report the changes with a revision greater than this one: to resume, pass the last revision
   * received (an event's or a progress message's). Absent: from the partition's current revision
   * (a linearizable read at the leader). Below the partition's compaction floor the watch fails with
   * OUT_OF_RANGE (COMPACTED) and the floor in the trailing metadata `atoll-compacted-revision`.
   */
  'startRevision'?: (number | string | Long);
  /**
   * Leave values out of put events.
   */
  'keysOnly'?: (boolean);
  /**
   * Send progress messages (no events; the revision the watch has caught up to): one first, naming
   * the start revision, then one whenever the watch has been idle for a while (about 2 s).
   */
  'progress'?: (boolean);
  /**
   * Served by any replica (not only the leader) from its own applied history: the same changes,
   * in revision order, each exactly once, but it may lag the leader. Without start_revision it
   * starts at that replica's applied revision.
   */
  'stale'?: (boolean);
  '_startRevision'?: "startRevision";
}

export interface WatchRequest__Output {
  /**
   * Watch exactly this key. Set key or prefix, not both.
   */
  'key': (string);
  /**
   * Watch every key under a bucket (`services` = every key starting `services/`) or under a prefix
   * inside one bucket (`services/au`). One watch is served by the one partition of its bucket.
   */
  'prefix': (string);
  /**
   * Report the changes with a revision greater than this one: to resume, pass the last revision
   * received (an event's or a progress message's). Absent: from the partition's current revision
   * (a linearizable read at the leader). Below the partition's compaction floor the watch fails with
   * OUT_OF_RANGE (COMPACTED) and the floor in the trailing metadata `atoll-compacted-revision`.
   */
  'startRevision'?: (string);
  /**
   * Leave values out of put events.
   */
  'keysOnly': (boolean);
  /**
   * Send progress messages (no events; the revision the watch has caught up to): one first, naming
   * the start revision, then one whenever the watch has been idle for a while (about 2 s).
   */
  'progress': (boolean);
  /**
   * Served by any replica (not only the leader) from its own applied history: the same changes,
   * in revision order, each exactly once, but it may lag the leader. Without start_revision it
   * starts at that replica's applied revision.
   */
  'stale': (boolean);
  '_startRevision'?: "startRevision";
}
