// Original file: proto/atoll/v1/kv.proto

import type { Long } from '@grpc/proto-loader';

export interface ExecuteScriptResponse {
  /**
   * The script's return value as JSON ("null" when it returned nothing).
   */
  'resultJson'?: (string);
  /**
   * False when the script rolled back: nothing was written.
   */
  'committed'?: (boolean);
  /**
   * The revision its writes became visible at (the snapshot revision when it wrote nothing).
   */
  'revision'?: (number | string | Long);
  /**
   * How many times the leader evaluated it (it re-runs a script that lost a conflict).
   */
  'attempts'?: (number);
}

export interface ExecuteScriptResponse__Output {
  /**
   * The script's return value as JSON ("null" when it returned nothing).
   */
  'resultJson': (string);
  /**
   * False when the script rolled back: nothing was written.
   */
  'committed': (boolean);
  /**
   * The revision its writes became visible at (the snapshot revision when it wrote nothing).
   */
  'revision': (string);
  /**
   * How many times the leader evaluated it (it re-runs a script that lost a conflict).
   */
  'attempts': (number);
}
