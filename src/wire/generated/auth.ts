import type * as grpc from '@grpc/grpc-js';
import type { MessageTypeDefinition } from '@grpc/proto-loader';

import type { AuthClient as _atoll_v1_AuthClient, AuthDefinition as _atoll_v1_AuthDefinition } from './atoll/v1/Auth.js';
import type { CreateTokenRequest as _atoll_v1_CreateTokenRequest, CreateTokenRequest__Output as _atoll_v1_CreateTokenRequest__Output } from './atoll/v1/CreateTokenRequest.js';
import type { CreateTokenResponse as _atoll_v1_CreateTokenResponse, CreateTokenResponse__Output as _atoll_v1_CreateTokenResponse__Output } from './atoll/v1/CreateTokenResponse.js';
import type { GetUsageRequest as _atoll_v1_GetUsageRequest, GetUsageRequest__Output as _atoll_v1_GetUsageRequest__Output } from './atoll/v1/GetUsageRequest.js';
import type { GetUsageResponse as _atoll_v1_GetUsageResponse, GetUsageResponse__Output as _atoll_v1_GetUsageResponse__Output } from './atoll/v1/GetUsageResponse.js';
import type { ListTokensRequest as _atoll_v1_ListTokensRequest, ListTokensRequest__Output as _atoll_v1_ListTokensRequest__Output } from './atoll/v1/ListTokensRequest.js';
import type { ListTokensResponse as _atoll_v1_ListTokensResponse, ListTokensResponse__Output as _atoll_v1_ListTokensResponse__Output } from './atoll/v1/ListTokensResponse.js';
import type { Quota as _atoll_v1_Quota, Quota__Output as _atoll_v1_Quota__Output } from './atoll/v1/Quota.js';
import type { RevokeTokenRequest as _atoll_v1_RevokeTokenRequest, RevokeTokenRequest__Output as _atoll_v1_RevokeTokenRequest__Output } from './atoll/v1/RevokeTokenRequest.js';
import type { RevokeTokenResponse as _atoll_v1_RevokeTokenResponse, RevokeTokenResponse__Output as _atoll_v1_RevokeTokenResponse__Output } from './atoll/v1/RevokeTokenResponse.js';
import type { SetQuotaRequest as _atoll_v1_SetQuotaRequest, SetQuotaRequest__Output as _atoll_v1_SetQuotaRequest__Output } from './atoll/v1/SetQuotaRequest.js';
import type { SetQuotaResponse as _atoll_v1_SetQuotaResponse, SetQuotaResponse__Output as _atoll_v1_SetQuotaResponse__Output } from './atoll/v1/SetQuotaResponse.js';
import type { TenantUsage as _atoll_v1_TenantUsage, TenantUsage__Output as _atoll_v1_TenantUsage__Output } from './atoll/v1/TenantUsage.js';
import type { TokenInfo as _atoll_v1_TokenInfo, TokenInfo__Output as _atoll_v1_TokenInfo__Output } from './atoll/v1/TokenInfo.js';
import type { WhoAmIRequest as _atoll_v1_WhoAmIRequest, WhoAmIRequest__Output as _atoll_v1_WhoAmIRequest__Output } from './atoll/v1/WhoAmIRequest.js';
import type { WhoAmIResponse as _atoll_v1_WhoAmIResponse, WhoAmIResponse__Output as _atoll_v1_WhoAmIResponse__Output } from './atoll/v1/WhoAmIResponse.js';

type SubtypeConstructor<Constructor extends new (...args: any) => any, Subtype> = {
  new(...args: ConstructorParameters<Constructor>): Subtype;
};

export interface ProtoGrpcType {
  atoll: {
    v1: {
      Auth: SubtypeConstructor<typeof grpc.Client, _atoll_v1_AuthClient> & { service: _atoll_v1_AuthDefinition }
      CreateTokenRequest: MessageTypeDefinition<_atoll_v1_CreateTokenRequest, _atoll_v1_CreateTokenRequest__Output>
      CreateTokenResponse: MessageTypeDefinition<_atoll_v1_CreateTokenResponse, _atoll_v1_CreateTokenResponse__Output>
      GetUsageRequest: MessageTypeDefinition<_atoll_v1_GetUsageRequest, _atoll_v1_GetUsageRequest__Output>
      GetUsageResponse: MessageTypeDefinition<_atoll_v1_GetUsageResponse, _atoll_v1_GetUsageResponse__Output>
      ListTokensRequest: MessageTypeDefinition<_atoll_v1_ListTokensRequest, _atoll_v1_ListTokensRequest__Output>
      ListTokensResponse: MessageTypeDefinition<_atoll_v1_ListTokensResponse, _atoll_v1_ListTokensResponse__Output>
      Quota: MessageTypeDefinition<_atoll_v1_Quota, _atoll_v1_Quota__Output>
      RevokeTokenRequest: MessageTypeDefinition<_atoll_v1_RevokeTokenRequest, _atoll_v1_RevokeTokenRequest__Output>
      RevokeTokenResponse: MessageTypeDefinition<_atoll_v1_RevokeTokenResponse, _atoll_v1_RevokeTokenResponse__Output>
      SetQuotaRequest: MessageTypeDefinition<_atoll_v1_SetQuotaRequest, _atoll_v1_SetQuotaRequest__Output>
      SetQuotaResponse: MessageTypeDefinition<_atoll_v1_SetQuotaResponse, _atoll_v1_SetQuotaResponse__Output>
      TenantUsage: MessageTypeDefinition<_atoll_v1_TenantUsage, _atoll_v1_TenantUsage__Output>
      TokenInfo: MessageTypeDefinition<_atoll_v1_TokenInfo, _atoll_v1_TokenInfo__Output>
      WhoAmIRequest: MessageTypeDefinition<_atoll_v1_WhoAmIRequest, _atoll_v1_WhoAmIRequest__Output>
      WhoAmIResponse: MessageTypeDefinition<_atoll_v1_WhoAmIResponse, _atoll_v1_WhoAmIResponse__Output>
    }
  }
}

