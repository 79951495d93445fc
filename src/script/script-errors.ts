/**
 * Errors with a source position. Every parse and runtime error of a script names the line and
 * column it happened at, in the message (`line 3, column 7: ...`) and in the details
 * (`{ line, column }`), so a person and a program can both find it. Errors raised by the view
 * (OUTSIDE_TRANSACTION, NOT_INTEGER, RESOURCE_EXHAUSTED, ...) keep their code: they are re-raised
 * with the position of the script operation that caused them.
 */
import { AtollError, type AtollErrorCode } from '../errors.js';
import type { SourcePosition } from './source-position.js';

/** Errors that already carry a position: the innermost node that saw the error placed it. */
const positioned = new WeakSet<AtollError>();

function positionedError(code: AtollErrorCode, message: string, position: SourcePosition, details: Record<string, unknown> = {}): AtollError {
  const error = new AtollError(code, `line ${position.line}, column ${position.column}: ${message}`, {
    ...details,
    line: position.line,
    column: position.column,
  });
  positioned.add(error);
  return error;
}

export function parseError(message: string, position: SourcePosition): AtollError {
  return positionedError('SCRIPT_PARSE_ERROR', message, position);
}

export function scriptError(message: string, position: SourcePosition, details?: Record<string, unknown>): AtollError {
  return positionedError('SCRIPT_ERROR', message, position, details);
}

export function limitError(message: string, position: SourcePosition, details?: Record<string, unknown>): AtollError {
  return positionedError('SCRIPT_LIMIT', message, position, details);
}

/** A runtime type error raised where no position is known yet; the evaluator adds it. */
export function valueError(message: string): AtollError {
  return new AtollError('SCRIPT_ERROR', message);
}

/** A limit error raised where no position is known yet; the evaluator adds it. */
export function valueLimitError(message: string, details?: Record<string, unknown>): AtollError {
  return new AtollError('SCRIPT_LIMIT', message, details);
}

/**
 * The same error with `position` added, unless it already has one. Anything that is not an
 * AtollError is a bug, not an operating error, and passes through untouched.
 */
export function withPosition(error: unknown, position: SourcePosition): unknown {
  if (!(error instanceof AtollError) || positioned.has(error)) return error;
  return positionedError(error.code, error.message, position, error.details);
}
