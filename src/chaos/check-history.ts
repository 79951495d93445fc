/**
 * Runs every checker that applies to a chaos history and condenses their verdicts for the report.
 */
import { pairOperations, type HistoryEvent } from './history.js';
import { checkCounter } from './checkers/counter.js';
import { checkLinearizableRegister } from './checkers/linearizable-register.js';
import { checkSet } from './checkers/set.js';
import { headline, type Verdict } from './checkers/verdict.js';

export interface CheckReport {
  readonly valid: boolean;
  /** One line per checker, for the run's output. */
  readonly lines: string[];
  /** The first line of each failed or undecided checker. */
  readonly problems: string[];
  readonly verdicts: Record<string, Verdict>;
}

export interface CheckOptions {
  readonly registerKeys: readonly string[];
  readonly counterKey: string;
  readonly setKey: string;
}

export function checkHistory(events: readonly HistoryEvent[], options: CheckOptions): CheckReport {
  const operations = pairOperations(events);
  const registerOps = operations.filter((op) => op.key !== undefined && options.registerKeys.includes(op.key));
  const verdicts: Record<string, Verdict> = {
    registers: checkLinearizableRegister(registerOps),
    set: checkSet(operations.filter((op) => op.key === options.setKey)),
    counter: checkCounter(operations.filter((op) => op.key === options.counterKey)),
  };
  const lines: string[] = [];
  const problems: string[] = [];
  for (const [name, verdict] of Object.entries(verdicts)) {
    const text = headline(verdict);
    lines.push(`${name}: ${verdict.valid === true ? 'valid' : verdict.valid === false ? `INVALID: ${text}` : `unknown: ${text}`}`);
    if (verdict.valid !== true) problems.push(`${name}: ${text}`);
  }
  return { valid: problems.length === 0, lines, problems, verdicts };
}
