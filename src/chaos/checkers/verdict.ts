/**
 * What every checker returns. `valid` is three-valued: true (the history satisfies the property),
 * false (it does not, and `explanation` says which operations show it) or 'unknown' (the checker
 * could not decide: a search bound was hit, or the history lacks what the check needs, such as a
 * final read; `reason` says which). Each checker adds its own details to these shapes.
 */
export type Validity = true | false | 'unknown';

export interface ValidVerdict {
  readonly valid: true;
}

export interface InvalidVerdict {
  readonly valid: false;
  /** Multi-line: the first line alone must say what went wrong (the summary shows only it). */
  readonly explanation: string;
}

export interface UnknownVerdict {
  readonly valid: 'unknown';
  readonly reason: string;
}

export type Verdict = ValidVerdict | InvalidVerdict | UnknownVerdict;

/** False beats unknown beats true: one proven violation decides, and one undecided part taints a pass. */
export function combineValidity(validities: Iterable<Validity>): Validity {
  let combined: Validity = true;
  for (const validity of validities) {
    if (validity === false) return false;
    if (validity === 'unknown') combined = 'unknown';
  }
  return combined;
}

/** The first line of a verdict's explanation or reason, for one-line summaries. */
export function headline(verdict: Verdict, maxChars = 200): string {
  const text = verdict.valid === true ? 'valid' : verdict.valid === false ? verdict.explanation : verdict.reason;
  const line = text.split('\n', 1)[0]!;
  return line.length <= maxChars ? line : `${line.slice(0, maxChars - 3)}...`;
}

/**
 * Joins anomaly messages into an explanation: the first in full, then a bounded list of the rest,
 * so a history with ten thousand lost writes still gives a readable verdict.
 */
export function explainAnomalies(messages: readonly string[], maxListed = 10): string {
  if (messages.length === 0) return '';
  const listed = messages.slice(0, maxListed);
  const more = messages.length - listed.length;
  const lines = [`${listed[0]}${messages.length > 1 ? ` (and ${messages.length - 1} more anomalies)` : ''}`, ...listed.slice(1)];
  if (more > 0) lines.push(`... ${more} more not listed`);
  return lines.join('\n');
}
