// Original file: proto/atoll/v1/kv.proto


/**
 * Asks the server to stop working on an earlier request of the same stream. The server sends no
 * answer for a cancelled request.
 */
export interface StreamCancel {
}

/**
 * Asks the server to stop working on an earlier request of the same stream. The server sends no
 * answer for a cancelled request.
 */
export interface StreamCancel__Output {
}
