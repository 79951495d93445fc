// Original file: proto/atoll/v1/kv.proto

export const WatchEventType = {
  WATCH_PUT: 'WATCH_PUT',
  WATCH_DELETE: 'WATCH_DELETE',
} as const;

export type WatchEventType =
  | 'WATCH_PUT'
  | 0
  | 'WATCH_DELETE'
  | 1

export type WatchEventType__Output = typeof WatchEventType[keyof typeof WatchEventType]
