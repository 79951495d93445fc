// Original file: proto/atoll/v1/cluster.proto


/**
 * One key and value of ForwardStatus.metadata.
 */
export interface ForwardStatusMetadata {
  'key'?: (string);
  'value'?: (string);
}

/**
 * One key and value of ForwardStatus.metadata.
 */
export interface ForwardStatusMetadata__Output {
  'key': (string);
  'value': (string);
}
