// Original file: proto/atoll/v1/kv.proto

import type { Consistency as _atoll_v1_Consistency, Consistency__Output as _atoll_v1_Consistency__Output } from '../../atoll/v1/Consistency.js';
import type { Long } from '@grpc/proto-loader';

export interface GetByPrefixRequest {
  /**
   * A bucket name ("services": every key starting "services/") or a prefix inside one bucket
   * ("services/au"). The empty prefix is refused: a scan is served by one partition.
   */
  'prefix'?: (string);
  /**
   * Read at this past revision (absent or 0: the latest).
   */
  'revision'?: (number | string | Long);
  /**
   * At most this many keys per page (default 100, at most 1000).
   */
  'limit'?: (number);
  /**
   * The next_page_token of the previous page; pages after the first continue at that page's
   * revision, so a multi-page scan sees one consistent snapshot.
   */
  'pageToken'?: (string);
  /**
   * LINEARIZABLE (default) or STALE.
   */
  'consistency'?: (_atoll_v1_Consistency);
  /**
   * Read inside this transaction (BeginTransaction's handle): at its snapshot revision and clock,
   * which revision and consistency must then leave unset. A key outside the transaction's partition
   * fails with FAILED_PRECONDITION (OUTSIDE_TRANSACTION).
   */
  'transaction'?: (string);
  '_revision'?: "revision";
  '_limit'?: "limit";
}

export interface GetByPrefixRequest__Output {
  /**
   * A bucket name ("services": every key starting "services/") or a prefix inside one bucket
   * ("services/au"). The empty prefix is refused: a scan is served by one partition.
   */
  'prefix': (string);
  /**
   * Read at this past revision (absent or 0: the latest).
   */
  'revision'?: (string);
  /**
   * At most this many keys per page (default 100, at most 1000).
   */
  'limit'?: (number);
  /**
   * The next_page_token of the previous page; pages after the first continue at that page's
   * revision, so a multi-page scan sees one consistent snapshot.
   */
  'pageToken': (string);
  /**
   * LINEARIZABLE (default) or STALE.
   */
  'consistency': (_atoll_v1_Consistency__Output);
  /**
   * Read inside this transaction (BeginTransaction's handle): at its snapshot revision and clock,
   * which revision and consistency must then leave unset. A key outside the transaction's partition
   * fails with FAILED_PRECONDITION (OUTSIDE_TRANSACTION).
   */
  'transaction': (string);
  '_revision'?: "revision";
  '_limit'?: "limit";
}
