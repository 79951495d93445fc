// Original file: proto/atoll/v1/auth.proto


export interface WhoAmIRequest {
}

export interface WhoAmIRequest__Output {
}
