// Original file: proto/atoll/v1/kv.proto

import type { Isolation as _atoll_v1_Isolation, Isolation__Output as _atoll_v1_Isolation__Output } from '../../atoll/v1/Isolation.js';

export interface ExecuteScriptRequest {
  /**
   * The script's source text (docs/script-language.md). Required.
   */
  'script'?: (string);
  /**
   * Values for @name placeholders, each as JSON text ("\"text\"", "42", "true", "[1,2]").
   */
  'params'?: ({[key: string]: string});
  'isolation'?: (_atoll_v1_Isolation);
  /**
   * The bucket (or a key in it) whose partition runs the script; when empty, the first key or
   * prefix the script names literally (or through a parameter) decides.
   */
  'bucket'?: (string);
  /**
   * Idempotency key: a retry with the same id returns the first committed result.
   * Timestamped ids expire as for Put (REQUEST_ID_EXPIRED; docs/api.md).
   */
  'requestId'?: (string);
  '_requestId'?: "requestId";
}

export interface ExecuteScriptRequest__Output {
  /**
   * The script's source text (docs/script-language.md). Required.
   */
  'script': (string);
  /**
   * Values for @name placeholders, each as JSON text ("\"text\"", "42", "true", "[1,2]").
   */
  'params': ({[key: string]: string});
  'isolation': (_atoll_v1_Isolation__Output);
  /**
   * The bucket (or a key in it) whose partition runs the script; when empty, the first key or
   * prefix the script names literally (or through a parameter) decides.
   */
  'bucket': (string);
  /**
   * Idempotency key: a retry with the same id returns the first committed result.
   * Timestamped ids expire as for Put (REQUEST_ID_EXPIRED; docs/api.md).
   */
  'requestId'?: (string);
  '_requestId'?: "requestId";
}
