// Original file: proto/atoll/v1/auth.proto

import type { TenantUsage as _atoll_v1_TenantUsage, TenantUsage__Output as _atoll_v1_TenantUsage__Output } from '../../atoll/v1/TenantUsage.js';

export interface GetUsageResponse {
  'tenants'?: (_atoll_v1_TenantUsage)[];
}

export interface GetUsageResponse__Output {
  'tenants': (_atoll_v1_TenantUsage__Output)[];
}
