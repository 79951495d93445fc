/**
 * Runs every checker that applies to a chaos history and condenses their verdicts for the report.
 */
import { pairOperations, type HistoryEvent, type Operation } from './history.js';
import { checkLinearizableRegister } from './checkers/linearizable-register.js';
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

/**
 * Sets: the last `readAll` (after healing) must hold every acknowledged add, nothing never added,
 * and no add that definitely failed. Unknown adds may be present or not.
 */
export function checkSet(operations: readonly Operation[]): Verdict {
  const finalRead = [...operations].reverse().find((op) => op.f === 'readAll' && op.status === 'ok');
  if (!finalRead) return { valid: 'unknown', reason: 'no successful final readAll' };
  const present = new Set((finalRead.output as string[]).map(String));
  const attempted = new Map<string, Operation>();
  for (const op of operations) if (op.f === 'add') attempted.set(String(op.input), op);
  const anomalies: string[] = [];
  for (const [element, op] of attempted) {
    if (op.status === 'ok' && !present.has(element)) anomalies.push(`lost write: ${element} was acknowledged but is missing`);
    if (op.status === 'fail' && present.has(element)) anomalies.push(`failed add applied: ${element} was reported failed but is present`);
  }
  for (const element of present) if (!attempted.has(element)) anomalies.push(`phantom: ${element} was never written`);
  if (anomalies.length === 0) return { valid: true };
  return { valid: false, explanation: `${anomalies[0]} (${anomalies.length} anomalies)\n${anomalies.slice(1, 10).join('\n')}` };
}

/**
 * Counters (exactly-once increments): the final read lies between the acknowledged increments and
 * the acknowledged plus the unknown ones; more means something was applied twice.
 */
export function checkCounter(operations: readonly Operation[]): Verdict {
  const finalRead = [...operations].reverse().find((op) => op.f === 'read' && op.status === 'ok');
  if (!finalRead) return { valid: 'unknown', reason: 'no successful final read of the counter' };
  let acknowledged = 0;
  let unknown = 0;
  for (const op of operations) {
    if (op.f !== 'increment') continue;
    if (op.status === 'ok') acknowledged += Number(op.input);
    else if (op.status === 'info') unknown += Number(op.input);
  }
  const final = Number(finalRead.output);
  if (final > acknowledged + unknown) {
    return { valid: false, explanation: `double counting: final ${final} exceeds ${acknowledged} acknowledged plus ${unknown} unknown increments` };
  }
  if (final < acknowledged) return { valid: false, explanation: `lost increments: final ${final} is below the ${acknowledged} acknowledged` };
  return { valid: true };
}
