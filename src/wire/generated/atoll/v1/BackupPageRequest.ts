// Original file: proto/atoll/v1/cluster.proto

import type { Long } from '@grpc/proto-loader';

/**
 * A page of one partition's live keys at one revision, for `atoll backup`. Sent to the partition's
 * leader (others answer NOT_LEADER with a hint). The first page (revision 0) is read after a
 * ReadIndex barrier and fixes the revision; later pages pass it and the page token back. A tenant
 * admin token reads its own tenant's keys; the cluster admin token every tenant's but the system's.
 */
export interface BackupPageRequest {
  /**
   * The partition to read.
   */
  'partition'?: (number);
  /**
   * 0 on the first page; afterwards the revision the first page answered with.
   */
  'revision'?: (number | string | Long);
  /**
   * Empty on the first page; afterwards the previous page's next_page_token.
   */
  'pageToken'?: (string);
  /**
   * At most this many keys (0: 100; at most 1000). A page also stops at about 1 MiB of keys and values.
   */
  'limit'?: (number);
}

/**
 * A page of one partition's live keys at one revision, for `atoll backup`. Sent to the partition's
 * leader (others answer NOT_LEADER with a hint). The first page (revision 0) is read after a
 * ReadIndex barrier and fixes the revision; later pages pass it and the page token back. A tenant
 * admin token reads its own tenant's keys; the cluster admin token every tenant's but the system's.
 */
export interface BackupPageRequest__Output {
  /**
   * The partition to read.
   */
  'partition': (number);
  /**
   * 0 on the first page; afterwards the revision the first page answered with.
   */
  'revision': (string);
  /**
   * Empty on the first page; afterwards the previous page's next_page_token.
   */
  'pageToken': (string);
  /**
   * At most this many keys (0: 100; at most 1000). A page also stops at about 1 MiB of keys and values.
   */
  'limit': (number);
}
