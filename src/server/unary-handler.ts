/**
 * The shape every unary handler shares: open a call scope (deadline, cancellation), run the work,
 * answer with the response or the mapped error, release the scope. Errors thrown synchronously by
 * a decoder are caught too, so no request can throw out of a handler and crash the process.
 */
import type * as grpc from '@grpc/grpc-js';
import { openUnaryCallScope, type CallScope } from './call-context.js';
import { serviceErrorOf, type ErrorLogger } from './grpc-errors.js';

export function unaryHandler<Response>(
  logger: ErrorLogger,
  handle: (request: unknown, scope: CallScope) => Promise<Response>,
): grpc.handleUnaryCall<unknown, Response> {
  return (call, callback) => {
    const scope = openUnaryCallScope(call);
    Promise.resolve()
      .then(() => handle(call.request, scope))
      .then(
        (response) => callback(null, response),
        (error: unknown) => callback(serviceErrorOf(error, logger)),
      )
      .catch((error: unknown) => logger.error({ err: error }, 'answering a unary call failed'))
      .finally(() => scope.dispose());
  };
}
