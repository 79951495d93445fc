// Original file: proto/atoll/v1/auth.proto


export interface ListTokensRequest {
  /**
   * Only this tenant's tokens (the cluster admin may list any tenant; empty lists all it may see).
   */
  'tenant'?: (string);
}

export interface ListTokensRequest__Output {
  /**
   * Only this tenant's tokens (the cluster admin may list any tenant; empty lists all it may see).
   */
  'tenant': (string);
}
