/**
 * One watcher: the changes to a key or a key prefix of one partition, after a start revision, in
 * revision order, each exactly once, written to a sink (the gRPC stream) until the caller cancels.
 *
 * Positions. `cursor` is the highest revision whose matching changes have all been handed to the
 * sink (the start revision at first). Invariants of the loop:
 * - Every message carries one revision's matching changes, whole, and message revisions strictly
 *   increase; a progress message carries `cursor` itself and no events. So a client that resumes
 *   after the last revision it received (event or progress) misses nothing and sees nothing twice.
 * - A batch (from the hub's ring or from the store's retained history) covers every change in
 *   (cursor, through]; after its messages, cursor = through. Nothing else moves the cursor, so
 *   the catch-up/tail boundary is just the cursor: a revision is read from exactly one batch.
 * - The ring is used only when it holds all of (cursor, top] (hub.since); otherwise the store's
 *   history is read (bounded pages: changesSince cuts at a whole revision). The store's history
 *   above the compaction floor is complete, so a watcher behind the ring loses nothing; one below
 *   the floor fails with COMPACTED.
 * - A cursor above the local revision (a resume from a revision a newer leader reported) waits for
 *   apply to reach it; changes at or below the cursor are never sent.
 * - Backpressure: when the sink's buffer is full the watcher waits for it to drain; a sink that
 *   does not drain within stallMs is a watcher too slow to follow, cancelled with WATCH_OVERFLOW
 *   (reason slow-consumer) and the revision to resume after (the last one handed to the sink).
 * - Memory (with a budget, src/watch/watch-memory.ts): every byte the watcher holds for the client
 *   is taken from the budget before it is held. A read of history first reserves what it may
 *   return and trims the reservation to the batch; each message of the batch moves out of the
 *   reservation, and a message from the ring is taken anew; a message counts until the sink's
 *   `written` callback. Until the watcher has room for its first read or event, a take that finds
 *   its connection, tenant or node full refuses the watch at once (RESOURCE_EXHAUSTED, reason
 *   watch-memory: it is past the bound, as at admission). After that, a take that finds no room
 *   waits for it at most stallMs, then the watch ends with WATCH_OVERFLOW: reason slow-consumer
 *   when its own stream or connection is full, watch-memory when its tenant or the node is. A
 *   reservation not used is given back, also when the watch ends.
 * - Leadership is checked before every batch and every wait, and an idle watcher wakes at least
 *   every leaderCheckMs to check it: a node that stops leading ends the watch with NOT_LEADER, so
 *   the client moves to the new leader and resumes there.
 */
import { AtollError } from '../errors.js';
import type { StoredChangeAt } from '../mvcc/index.js';
import type { WatchHub } from './watch-hub.js';
import { watchChangeBytes, watchMessageBytes, watchReadReserveBytes, type WatchBudget, type WatchTransport } from './watch-memory.js';
import type { CallSignal } from '../api/call-signal.js';

export type WatchTarget = { readonly key: string } | { readonly keyPrefix: string };

export interface WatchEvent {
  readonly type: 'put' | 'delete';
  readonly key: string;
  /** The revision of the change (the key's mod revision for a put). */
  readonly revision: number;
  /** A put's value; empty for deletes and with keysOnly. */
  readonly value: Uint8Array;
  /** A put's create revision and version; 0 for deletes. */
  readonly createRevision: number;
  readonly version: number;
  /** A put's expiry (Unix ms), 0 when none or for deletes. */
  readonly expiresAtMs: number;
  /** Why a key went away: 'deleted' (a delete or transaction), 'expired' (its TTL passed) or 'lease' (its lease ended); '' for puts. */
  readonly reason: '' | 'deleted' | 'expired' | 'lease';
}

export interface WatchMessage {
  /** The revision of the events, or for a progress message the revision the watch has caught up to. */
  readonly revision: number;
  readonly events: readonly WatchEvent[];
  readonly progress: boolean;
}

export interface WatchSink {
  /**
   * Queues a message; false when the transport's buffer is full (the message is still queued).
   * `written`, when given, is called once the transport has written the message (never, when the
   * stream closed first); a sink that holds nothing may call it at once.
   */
  write(message: WatchMessage, written?: () => void): boolean;
  /** True once the buffer drained, false when it did not within `ms` (or the call ended). */
  drained(ms: number): Promise<boolean>;
  /**
   * The stream the messages go out on (a gRPC sink), for the byte accounting and the cut-off of a
   * stream that does not drain. Absent on an in-process sink, which must call `written` itself.
   */
  readonly transport?: WatchTransport;
}

/** What a watcher needs from its partition (the node's replica, or a test double). */
export interface WatchSource {
  readonly hub: WatchHub;
  /** The partition's applied revision. */
  revision(): number;
  changesSince(target: WatchTarget, after: number, bounds: { maxChanges: number; maxBytes: number }): Promise<{ changes: StoredChangeAt[]; through: number }>;
  /** Throws (NOT_LEADER) when this node no longer serves the partition's watches. */
  checkLeader(): void;
}

export interface WatcherOptions {
  readonly target: WatchTarget;
  /** Changes after this revision are sent. */
  readonly startRevision: number;
  readonly keysOnly?: boolean;
  /** Send a progress message first (the start revision) and on an idle watch every progressIntervalMs. */
  readonly progress?: boolean;
  readonly progressIntervalMs: number;
  /** An idle watcher checks leadership at least this often (default: progressIntervalMs). */
  readonly leaderCheckMs?: number;
  readonly stallMs: number;
  /** Bounds of one read of the store's history. */
  readonly readBounds: { readonly maxChanges: number; readonly maxBytes: number };
  /** The key a client sees (tenancy strips the tenant tag). */
  readonly userKey: (internalKey: string) => string;
  readonly monotonicMs: () => number;
  readonly after: (ms: number, run: () => void) => { cancel(): void };
  readonly signal: CallSignal;
  /** Takes and gives back the bytes the watcher holds (watch-memory.ts); absent: nothing is counted. */
  readonly budget?: WatchBudget;
  /**
   * Bytes already taken from the budget for the first read of history (the node reserved them at
   * admission, before its read barrier): that read moves into them instead of taking its own, and
   * what no read used is given back by the time the watcher ends.
   */
  readonly firstReadReserved?: number;
  /**
   * Waits for this watcher's turn to read history (history-turns.ts HistoryReadLine): the release
   * to call with the bytes read once the read ended, or undefined when the watch was aborted
   * meanwhile. Absent: reads at once.
   */
  readonly readTurn?: (signal: CallSignal) => Promise<((bytesRead: number) => void) | undefined>;
  /** Paces the messages of a batch with the other watchers of the node (history-turns.ts SendPacer). */
  readonly pacer?: { due(): boolean; pause(): Promise<void> };
  /** TEST ONLY (negative control hubNotToldOfInstall): trust the hub even when it is behind the store. */
  readonly unguardedHub?: boolean;
}

function matches(target: WatchTarget, key: string): boolean {
  return 'key' in target ? key === target.key : key.startsWith(target.keyPrefix);
}

const noBytes = new Uint8Array(0);

export function eventOf(change: StoredChangeAt, keysOnly: boolean, userKey: (key: string) => string): WatchEvent {
  const key = userKey(change.key);
  if (change.stored.kind === 'tombstone') {
    return { type: 'delete', key, revision: change.revision, value: noBytes, createRevision: 0, version: 0, expiresAtMs: 0, reason: change.stored.lease === true ? 'lease' : change.stored.expired === true ? 'expired' : 'deleted' };
  }
  const { createRevision, version, expiresAtMs, value } = change.stored;
  return { type: 'put', key, revision: change.revision, value: keysOnly ? noBytes : value, createRevision, version, expiresAtMs: expiresAtMs ?? 0, reason: '' };
}

/** Runs until `signal` aborts (resolves) or the watch must end (rejects with an AtollError). */
export async function runWatcher(source: WatchSource, sink: WatchSink, options: WatcherOptions): Promise<void> {
  const { target, signal, budget } = options;
  let cursor = options.startRevision;
  let lastSentMs = options.monotonicMs();
  /** The revision of the last message handed to the sink: a resume after it misses nothing. */
  let handed = options.startRevision;

  const overflow = (reason: 'slow-consumer' | 'watch-memory', why: string): AtollError =>
    new AtollError('WATCH_OVERFLOW', `${why}; resume after revision ${handed}`, { resumeRevision: handed, reason });

  /** Set once the watcher had room for a read of history or an event: from then on it waits for room. */
  let started = false;
  /** Taken for the first read of history before the watcher began (options.firstReadReserved); 0 once used or given back. */
  let preReserved = budget === undefined ? 0 : (options.firstReadReserved ?? 0);

  /** Takes `bytes` from the budget, waiting for room at most stallMs; false when the watch was aborted meanwhile. */
  const take = async (bytes: number, forEvents: boolean): Promise<boolean> => {
    if (budget === undefined || bytes <= 0) return true;
    const deadlineMs = options.monotonicMs() + options.stallMs;
    while (!budget.tryTake(bytes)) {
      if (!started && forEvents && budget.blockedAt !== 'stream') throw budget.refusal();
      const leftMs = deadlineMs - options.monotonicMs();
      if (leftMs > 0 && (await budget.room(leftMs, signal))) continue;
      if (signal.aborted) return false;
      const scope = budget.blockedAt ?? 'stream';
      throw overflow(
        scope === 'stream' || scope === 'connection' ? 'slow-consumer' : 'watch-memory',
        `the watcher found no room for ${bytes} bytes at its ${scope} for ${options.stallMs} ms (the bytes held for watch clients are bounded)`,
      );
    }
    if (forEvents) started = true;
    return true;
  };

  /** Hands one message to the sink; `reserved` is the batch reservation it moves out of (store reads). */
  const send = async (message: WatchMessage, reserved?: { bytes: number }): Promise<void> => {
    lastSentMs = options.monotonicMs();
    let written: (() => void) | undefined;
    if (budget !== undefined) {
      const bytes = watchMessageBytes(message);
      const fromReserve = Math.min(bytes, reserved?.bytes ?? 0);
      if (!(await take(bytes - fromReserve, message.events.length > 0))) return;
      if (reserved !== undefined) reserved.bytes -= fromReserve;
      written = budget.sent(bytes);
    }
    handed = message.revision;
    if (sink.write(message, written)) return;
    if (signal.aborted) return;
    if (!(await sink.drained(options.stallMs)) && !signal.aborted) {
      throw overflow('slow-consumer', `the watcher did not read its changes for ${options.stallMs} ms`);
    }
  };

  const watchLoop = async (): Promise<void> => {
    // With progress, the first message names the start: a client that asked for "now" learns
    // where it starts, so it can resume exactly even before any change arrives.
    if (options.progress === true) await send({ revision: cursor, events: [], progress: true });
    while (!signal.aborted) {
      source.checkLeader();
      const storeRevision = source.revision();
      if (storeRevision > cursor) {
        // The ring answers only when it is as new as the store (hub.top is the store's revision;
        // a hub behind it would answer a batch that ends at the cursor, and the loop would ask again
        // without ever awaiting); otherwise the store's history does.
        const fromHub = options.unguardedHub === true || source.hub.top >= storeRevision ? source.hub.since(cursor) : undefined;
        // A read of history holds its batch until the batch is sent: reserved first (see the file comment).
        const reserved = { bytes: 0 };
        try {
          let batch = fromHub;
          if (batch !== undefined && preReserved > 0) {
            // The ring serves it: the admission's reservation for a read is not needed.
            budget?.release(preReserved);
            preReserved = 0;
          }
          if (batch === undefined) {
            const reserve = budget === undefined ? 0 : watchReadReserveBytes(options.readBounds);
            if (preReserved >= reserve) {
              // The admission's reservation: the watcher had room for a read.
              started = true;
              budget?.release(preReserved - reserve);
              preReserved = 0;
            } else if (!(await take(reserve, true))) return;
            reserved.bytes = reserve;
            const release = options.readTurn === undefined ? undefined : await options.readTurn(signal);
            if (options.readTurn !== undefined && release === undefined) return;
            let bytesRead = 0;
            try {
              batch = await source.changesSince(target, cursor, options.readBounds);
              for (const change of batch.changes) bytesRead += change.key.length + (change.stored.kind === 'value' ? change.stored.value.length : 0);
            } finally {
              release?.(bytesRead);
            }
            if (budget !== undefined) {
              let batchBytes = 0;
              for (const change of batch.changes) batchBytes += watchChangeBytes(Buffer.byteLength(change.key), change.stored.kind === 'value' ? change.stored.value.length : 0);
              // One revision larger than the read's bounds comes whole: its excess is taken too.
              if (batchBytes > reserve && !(await take(batchBytes - reserve, true))) return;
              budget.release(Math.max(0, reserve - batchBytes));
              reserved.bytes = batchBytes;
            }
          }
          if (signal.aborted) return;
          if (batch.through <= cursor && options.unguardedHub !== true) {
            // Invariant: a batch read because the store is past the cursor ends past it. If one ever
            // does not, wait for the next change instead of spinning: a watcher never holds the loop.
            await source.hub.wait(options.leaderCheckMs ?? options.progressIntervalMs, options.after, signal);
            continue;
          }
          // Group the batch's matching changes by revision: one message per revision, in order.
          const fromStore = fromHub === undefined ? reserved : undefined;
          let events: WatchEvent[] = [];
          let revision = 0;
          for (const change of batch.changes) {
            if (change.revision <= cursor || change.revision > batch.through || !matches(target, change.key)) continue;
            if (change.revision !== revision && events.length > 0) {
              await send({ revision, events, progress: false }, fromStore);
              events = [];
              if (options.pacer?.due() === true) await options.pacer.pause();
              if (signal.aborted) return;
            }
            revision = change.revision;
            events.push(eventOf(change, options.keysOnly === true, options.userKey));
          }
          if (events.length > 0) await send({ revision, events, progress: false }, fromStore);
          cursor = Math.max(cursor, batch.through);
        } finally {
          budget?.release(reserved.bytes);
        }
        continue;
      }
      const idleMs = options.monotonicMs() - lastSentMs;
      if (options.progress === true && idleMs >= options.progressIntervalMs) {
        await send({ revision: cursor, events: [], progress: true });
        continue;
      }
      const untilProgressMs = options.progress === true ? Math.max(1, options.progressIntervalMs - idleMs) : options.progressIntervalMs;
      const waitMs = Math.min(untilProgressMs, options.leaderCheckMs ?? untilProgressMs);
      await source.hub.wait(waitMs, options.after, signal);
    }
  };
  try {
    await watchLoop();
  } finally {
    if (preReserved > 0) budget?.release(preReserved);
  }
}
