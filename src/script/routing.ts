/**
 * Which partition runs a script. A script touches one partition only, so the first key or prefix
 * it names with a value known before it runs (a string literal, or a parameter bound to a string)
 * picks it. Keys computed at run time do not count: they are checked against the partition when
 * used (OUTSIDE_TRANSACTION).
 */
import type { Expression, Script } from './ast.js';
import type { ScriptParams } from './params.js';

export type ScriptRoutingTarget = { readonly key: string } | { readonly prefix: string };

function knownText(expression: Expression, params: ScriptParams): string | undefined {
  if (expression.kind === 'literal') return typeof expression.value === 'string' ? expression.value : undefined;
  if (expression.kind !== 'param' || !Object.hasOwn(params, expression.name)) return undefined;
  const value = params[expression.name];
  return typeof value === 'string' ? value : undefined;
}

/**
 * The first key position in source order (`get`, `set`, `exists`, `delete`, `incr` KEY, or
 * `get by prefix` P) whose operand is a string literal or an @param bound to a string; undefined
 * when there is none (the caller must then name the bucket).
 */
export function scriptRoutingTarget(script: Script, params: ScriptParams): ScriptRoutingTarget | undefined {
  for (const operand of script.keyOperands) {
    const text = knownText(operand.expression, params);
    if (text === undefined) continue;
    return operand.kind === 'key' ? { key: text } : { prefix: text };
  }
  return undefined;
}
