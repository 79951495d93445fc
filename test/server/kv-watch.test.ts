/**
 * KV.Watch on the wire: the codec through the service definition's own (de)serializers, and the
 * error metadata that carries a watch's revisions (COMPACTED's floor, WATCH_OVERFLOW's resume).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NodeConnection } from '../../src/client/node-connection.js';
import { startNode, type RunningNode } from './harness.js';
import { AtollError } from '../../src/errors.js';
import { atollErrorOfServiceError, serviceErrorOf } from '../../src/wire/grpc-errors.js';
import { decodeWatchRequest, decodeWatchResponse, encodeWatchRequest, encodeWatchResponse } from '../../src/wire/watch-codec.js';
import { kvServiceDefinition } from '../../src/wire/protos.js';
import type { WatchMessage } from '../../src/api/node-api.js';

const watch = kvServiceDefinition['Watch']!;

describe('KV.Watch wire', () => {
  it('round-trips requests and responses, events with reasons included', () => {
    const request = { prefix: 'services', startRevision: 41, keysOnly: true, progress: true };
    expect(decodeWatchRequest(watch.requestDeserialize(watch.requestSerialize(encodeWatchRequest(request) as never)))).toEqual(request);
    expect(decodeWatchRequest(watch.requestDeserialize(watch.requestSerialize(encodeWatchRequest({ key: 'services/a' }) as never)))).toEqual({ key: 'services/a' });
    const stale = { key: 'services/a', startRevision: 7, stale: true };
    expect(decodeWatchRequest(watch.requestDeserialize(watch.requestSerialize(encodeWatchRequest(stale) as never)))).toEqual(stale);
    const message: WatchMessage = {
      revision: 42,
      progress: false,
      events: [
        { type: 'put', key: 'services/a', revision: 42, value: new Uint8Array([1, 2]), createRevision: 40, version: 3, expiresAtMs: 1_700_000_000_000, reason: '' },
        { type: 'delete', key: 'services/b', revision: 42, value: new Uint8Array(0), createRevision: 0, version: 0, expiresAtMs: 0, reason: 'expired' },
        { type: 'delete', key: 'services/c', revision: 42, value: new Uint8Array(0), createRevision: 0, version: 0, expiresAtMs: 0, reason: 'deleted' },
      ],
    };
    const decoded = decodeWatchResponse(watch.responseDeserialize(watch.responseSerialize(encodeWatchResponse(message) as never)));
    expect({ ...decoded, events: decoded.events.map((e) => ({ ...e, value: [...e.value] })) }).toEqual({
      ...message,
      events: message.events.map((e) => ({ ...e, value: [...e.value] })),
    });
  });

  it('carries the compaction floor and the resume revision in the error metadata', () => {
    const compacted = atollErrorOfServiceError(serviceErrorOf(new AtollError('COMPACTED', 'compacted', { revision: 3, compactedRevision: 8 })));
    expect(compacted.code).toBe('COMPACTED');
    expect(compacted.details?.['compactedRevision']).toBe(8);
    const overflow = atollErrorOfServiceError(serviceErrorOf(new AtollError('WATCH_OVERFLOW', 'slow', { resumeRevision: 17 })));
    expect(overflow.code).toBe('WATCH_OVERFLOW');
    expect(overflow.details?.['resumeRevision']).toBe(17);
  });
});

describe('KV.Watch over gRPC (fake node)', () => {
  let running: RunningNode;
  let connection: NodeConnection;
  beforeAll(async () => {
    running = await startNode({ nodeId: 1, partitionCount: 4 });
    connection = new NodeConnection(running.address, { pipelining: false, maxStreamInFlight: 1 });
  });
  afterAll(async () => {
    connection.close();
    await running.stop();
  });

  it('streams a progress message then the changes, and ends a failed watch with its Atoll code', async () => {
    const abort = new AbortController();
    const seen: WatchMessage[] = [];
    const watching = (async () => {
      for await (const message of connection.watch({ prefix: 'wire', startRevision: 0, progress: true }, abort.signal)) {
        seen.push(message);
        if (seen.some((m) => m.events.length > 0)) break;
      }
    })();
    await new Promise((resolve) => setTimeout(resolve, 100));
    await running.node.put({ key: 'wire/a', value: new Uint8Array([7]) }, { deadlineMs: Date.now() + 1_000 });
    await watching;
    expect(seen[0]).toMatchObject({ progress: true, revision: 0 });
    expect(seen.at(-1)?.events.map((e) => [e.type, e.key, [...e.value]])).toEqual([['put', 'wire/a', [7]]]);

    const failed = await (async () => {
      for await (const _ of connection.watch({ prefix: '' }, undefined)) return 'a message';
      return 'no error';
    })().catch((e: unknown) => e);
    expect(failed).toBeInstanceOf(AtollError);
    expect((failed as AtollError).code).toBe('PREFIX_SPANS_BUCKETS');
  });
});
