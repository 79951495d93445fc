// Original file: proto/atoll/v1/auth.proto


export interface WhoAmIResponse {
  'tenant'?: (string);
  'role'?: (string);
  'clusterAdmin'?: (boolean);
  'tokenId'?: (string);
}

export interface WhoAmIResponse__Output {
  'tenant': (string);
  'role': (string);
  'clusterAdmin': (boolean);
  'tokenId': (string);
}
