// Original file: proto/atoll/v1/auth.proto


export interface RevokeTokenRequest {
  /**
   * The token's id (TokenInfo.id).
   */
  'id'?: (string);
}

export interface RevokeTokenRequest__Output {
  /**
   * The token's id (TokenInfo.id).
   */
  'id': (string);
}
