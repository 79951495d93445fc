/**
 * Runs every checker on a chaos history (checkAll routes each operation to its checker) and
 * condenses their verdicts for the report. Every checker is required: a workload that recorded
 * nothing proves nothing, so its 'unknown' fails the run.
 */
import { checkAll, checkerNames } from './checkers/check-all.js';
import type { BankCheckOptions } from './checkers/bank.js';
import { headline, type Verdict } from './checkers/verdict.js';
import type { HistoryEvent } from './history.js';

export interface CheckReport {
  readonly valid: boolean;
  /** One line per checker, for the run's output. */
  readonly lines: string[];
  /** The first line of each failed or undecided checker. */
  readonly problems: string[];
  readonly verdicts: Record<string, Verdict>;
}

export interface CheckOptions {
  /** The bank's accounts and the total every snapshot must show. */
  readonly bank: BankCheckOptions;
}

export function checkHistory(events: readonly HistoryEvent[], options: CheckOptions): CheckReport {
  const { results, operationCounts } = checkAll(events, { checkers: checkerNames, bank: options.bank });
  const verdicts: Record<string, Verdict> = { ...results };
  const lines: string[] = [];
  const problems: string[] = [];
  for (const [name, verdict] of Object.entries(verdicts)) {
    const text = headline(verdict);
    const count = operationCounts[name as keyof typeof operationCounts];
    lines.push(`${name}: ${verdict.valid === true ? `valid (${count} ops)` : verdict.valid === false ? `INVALID: ${text}` : `unknown: ${text}`}`);
    if (verdict.valid !== true) problems.push(`${name}: ${text}`);
  }
  return { valid: problems.length === 0, lines, problems, verdicts };
}
