/**
 * The public client types, checked at compile time (vitest typechecks expectTypeOf): what each
 * method accepts and returns, that every call takes a deadline and an AbortSignal, and what the
 * package index exports.
 */
import { describe, expectTypeOf, it } from 'vitest';
import { pino } from 'pino';
import {
  AtollClient,
  AtollClientError,
  AtollError,
  bucketOf,
  keyOf,
  parseKey,
  partitionOf,
  type BucketHashName,
  type AtollErrorCode,
  type CallOptions,
  type ClientLogger,
  type ClusterInfo,
  type DeleteResult,
  type ExistsResult,
  type ExtendResult,
  type GetResult,
  type IncrementResult,
  type KeyEntry,
  type LeaderHint,
  type PrefixPage,
  type PutResult,
} from '../../src/index.js';

describe('public client types', () => {
  const client = new AtollClient({ endpoints: ['127.0.0.1:1'] });
  client.close();

  it('methods return the documented result types', () => {
    expectTypeOf(client.get).returns.resolves.toEqualTypeOf<GetResult>();
    expectTypeOf(client.put).returns.resolves.toEqualTypeOf<PutResult>();
    expectTypeOf(client.delete).returns.resolves.toEqualTypeOf<DeleteResult>();
    expectTypeOf(client.increment).returns.resolves.toEqualTypeOf<IncrementResult>();
    expectTypeOf(client.exists).returns.resolves.toEqualTypeOf<ExistsResult>();
    expectTypeOf(client.extend).returns.resolves.toEqualTypeOf<ExtendResult>();
    expectTypeOf(client.getByPrefix).returns.resolves.toEqualTypeOf<PrefixPage>();
    expectTypeOf(client.scanPrefix).returns.toEqualTypeOf<AsyncGenerator<KeyEntry, void, undefined>>();
    expectTypeOf(client.clusterInfo).returns.resolves.toEqualTypeOf<ClusterInfo>();
    expectTypeOf(client.transferLeader).returns.resolves.toBeVoid();
    expectTypeOf(client.close).returns.toBeVoid();
  });

  it('values are bytes with a text() helper; counters are bigint; revisions are numbers', () => {
    expectTypeOf<GetResult['found']>().toEqualTypeOf<boolean>();
    expectTypeOf<GetResult['value']>().toEqualTypeOf<Uint8Array>();
    expectTypeOf<GetResult['text']>().toEqualTypeOf<() => string>();
    expectTypeOf<GetResult['revision']>().toEqualTypeOf<number>();
    expectTypeOf<IncrementResult['value']>().toEqualTypeOf<bigint>();
    expectTypeOf<PutResult['previous']>().toEqualTypeOf<KeyEntry | undefined>();
  });

  it('accepts text or bytes as values, and number or bigint deltas', () => {
    expectTypeOf(client.put).parameter(1).toEqualTypeOf<string | Uint8Array>();
    expectTypeOf(client.increment).parameter(1).toEqualTypeOf<number | bigint | undefined>();
    expectTypeOf(client.put).toBeCallableWith('k', 'v', { ttlMs: 1000, ifModRevision: 3 });
    expectTypeOf(client.put).toBeCallableWith('k', new Uint8Array(1), { ifValue: 'old', returnPrevious: true });
  });

  it('every call takes a timeout, a deadline and an AbortSignal', () => {
    const options: CallOptions = { timeoutMs: 100, deadline: new Date(), signal: new AbortController().signal };
    expectTypeOf(client.get).toBeCallableWith('k', options);
    expectTypeOf(client.put).toBeCallableWith('k', 'v', options);
    expectTypeOf(client.delete).toBeCallableWith('k', options);
    expectTypeOf(client.increment).toBeCallableWith('k', 1n, options);
    expectTypeOf(client.exists).toBeCallableWith('k', options);
    expectTypeOf(client.extend).toBeCallableWith('k', 1000, options);
    expectTypeOf(client.getByPrefix).toBeCallableWith('b', options);
    expectTypeOf(client.scanPrefix).toBeCallableWith('b', options);
    expectTypeOf(client.clusterInfo).toBeCallableWith(options);
    expectTypeOf(client.transferLeader).toBeCallableWith(0, 2, options);
    expectTypeOf<CallOptions['deadline']>().toEqualTypeOf<Date | number | undefined>();
  });

  it('errors are typed AtollErrors with a stable code', () => {
    expectTypeOf<AtollClientError>().toExtend<AtollError>();
    expectTypeOf<AtollClientError['code']>().toEqualTypeOf<AtollErrorCode>();
    expectTypeOf<AtollClientError['grpcStatusCode']>().toEqualTypeOf<number>();
    expectTypeOf<AtollClientError['leaderHint']>().toEqualTypeOf<LeaderHint | undefined>();
    expectTypeOf<AtollClientError['indeterminate']>().toEqualTypeOf<boolean>();
  });

  it('a pino logger is a ClientLogger; the key codec is exported', () => {
    expectTypeOf(pino()).toExtend<ClientLogger>();
    expectTypeOf(keyOf).toEqualTypeOf<(bucket: string, ...parts: string[]) => string>();
    expectTypeOf(parseKey).returns.toEqualTypeOf<{ readonly bucket: string; readonly parts: string[] }>();
    expectTypeOf(bucketOf).toEqualTypeOf<(key: string) => string>();
    expectTypeOf(partitionOf).toEqualTypeOf<(key: string, partitionCount: number, hash?: BucketHashName) => number>();
  });
});
