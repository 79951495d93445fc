// Original file: proto/atoll/v1/auth.proto


export interface SetQuotaResponse {
}

export interface SetQuotaResponse__Output {
}
