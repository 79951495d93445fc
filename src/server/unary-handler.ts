/**
 * The shape every unary handler shares: open a call scope (deadline, cancellation), run the work,
 * answer with the response or the mapped error, release the scope. Errors thrown synchronously by
 * a decoder are caught too, so no request can throw out of a handler and crash the process.
 * A request whose wire bytes failed the check of src/wire/wire-utf8.ts (a string field that is not UTF-8,
 * a malformed message) is answered with that error before `handle` sees it.
 */
import type * as grpc from '@grpc/grpc-js';
import { deadlineMsOf, openCallScope, type CallScope } from './call-context.js';
import { serviceErrorOf, type ErrorLogger } from '../wire/grpc-errors.js';
import { throwIfWireProblem } from '../wire/wire-utf8.js';
import { requestTurn } from './request-turns.js';

export function unaryHandler<Response>(
  logger: ErrorLogger,
  handle: (request: unknown, scope: CallScope) => Promise<Response>,
): grpc.handleUnaryCall<unknown, Response> {
  return (call, callback) => {
    const scope = openCallScope({ deadlineMs: deadlineMsOf(call.getDeadline()), call });
    (requestTurn() ?? Promise.resolve())
      .then(() => {
        throwIfWireProblem(call.request);
        return handle(call.request, scope);
      })
      .then(
        (response) => callback(null, response),
        (error: unknown) => callback(serviceErrorOf(error, logger)),
      )
      .catch((error: unknown) => logger.error({ err: error }, 'answering a unary call failed'))
      .finally(() => scope.dispose());
  };
}
