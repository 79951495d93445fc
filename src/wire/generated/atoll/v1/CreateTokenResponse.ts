// Original file: proto/atoll/v1/auth.proto

import type { TokenInfo as _atoll_v1_TokenInfo, TokenInfo__Output as _atoll_v1_TokenInfo__Output } from '../../atoll/v1/TokenInfo.js';

export interface CreateTokenResponse {
  /**
   * The secret: shown once, never retrievable again.
   */
  'token'?: (string);
  'info'?: (_atoll_v1_TokenInfo | null);
}

export interface CreateTokenResponse__Output {
  /**
   * The secret: shown once, never retrievable again.
   */
  'token': (string);
  'info': (_atoll_v1_TokenInfo__Output | null);
}
