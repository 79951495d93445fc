// Original file: proto/atoll/v1/auth.proto

import type * as grpc from '@grpc/grpc-js'
import type { MethodDefinition } from '@grpc/proto-loader'
import type { CreateTokenRequest as _atoll_v1_CreateTokenRequest, CreateTokenRequest__Output as _atoll_v1_CreateTokenRequest__Output } from '../../atoll/v1/CreateTokenRequest.js';
import type { CreateTokenResponse as _atoll_v1_CreateTokenResponse, CreateTokenResponse__Output as _atoll_v1_CreateTokenResponse__Output } from '../../atoll/v1/CreateTokenResponse.js';
import type { GetUsageRequest as _atoll_v1_GetUsageRequest, GetUsageRequest__Output as _atoll_v1_GetUsageRequest__Output } from '../../atoll/v1/GetUsageRequest.js';
import type { GetUsageResponse as _atoll_v1_GetUsageResponse, GetUsageResponse__Output as _atoll_v1_GetUsageResponse__Output } from '../../atoll/v1/GetUsageResponse.js';
import type { ListTokensRequest as _atoll_v1_ListTokensRequest, ListTokensRequest__Output as _atoll_v1_ListTokensRequest__Output } from '../../atoll/v1/ListTokensRequest.js';
import type { ListTokensResponse as _atoll_v1_ListTokensResponse, ListTokensResponse__Output as _atoll_v1_ListTokensResponse__Output } from '../../atoll/v1/ListTokensResponse.js';
import type { RevokeTokenRequest as _atoll_v1_RevokeTokenRequest, RevokeTokenRequest__Output as _atoll_v1_RevokeTokenRequest__Output } from '../../atoll/v1/RevokeTokenRequest.js';
import type { RevokeTokenResponse as _atoll_v1_RevokeTokenResponse, RevokeTokenResponse__Output as _atoll_v1_RevokeTokenResponse__Output } from '../../atoll/v1/RevokeTokenResponse.js';
import type { SetQuotaRequest as _atoll_v1_SetQuotaRequest, SetQuotaRequest__Output as _atoll_v1_SetQuotaRequest__Output } from '../../atoll/v1/SetQuotaRequest.js';
import type { SetQuotaResponse as _atoll_v1_SetQuotaResponse, SetQuotaResponse__Output as _atoll_v1_SetQuotaResponse__Output } from '../../atoll/v1/SetQuotaResponse.js';
import type { WhoAmIRequest as _atoll_v1_WhoAmIRequest, WhoAmIRequest__Output as _atoll_v1_WhoAmIRequest__Output } from '../../atoll/v1/WhoAmIRequest.js';
import type { WhoAmIResponse as _atoll_v1_WhoAmIResponse, WhoAmIResponse__Output as _atoll_v1_WhoAmIResponse__Output } from '../../atoll/v1/WhoAmIResponse.js';

export interface AuthClient extends grpc.Client {
  CreateToken(argument: _atoll_v1_CreateTokenRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_atoll_v1_CreateTokenResponse__Output>): grpc.ClientUnaryCall;
  CreateToken(argument: _atoll_v1_CreateTokenRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_atoll_v1_CreateTokenResponse__Output>): grpc.ClientUnaryCall;
  CreateToken(argument: _atoll_v1_CreateTokenRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_atoll_v1_CreateTokenResponse__Output>): grpc.ClientUnaryCall;
  CreateToken(argument: _atoll_v1_CreateTokenRequest, callback: grpc.requestCallback<_atoll_v1_CreateTokenResponse__Output>): grpc.ClientUnaryCall;
  createToken(argument: _atoll_v1_CreateTokenRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_atoll_v1_CreateTokenResponse__Output>): grpc.ClientUnaryCall;
  createToken(argument: _atoll_v1_CreateTokenRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_atoll_v1_CreateTokenResponse__Output>): grpc.ClientUnaryCall;
  createToken(argument: _atoll_v1_CreateTokenRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_atoll_v1_CreateTokenResponse__Output>): grpc.ClientUnaryCall;
  createToken(argument: _atoll_v1_CreateTokenRequest, callback: grpc.requestCallback<_atoll_v1_CreateTokenResponse__Output>): grpc.ClientUnaryCall;
  
  GetUsage(argument: _atoll_v1_GetUsageRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_atoll_v1_GetUsageResponse__Output>): grpc.ClientUnaryCall;
  GetUsage(argument: _atoll_v1_GetUsageRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_atoll_v1_GetUsageResponse__Output>): grpc.ClientUnaryCall;
  GetUsage(argument: _atoll_v1_GetUsageRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_atoll_v1_GetUsageResponse__Output>): grpc.ClientUnaryCall;
  GetUsage(argument: _atoll_v1_GetUsageRequest, callback: grpc.requestCallback<_atoll_v1_GetUsageResponse__Output>): grpc.ClientUnaryCall;
  getUsage(argument: _atoll_v1_GetUsageRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_atoll_v1_GetUsageResponse__Output>): grpc.ClientUnaryCall;
  getUsage(argument: _atoll_v1_GetUsageRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_atoll_v1_GetUsageResponse__Output>): grpc.ClientUnaryCall;
  getUsage(argument: _atoll_v1_GetUsageRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_atoll_v1_GetUsageResponse__Output>): grpc.ClientUnaryCall;
  getUsage(argument: _atoll_v1_GetUsageRequest, callback: grpc.requestCallback<_atoll_v1_GetUsageResponse__Output>): grpc.ClientUnaryCall;
  
  ListTokens(argument: _atoll_v1_ListTokensRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_atoll_v1_ListTokensResponse__Output>): grpc.ClientUnaryCall;
  ListTokens(argument: _atoll_v1_ListTokensRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_atoll_v1_ListTokensResponse__Output>): grpc.ClientUnaryCall;
  ListTokens(argument: _atoll_v1_ListTokensRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_atoll_v1_ListTokensResponse__Output>): grpc.ClientUnaryCall;
  ListTokens(argument: _atoll_v1_ListTokensRequest, callback: grpc.requestCallback<_atoll_v1_ListTokensResponse__Output>): grpc.ClientUnaryCall;
  listTokens(argument: _atoll_v1_ListTokensRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_atoll_v1_ListTokensResponse__Output>): grpc.ClientUnaryCall;
  listTokens(argument: _atoll_v1_ListTokensRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_atoll_v1_ListTokensResponse__Output>): grpc.ClientUnaryCall;
  listTokens(argument: _atoll_v1_ListTokensRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_atoll_v1_ListTokensResponse__Output>): grpc.ClientUnaryCall;
  listTokens(argument: _atoll_v1_ListTokensRequest, callback: grpc.requestCallback<_atoll_v1_ListTokensResponse__Output>): grpc.ClientUnaryCall;
  
  RevokeToken(argument: _atoll_v1_RevokeTokenRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_atoll_v1_RevokeTokenResponse__Output>): grpc.ClientUnaryCall;
  RevokeToken(argument: _atoll_v1_RevokeTokenRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_atoll_v1_RevokeTokenResponse__Output>): grpc.ClientUnaryCall;
  RevokeToken(argument: _atoll_v1_RevokeTokenRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_atoll_v1_RevokeTokenResponse__Output>): grpc.ClientUnaryCall;
  RevokeToken(argument: _atoll_v1_RevokeTokenRequest, callback: grpc.requestCallback<_atoll_v1_RevokeTokenResponse__Output>): grpc.ClientUnaryCall;
  revokeToken(argument: _atoll_v1_RevokeTokenRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_atoll_v1_RevokeTokenResponse__Output>): grpc.ClientUnaryCall;
  revokeToken(argument: _atoll_v1_RevokeTokenRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_atoll_v1_RevokeTokenResponse__Output>): grpc.ClientUnaryCall;
  revokeToken(argument: _atoll_v1_RevokeTokenRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_atoll_v1_RevokeTokenResponse__Output>): grpc.ClientUnaryCall;
  revokeToken(argument: _atoll_v1_RevokeTokenRequest, callback: grpc.requestCallback<_atoll_v1_RevokeTokenResponse__Output>): grpc.ClientUnaryCall;
  
  SetQuota(argument: _atoll_v1_SetQuotaRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_atoll_v1_SetQuotaResponse__Output>): grpc.ClientUnaryCall;
  SetQuota(argument: _atoll_v1_SetQuotaRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_atoll_v1_SetQuotaResponse__Output>): grpc.ClientUnaryCall;
  SetQuota(argument: _atoll_v1_SetQuotaRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_atoll_v1_SetQuotaResponse__Output>): grpc.ClientUnaryCall;
  SetQuota(argument: _atoll_v1_SetQuotaRequest, callback: grpc.requestCallback<_atoll_v1_SetQuotaResponse__Output>): grpc.ClientUnaryCall;
  setQuota(argument: _atoll_v1_SetQuotaRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_atoll_v1_SetQuotaResponse__Output>): grpc.ClientUnaryCall;
  setQuota(argument: _atoll_v1_SetQuotaRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_atoll_v1_SetQuotaResponse__Output>): grpc.ClientUnaryCall;
  setQuota(argument: _atoll_v1_SetQuotaRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_atoll_v1_SetQuotaResponse__Output>): grpc.ClientUnaryCall;
  setQuota(argument: _atoll_v1_SetQuotaRequest, callback: grpc.requestCallback<_atoll_v1_SetQuotaResponse__Output>): grpc.ClientUnaryCall;
  
  WhoAmI(argument: _atoll_v1_WhoAmIRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_atoll_v1_WhoAmIResponse__Output>): grpc.ClientUnaryCall;
  WhoAmI(argument: _atoll_v1_WhoAmIRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_atoll_v1_WhoAmIResponse__Output>): grpc.ClientUnaryCall;
  WhoAmI(argument: _atoll_v1_WhoAmIRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_atoll_v1_WhoAmIResponse__Output>): grpc.ClientUnaryCall;
  WhoAmI(argument: _atoll_v1_WhoAmIRequest, callback: grpc.requestCallback<_atoll_v1_WhoAmIResponse__Output>): grpc.ClientUnaryCall;
  whoAmI(argument: _atoll_v1_WhoAmIRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_atoll_v1_WhoAmIResponse__Output>): grpc.ClientUnaryCall;
  whoAmI(argument: _atoll_v1_WhoAmIRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_atoll_v1_WhoAmIResponse__Output>): grpc.ClientUnaryCall;
  whoAmI(argument: _atoll_v1_WhoAmIRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_atoll_v1_WhoAmIResponse__Output>): grpc.ClientUnaryCall;
  whoAmI(argument: _atoll_v1_WhoAmIRequest, callback: grpc.requestCallback<_atoll_v1_WhoAmIResponse__Output>): grpc.ClientUnaryCall;
  
}

export interface AuthHandlers extends grpc.UntypedServiceImplementation {
  CreateToken: grpc.handleUnaryCall<_atoll_v1_CreateTokenRequest__Output, _atoll_v1_CreateTokenResponse>;
  
  GetUsage: grpc.handleUnaryCall<_atoll_v1_GetUsageRequest__Output, _atoll_v1_GetUsageResponse>;
  
  ListTokens: grpc.handleUnaryCall<_atoll_v1_ListTokensRequest__Output, _atoll_v1_ListTokensResponse>;
  
  RevokeToken: grpc.handleUnaryCall<_atoll_v1_RevokeTokenRequest__Output, _atoll_v1_RevokeTokenResponse>;
  
  SetQuota: grpc.handleUnaryCall<_atoll_v1_SetQuotaRequest__Output, _atoll_v1_SetQuotaResponse>;
  
  WhoAmI: grpc.handleUnaryCall<_atoll_v1_WhoAmIRequest__Output, _atoll_v1_WhoAmIResponse>;
  
}

export interface AuthDefinition extends grpc.ServiceDefinition {
  CreateToken: MethodDefinition<_atoll_v1_CreateTokenRequest, _atoll_v1_CreateTokenResponse, _atoll_v1_CreateTokenRequest__Output, _atoll_v1_CreateTokenResponse__Output>
  GetUsage: MethodDefinition<_atoll_v1_GetUsageRequest, _atoll_v1_GetUsageResponse, _atoll_v1_GetUsageRequest__Output, _atoll_v1_GetUsageResponse__Output>
  ListTokens: MethodDefinition<_atoll_v1_ListTokensRequest, _atoll_v1_ListTokensResponse, _atoll_v1_ListTokensRequest__Output, _atoll_v1_ListTokensResponse__Output>
  RevokeToken: MethodDefinition<_atoll_v1_RevokeTokenRequest, _atoll_v1_RevokeTokenResponse, _atoll_v1_RevokeTokenRequest__Output, _atoll_v1_RevokeTokenResponse__Output>
  SetQuota: MethodDefinition<_atoll_v1_SetQuotaRequest, _atoll_v1_SetQuotaResponse, _atoll_v1_SetQuotaRequest__Output, _atoll_v1_SetQuotaResponse__Output>
  WhoAmI: MethodDefinition<_atoll_v1_WhoAmIRequest, _atoll_v1_WhoAmIResponse, _atoll_v1_WhoAmIRequest__Output, _atoll_v1_WhoAmIResponse__Output>
}
