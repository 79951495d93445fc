// Original file: proto/atoll/v1/auth.proto

import type { TokenInfo as _atoll_v1_TokenInfo, TokenInfo__Output as _atoll_v1_TokenInfo__Output } from '../../atoll/v1/TokenInfo.js';

export interface RevokeTokenResponse {
  'info'?: (_atoll_v1_TokenInfo | null);
}

export interface RevokeTokenResponse__Output {
  'info': (_atoll_v1_TokenInfo__Output | null);
}
