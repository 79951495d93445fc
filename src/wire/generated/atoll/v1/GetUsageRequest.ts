// Original file: proto/atoll/v1/auth.proto


export interface GetUsageRequest {
  /**
   * Empty: the caller's own tenant (the cluster admin: every tenant).
   */
  'tenant'?: (string);
}

export interface GetUsageRequest__Output {
  /**
   * Empty: the caller's own tenant (the cluster admin: every tenant).
   */
  'tenant': (string);
}
