/**
 * One etcd call as the node sees it: who calls (an etcd `token` becomes a bearer authorization, so
 * the node derives the tenant as for any call), a deadline (the client's, or Atoll's default) and
 * the call's cancellation.
 */
import type * as grpc from '@grpc/grpc-js';
import type { Logger } from 'pino';
import type { CallContext } from '../api/node-api.js';
import { openCallScope, deadlineMsOf, type ServerCallLike } from '../server/call-context.js';
import { etcdStatusOf } from './etcd-errors.js';

/** The caller as the node sees it: an etcd `token` becomes a bearer authorization. */
export function etcdCallerOf(call: ServerCallLike): { authorization?: string; connection?: string } {
  const token = call.metadata?.get('token')[0];
  const authorization = call.metadata?.get('authorization')[0];
  let connection: string | undefined;
  try {
    connection = call.getPeer?.();
  } catch {
    connection = undefined;
  }
  const bearer = typeof token === 'string' && token !== '' ? `Bearer ${token}` : typeof authorization === 'string' ? authorization : undefined;
  return { ...(bearer !== undefined && { authorization: bearer }), ...(connection !== undefined && connection !== 'unknown' && { connection }) };
}

/** Runs one unary etcd call with a deadline (the client's, or Atoll's default) and its cancellation. */
export function etcdUnary<Request>(
  logger: Logger,
  name: string,
  handle: (request: Request, context: CallContext) => Promise<object>,
): grpc.handleUnaryCall<Request, object> {
  return (call, callback) => {
    const caller = etcdCallerOf(call);
    const scope = openCallScope({ deadlineMs: deadlineMsOf(call.getDeadline()), call, caller });
    handle(call.request, scope.context)
      .then(
        (response) => callback(null, response),
        (error: unknown) => {
          logger.debug({ err: error, rpc: name }, 'etcd call failed');
          callback(etcdStatusOf(error, logger, caller.authorization !== undefined));
        },
      )
      .finally(() => scope.dispose());
  };
}

