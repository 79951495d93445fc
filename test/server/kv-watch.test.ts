/**
 * KV.Watch on the wire: the codec through the service definition's own (de)serializers, and the
 * error metadata that carries a watch's revisions (COMPACTED's floor, WATCH_OVERFLOW's resume).
 */
import { describe, expect, it } from 'vitest';
import { AtollError } from '../../src/errors.js';
import { atollErrorOfServiceError, serviceErrorOf } from '../../src/server/grpc-errors.js';
import { decodeWatchRequest, decodeWatchResponse, encodeWatchRequest, encodeWatchResponse } from '../../src/server/kv-watch.js';
import { kvServiceDefinition } from '../../src/server/protos.js';
import type { WatchMessage } from '../../src/node/api.js';

const watch = kvServiceDefinition['Watch']!;

describe('KV.Watch wire', () => {
  it('round-trips requests and responses, events with reasons included', () => {
    const request = { prefix: 'services', startRevision: 41, keysOnly: true, progress: true };
    expect(decodeWatchRequest(watch.requestDeserialize(watch.requestSerialize(encodeWatchRequest(request) as never)))).toEqual(request);
    expect(decodeWatchRequest(watch.requestDeserialize(watch.requestSerialize(encodeWatchRequest({ key: 'services/a' }) as never)))).toEqual({ key: 'services/a' });
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
