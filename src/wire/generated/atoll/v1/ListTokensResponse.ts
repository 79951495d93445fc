// Original file: proto/atoll/v1/auth.proto

import type { TokenInfo as _atoll_v1_TokenInfo, TokenInfo__Output as _atoll_v1_TokenInfo__Output } from '../../atoll/v1/TokenInfo.js';

export interface ListTokensResponse {
  'tokens'?: (_atoll_v1_TokenInfo)[];
}

export interface ListTokensResponse__Output {
  'tokens': (_atoll_v1_TokenInfo__Output)[];
}
