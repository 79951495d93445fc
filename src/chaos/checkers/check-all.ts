/**
 * Runs every checker a history calls for and sums the verdicts up in one line.
 *
 * Which operations go where:
 * - counter: `increment`, and `read` of any key that has an increment (a counter key);
 * - register: `read`, `write` and `cas` of every other key;
 * - set: `add` and `readAll`;
 * - bank: `transfer` and `readBalances`.
 * By default a checker runs if the history holds any of its operations; `checkers` names the
 * ones to run instead, and a named checker with no operations answers 'unknown' (a workload that
 * recorded nothing proves nothing).
 */
import { pairOperations, type HistoryEvent, type Operation } from '../history.js';
import { checkBank, type BankCheckOptions, type BankVerdict } from './bank.js';
import { checkCounter, type CounterCheckOptions, type CounterVerdict } from './counter.js';
import { checkLinearizableRegister, type RegisterCheckOptions, type RegisterVerdict } from './linearizable-register.js';
import { checkSet, type SetCheckOptions, type SetVerdict } from './set.js';
import { combineValidity, headline, type Validity, type Verdict } from './verdict.js';

export const checkerNames = ['register', 'counter', 'set', 'bank'] as const;
export type CheckerName = (typeof checkerNames)[number];

export interface CheckAllOptions {
  /** The checkers to run; default: each one whose operations the history holds. */
  readonly checkers?: readonly CheckerName[];
  readonly register?: RegisterCheckOptions;
  readonly counter?: CounterCheckOptions;
  readonly set?: SetCheckOptions;
  readonly bank?: BankCheckOptions;
}

export interface CheckerResults {
  readonly register?: RegisterVerdict;
  readonly counter?: CounterVerdict;
  readonly set?: SetVerdict;
  readonly bank?: BankVerdict;
}

export interface CheckAllResult {
  /** False if any checker found a violation, else 'unknown' if any could not decide, else true. */
  readonly valid: Validity;
  /** The verdict of each checker that ran. */
  readonly results: CheckerResults;
  /** How many operations each checker that ran was given. */
  readonly operationCounts: Readonly<Partial<Record<CheckerName, number>>>;
  /**
   * One line, e.g. `valid: register valid (2400 ops); counter valid (600 ops)` or
   * `INVALID: register valid (2400 ops); set INVALID (lost write: add "e7" ...)`.
   */
  readonly summary: string;
}

/** Pairs the events (throwing a HistoryError if they break the recording rules) and checks them. */
export function checkAll(history: readonly HistoryEvent[], options: CheckAllOptions = {}): CheckAllResult {
  return checkAllOperations(pairOperations(history), options);
}

export function checkAllOperations(operations: readonly Operation[], options: CheckAllOptions = {}): CheckAllResult {
  const routed = route(operations);
  const selected = options.checkers ?? checkerNames.filter((name) => routed[name].length > 0);
  const results: { -readonly [K in CheckerName]?: CheckerResults[K] } = {};
  const operationCounts: Partial<Record<CheckerName, number>> = {};
  for (const name of checkerNames) {
    if (!selected.includes(name)) continue;
    const mine = routed[name];
    operationCounts[name] = mine.length;
    if (mine.length === 0) {
      assignResult(results, name, { valid: 'unknown', reason: `${name}: no operations in the history` });
      continue;
    }
    assignResult(results, name, runChecker(name, mine, options));
  }
  const verdicts = Object.values(results);
  // Nothing checked proves nothing.
  const valid = verdicts.length === 0 ? 'unknown' : combineValidity(verdicts.map((verdict) => verdict.valid));
  return { valid, results, operationCounts, summary: summarize(valid, results, operationCounts) };
}

function route(operations: readonly Operation[]): Record<CheckerName, Operation[]> {
  const counterKeys = new Set(operations.filter((op) => op.f === 'increment').map((op) => op.key ?? ''));
  const routed: Record<CheckerName, Operation[]> = { register: [], counter: [], set: [], bank: [] };
  for (const op of operations) {
    switch (op.f) {
      case 'increment':
        routed.counter.push(op);
        break;
      case 'read':
        (counterKeys.has(op.key ?? '') ? routed.counter : routed.register).push(op);
        break;
      case 'write':
      case 'cas':
        routed.register.push(op);
        break;
      case 'add':
      case 'readAll':
        routed.set.push(op);
        break;
      case 'transfer':
      case 'readBalances':
        routed.bank.push(op);
        break;
    }
  }
  return routed;
}

function runChecker(name: CheckerName, operations: readonly Operation[], options: CheckAllOptions): Verdict {
  switch (name) {
    case 'register':
      return checkLinearizableRegister(operations, options.register);
    case 'counter':
      return checkCounter(operations, options.counter);
    case 'set':
      return checkSet(operations, options.set);
    case 'bank':
      return checkBank(operations, options.bank);
  }
}

/** Each checker's own verdict type is a Verdict; this keeps the results typed per checker. */
function assignResult(results: { -readonly [K in CheckerName]?: CheckerResults[K] }, name: CheckerName, verdict: Verdict): void {
  (results as Record<CheckerName, Verdict>)[name] = verdict;
}

function summarize(valid: Validity, results: CheckerResults, operationCounts: Partial<Record<CheckerName, number>>): string {
  const label = valid === true ? 'valid' : valid === false ? 'INVALID' : 'unknown';
  const parts = checkerNames.flatMap((name) => {
    const verdict = results[name];
    if (verdict === undefined) return [];
    if (verdict.valid === true) return [`${name} valid (${operationCounts[name]} ops)`];
    return [`${name} ${verdict.valid === false ? 'INVALID' : 'unknown'} (${headline(verdict, 160)})`];
  });
  return parts.length === 0 ? 'unknown: no operations to check' : `${label}: ${parts.join('; ')}`;
}
