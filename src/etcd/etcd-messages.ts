/**
 * The shapes of etcd's messages as @grpc/proto-loader decodes them on the etcd port (src/etcd/etcd-protos.ts:
 * field names as in the .proto, int64 as decimal strings, bytes as Buffers, enums by name) and
 * the shapes the handlers answer with (int64 may be a number or a decimal string).
 */
export type Int64 = string | number;

export interface ResponseHeader {
  readonly cluster_id: Int64;
  readonly member_id: Int64;
  readonly revision: Int64;
  readonly raft_term: Int64;
}

export interface KeyValueMessage {
  readonly key: Uint8Array;
  readonly create_revision: Int64;
  readonly mod_revision: Int64;
  readonly version: Int64;
  readonly value: Uint8Array;
  readonly lease: Int64;
}

export type SortOrder = 'NONE' | 'ASCEND' | 'DESCEND';
export type SortTarget = 'KEY' | 'VERSION' | 'CREATE' | 'MOD' | 'VALUE';

export interface RangeRequest {
  readonly key: Uint8Array;
  readonly range_end: Uint8Array;
  readonly limit: string;
  readonly revision: string;
  readonly sort_order: SortOrder | number;
  readonly sort_target: SortTarget | number;
  readonly serializable: boolean;
  readonly keys_only: boolean;
  readonly count_only: boolean;
  readonly min_mod_revision: string;
  readonly max_mod_revision: string;
  readonly min_create_revision: string;
  readonly max_create_revision: string;
}

export interface PutRequest {
  readonly key: Uint8Array;
  readonly value: Uint8Array;
  readonly lease: string;
  readonly prev_kv: boolean;
  readonly ignore_value: boolean;
  readonly ignore_lease: boolean;
}

export interface DeleteRangeRequest {
  readonly key: Uint8Array;
  readonly range_end: Uint8Array;
  readonly prev_kv: boolean;
}

export interface RequestOp {
  readonly request?: 'request_range' | 'request_put' | 'request_delete_range' | 'request_txn';
  readonly request_range?: RangeRequest | null;
  readonly request_put?: PutRequest | null;
  readonly request_delete_range?: DeleteRangeRequest | null;
  readonly request_txn?: TxnRequest | null;
}

export type CompareResult = 'EQUAL' | 'GREATER' | 'LESS' | 'NOT_EQUAL';
export type CompareTarget = 'VERSION' | 'CREATE' | 'MOD' | 'VALUE' | 'LEASE';

export interface Compare {
  readonly result: CompareResult | number;
  readonly target: CompareTarget | number;
  readonly key: Uint8Array;
  readonly range_end: Uint8Array;
  readonly target_union?: 'version' | 'create_revision' | 'mod_revision' | 'value' | 'lease';
  readonly version?: string;
  readonly create_revision?: string;
  readonly mod_revision?: string;
  readonly value?: Uint8Array;
  readonly lease?: string;
}

export interface TxnRequest {
  readonly compare: readonly Compare[];
  readonly success: readonly RequestOp[];
  readonly failure: readonly RequestOp[];
}

export interface WatchCreateRequest {
  readonly key: Uint8Array;
  readonly range_end: Uint8Array;
  readonly start_revision: string;
  readonly progress_notify: boolean;
  readonly filters: ReadonlyArray<'NOPUT' | 'NODELETE' | number>;
  readonly prev_kv: boolean;
  readonly watch_id: string;
  readonly fragment: boolean;
}

export interface WatchRequest {
  readonly request_union?: 'create_request' | 'cancel_request' | 'progress_request';
  readonly create_request?: WatchCreateRequest | null;
  readonly cancel_request?: { readonly watch_id: string } | null;
  readonly progress_request?: Record<string, never> | null;
}

/** An int64 field as a safe integer; INVALID_ARGUMENT-worthy text is the caller's to refuse. */
export function int64Of(value: Int64 | undefined): number {
  const number = Number(value ?? 0);
  return Number.isSafeInteger(number) ? number : Number.NaN;
}
