/**
 * etcd's Watch stream: many watches on one bidirectional call, each an Atoll watch of the
 * keyspace's bucket (a key, or the interval's scan prefix filtered exactly, key-codec.ts).
 *
 * Mapping (docs/etcd-api.md, "Watch"):
 * - etcd's start_revision is inclusive, Atoll's exclusive: start S watches after S - 1. Without
 *   one, the watch starts after the revision of a linearizable read made at its creation, so it
 *   covers every write acknowledged before the watch was created, as etcd's does.
 * - Watches are served by this node's replica of the keyspace's partition from its applied
 *   history (Atoll's stale watch): every replica applies the same log, so events come in
 *   revision order, each exactly once, and survive leader changes without a resume.
 * - A start below the keyspace's compaction floor (or below Atoll's retained history) cancels the
 *   watch with compact_revision set, after its created response, as etcd does.
 * - prev_kv is read at the event's revision - 1 (absent when that history is compacted).
 * - A progress_notify watch gets Atoll's progress messages as etcd's empty progress responses;
 *   a WatchProgressRequest answers each watch with the last revision it reported.
 */
import * as grpc from '@grpc/grpc-js';
import type { Logger } from 'pino';
import { AtollError, isAtollError } from '../errors.js';
import type { CallContext, NodeApi, WatchEvent, WatchMessage, WatchSink } from '../api/node-api.js';
import { openCallScope } from '../server/call-context.js';
import { etcdCallerOf } from './etcd-call.js';
import { etcdErrorOf } from './etcd-errors.js';
import { kvMessageOf, etcdKvOf } from './etcd-kv.js';
import { etcdLimits } from './etcd-limits.js';
import type { HeaderOf } from './etcd-keyspace.js';
import type { WatchCreateRequest, WatchRequest } from './etcd-messages.js';
import { int64Of } from './etcd-messages.js';
import { decodeKey, keyInterval, type KeyInterval } from './key-codec.js';
import { readCompactionFloor } from './keyspace-reads.js';
import { decodeStoredValue } from './stored-value.js';

/** Responses queued on one stream beyond which a watch waits for the client to read. */
const maxQueuedResponses = 256;

interface RunningWatch {
  readonly id: number;
  readonly abort: AbortController;
  /** The last revision reported to the client (events or progress). */
  reported: number;
}

class WatchStream {
  private readonly watches = new Map<number, RunningWatch>();
  private nextId = 0;
  private closed = false;

  constructor(
    private readonly api: NodeApi,
    private readonly logger: Logger,
    private readonly headerOf: HeaderOf,
    private readonly call: grpc.ServerDuplexStream<WatchRequest, object>,
  ) {}

  handle(request: WatchRequest): void {
    if (this.closed) return;
    if (request.create_request) this.create(request.create_request);
    else if (request.cancel_request) this.cancel(int64Of(request.cancel_request.watch_id));
    else if (request.progress_request) for (const watch of this.watches.values()) this.send({ header: this.headerOf(watch.reported), watch_id: watch.id });
  }

  close(): void {
    this.closed = true;
    for (const watch of this.watches.values()) watch.abort.abort();
    this.watches.clear();
  }

  private send(response: object): boolean {
    if (this.closed) return false;
    return this.call.write(response);
  }

  private cancel(id: number): void {
    const watch = this.watches.get(id);
    if (watch === undefined) return;
    this.watches.delete(id);
    watch.abort.abort();
    this.send({ header: this.headerOf(watch.reported), watch_id: id, canceled: true });
  }

  private create(request: WatchCreateRequest): void {
    const requested = int64Of(request.watch_id);
    let id = requested > 0 ? requested : this.nextId;
    if (requested <= 0) while (this.watches.has(id)) id++;
    if (this.watches.has(id) || this.watches.size >= etcdLimits.maxWatchesPerStream || request.key.length === 0) {
      const reason = request.key.length === 0 ? 'etcdserver: key is not provided' : this.watches.has(id) ? 'atoll: the watch id is in use' : `atoll: at most ${etcdLimits.maxWatchesPerStream} watches per stream`;
      this.send({ header: this.headerOf(0), watch_id: id, created: true, canceled: true, cancel_reason: reason });
      return;
    }
    if (requested <= 0) this.nextId = id + 1;
    const watch: RunningWatch = { id, abort: new AbortController(), reported: 0 };
    this.watches.set(id, watch);
    void this.run(watch, request).catch((error: unknown) => {
      if (!this.watches.has(id)) return;
      this.watches.delete(id);
      this.logger.debug({ err: error, watchId: id }, 'etcd watch ended');
      this.send({ header: this.headerOf(watch.reported), watch_id: id, canceled: true, cancel_reason: etcdErrorOf(error, this.logger).message });
    });
  }

  private async run(watch: RunningWatch, request: WatchCreateRequest): Promise<void> {
    const scope = openCallScope({ caller: etcdCallerOf(this.call) });
    const context: CallContext = { ...scope.context, deadlineMs: Date.now() + 24 * 3600_000, signal: watch.abort.signal };
    try {
      const interval = keyInterval(request.key, request.range_end);
      const start = int64Of(request.start_revision);
      const { floor, revision } = await readCompactionFloor(this.api, {}, scope.context);
      watch.reported = revision;
      this.send({ header: this.headerOf(revision), watch_id: watch.id, created: true });
      if (start > 0 && start < floor) return this.compacted(watch, floor);
      const filters = new Set(request.filters.map((filter) => (filter === 0 || filter === 'NOPUT' ? 'put' : 'delete')));
      const sink = this.sinkOf(watch, request, interval, filters, context);
      await this.api.watch(
        {
          ...(interval.single !== undefined ? { key: interval.scanPrefix } : { prefix: interval.scanPrefix }),
          startRevision: start > 0 ? start - 1 : revision,
          progress: request.progress_notify,
          stale: true,
        },
        context,
        sink,
      );
    } catch (error) {
      if (watch.abort.signal.aborted) return;
      if (isAtollError(error) && error.code === 'COMPACTED') {
        const oldest = Number(error.details?.['compactedRevision'] ?? 0);
        return this.compacted(watch, oldest);
      }
      throw error;
    } finally {
      scope.dispose();
    }
  }

  private compacted(watch: RunningWatch, compactRevision: number): void {
    this.watches.delete(watch.id);
    this.send({ header: this.headerOf(watch.reported), watch_id: watch.id, canceled: true, compact_revision: compactRevision, cancel_reason: 'etcdserver: mvcc: required revision has been compacted' });
  }

  /** Converts Atoll's watch messages into etcd responses, one at a time and in order. */
  private sinkOf(watch: RunningWatch, request: WatchCreateRequest, interval: KeyInterval, dropped: Set<string>, context: CallContext): WatchSink {
    let chain = Promise.resolve();
    let queued = 0;
    const respond = async (message: WatchMessage): Promise<void> => {
      if (message.progress) {
        watch.reported = message.revision;
        this.send({ header: this.headerOf(message.revision), watch_id: watch.id });
        return;
      }
      const events: object[] = [];
      for (const event of message.events) {
        const key = decodeKey(event.key);
        if (!interval.contains(key) || dropped.has(event.type)) continue;
        events.push(await this.eventOf(event, key, request.prev_kv, context));
      }
      watch.reported = message.revision;
      if (events.length > 0) this.send({ header: this.headerOf(message.revision), watch_id: watch.id, events });
    };
    return {
      write: (message, written) => {
        queued++;
        chain = chain
          .then(() => respond(message))
          .catch((error: unknown) => this.logger.debug({ err: error, watchId: watch.id }, 'etcd watch event dropped'))
          .finally(() => {
            queued--;
            written?.();
          });
        return queued < maxQueuedResponses;
      },
      drained: async (ms) => {
        const deadline = Date.now() + ms;
        while (queued >= maxQueuedResponses && Date.now() < deadline && !watch.abort.signal.aborted) await chain;
        return queued < maxQueuedResponses;
      },
    };
  }

  private async eventOf(event: WatchEvent, key: Uint8Array, withPrev: boolean, context: CallContext): Promise<object> {
    const stored = decodeStoredValue(event.value);
    const kv =
      event.type === 'put'
        ? { key, create_revision: event.createRevision, mod_revision: event.revision, version: event.version, value: stored.value, lease: stored.lease.toString() }
        : { key, create_revision: 0, mod_revision: event.revision, version: 0, value: new Uint8Array(0), lease: '0' };
    const result: { type: string; kv: object; prev_kv?: object } = { type: event.type === 'put' ? 'PUT' : 'DELETE', kv };
    if (withPrev && event.revision > 1) {
      try {
        const previous = await this.api.get({ key: event.key, revision: event.revision - 1, consistency: 'stale' }, { deadlineMs: Date.now() + 10_000, ...(context.authorization !== undefined && { authorization: context.authorization }) });
        if (previous.found) result.prev_kv = kvMessageOf(etcdKvOf({ key: event.key, ...previous }));
      } catch (error) {
        if (!(error instanceof AtollError) || error.code !== 'COMPACTED') throw error;
      }
    }
    return result;
  }
}

export function watchHandler(api: NodeApi, logger: Logger, headerOf: HeaderOf) {
  return (call: grpc.ServerDuplexStream<WatchRequest, object>): void => {
    const stream = new WatchStream(api, logger, headerOf, call);
    call.on('data', (request: WatchRequest) => stream.handle(request));
    call.on('end', () => {
      stream.close();
      call.end();
    });
    call.on('error', () => stream.close());
    call.on('cancelled', () => stream.close());
  };
}

