/**
 * KV.Watch's server-streaming handler (the codec of WatchRequest / WatchResponse is
 * src/wire/watch-codec.ts). The handler gives the node a sink with the stream's backpressure (grpc-js write()
 * returns false when its buffer is full; 'drain' says it emptied) and a signal that aborts when
 * the client cancels. The call's deadline bounds only the watch's start (its linearizable read):
 * a watch runs until the client cancels it or it fails. The sink's transport (watch-transport.ts)
 * is the call's HTTP/2 stream: each message counts against the watch memory bounds until grpc-js's
 * write callback says HTTP/2 took it, and a stream that does not drain is reset.
 */
import type * as grpc from '@grpc/grpc-js';
import { AtollError } from '../errors.js';
import type { NodeApi, WatchSink } from '../api/node-api.js';
import { openUnaryCallScope } from './call-context.js';
import { serviceErrorOf, type ErrorLogger } from '../wire/grpc-errors.js';
import { throwIfWireProblem } from '../wire/wire-utf8.js';
import { decodeWatchRequest, encodeWatchResponse } from '../wire/watch-codec.js';
import { noStreamWarning, watchTransportOf } from './watch-transport.js';

/** The KV.Watch handler (server streaming). */
export function kvWatchHandler(api: NodeApi, logger: ErrorLogger): grpc.handleServerStreamingCall<unknown, unknown> {
  return (call) => {
    const scope = openUnaryCallScope(call);
    const cancelled = new AbortController();
    const onCancelled = (): void => cancelled.abort(new AtollError('UNAVAILABLE', 'the client cancelled the watch'));
    call.on('cancelled', onCancelled);
    if (call.cancelled) onCancelled();
    const sink: WatchSink = {
      transport: watchTransportOf(call, () => noStreamWarning(logger)),
      write: (message, written) => call.write(encodeWatchResponse(message), written === undefined ? undefined : () => written()),
      drained: (ms) =>
        new Promise<boolean>((resolve) => {
          const finish = (drained: boolean): void => {
            clearTimeout(timer);
            call.removeListener('drain', onDrain);
            cancelled.signal.removeEventListener('abort', onAbort);
            resolve(drained);
          };
          const onDrain = (): void => finish(true);
          const onAbort = (): void => finish(false);
          const timer = setTimeout(() => finish(false), ms);
          call.on('drain', onDrain);
          cancelled.signal.addEventListener('abort', onAbort, { once: true });
        }),
    };
    Promise.resolve()
      .then(() => {
        throwIfWireProblem(call.request);
        return api.watch(decodeWatchRequest(call.request), { ...scope.context, signal: cancelled.signal }, sink);
      })
      .then(
        () => {
          if (!call.cancelled) call.end();
        },
        (error: unknown) => {
          if (!call.cancelled) call.emit('error', serviceErrorOf(error, logger));
        },
      )
      .catch((error: unknown) => logger.error({ err: error }, 'ending a watch failed'))
      .finally(() => {
        call.removeListener('cancelled', onCancelled);
        scope.dispose();
      });
  };
}
