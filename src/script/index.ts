/**
 * The script language of script transactions (`ExecuteScript`, `atoll txn`): parse once, run
 * against a TxnView, commit the view's writes when the outcome says so. A pure module: no I/O,
 * no clock but the one passed in. The language is described in docs/script-language.md.
 */
export type { Script, SourcePosition } from './ast.js';
export { parseScript } from './parser.js';
export { paramsFromJson, paramsFromJsonInTurns, type ScriptParams } from './params.js';
export { scriptRoutingTarget, type ScriptRoutingTarget } from './routing.js';
export { runScript, type ScriptOutcome, type ScriptRunOptions } from './evaluator.js';
export type { ScriptTurns } from './pacing.js';
export { maxScriptNesting, ScriptEntry, scriptValueToJson, type ScriptValue } from './values.js';
