// Original file: proto/atoll/v1/auth.proto

import type { Quota as _atoll_v1_Quota, Quota__Output as _atoll_v1_Quota__Output } from '../../atoll/v1/Quota.js';

export interface SetQuotaRequest {
  'tenant'?: (string);
  'quota'?: (_atoll_v1_Quota | null);
}

export interface SetQuotaRequest__Output {
  'tenant': (string);
  'quota': (_atoll_v1_Quota__Output | null);
}
