// Original file: proto/atoll/v1/auth.proto


export interface CreateTokenRequest {
  /**
   * The tenant the token acts for: 1-63 of a-z 0-9 _ - . Only the cluster admin may name a tenant
   * other than its own.
   */
  'tenant'?: (string);
  'role'?: (string);
  /**
   * A label for people ("billing service").
   */
  'name'?: (string);
}

export interface CreateTokenRequest__Output {
  /**
   * The tenant the token acts for: 1-63 of a-z 0-9 _ - . Only the cluster admin may name a tenant
   * other than its own.
   */
  'tenant': (string);
  'role': (string);
  /**
   * A label for people ("billing service").
   */
  'name': (string);
}
