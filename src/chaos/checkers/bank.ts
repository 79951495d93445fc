/**
 * A bank: `transfer {from, to, amount}` moves money between accounts in one transaction, and
 * `readBalances` reads every balance in one snapshot. Transfers conserve money, so every ok
 * snapshot must sum to the same total; a snapshot that does not saw part of a transfer (a torn
 * read, or a transfer applied twice or half). Unless the workload allows overdrafts, no balance
 * may be negative. All transfers and snapshots in the history form one bank.
 */
import { HistoryError, operationRef, type Operation } from '../history.js';
import { explainAnomalies, type InvalidVerdict, type UnknownVerdict, type ValidVerdict } from './verdict.js';

export interface BankCheckOptions {
  /** The sum every snapshot must show. Default: whatever the first ok snapshot shows, so snapshots must at least agree. */
  readonly total?: number;
  /** If given, every snapshot must show exactly these accounts. */
  readonly accounts?: readonly string[];
  /** Whether balances may be negative. Default false. */
  readonly allowNegative?: boolean;
}

export type BankAnomalyKind = 'wrong-total' | 'negative' | 'missing-account' | 'unknown-account';

export interface BankAnomaly {
  readonly kind: BankAnomalyKind;
  readonly read: Operation;
  readonly account?: string;
  readonly message: string;
}

export interface BankSummary {
  /** The total snapshots were held to, and whether it came from the options or the first snapshot. */
  readonly total?: number;
  readonly totalFrom: 'options' | 'first-read';
  readonly readsChecked: number;
  readonly transfersAcknowledged: number;
}

interface BankDetails {
  readonly summary: BankSummary;
}

export type BankVerdict =
  | (ValidVerdict & BankDetails)
  | (InvalidVerdict & BankDetails & { readonly anomalies: readonly BankAnomaly[] })
  | (UnknownVerdict & BankDetails);

/** Throws a HistoryError if a snapshot is not an object of finite numbers. */
export function checkBank(operations: readonly Operation[], options: BankCheckOptions = {}): BankVerdict {
  const reads = operations.filter((op) => op.f === 'readBalances' && op.status === 'ok');
  const snapshots = reads.map((read) => ({ read, balances: balancesOf(read) }));
  const total = options.total ?? (snapshots.length > 0 ? sumOf(snapshots[0]!.balances) : undefined);
  const summary: BankSummary = {
    ...(total === undefined ? {} : { total }),
    totalFrom: options.total === undefined ? 'first-read' : 'options',
    readsChecked: snapshots.length,
    transfersAcknowledged: operations.filter((op) => op.f === 'transfer' && op.status === 'ok').length,
  };
  if (total === undefined) return { valid: 'unknown', reason: 'bank: no ok snapshot read to check', summary };

  const anomalies: BankAnomaly[] = [];
  const expectedAccounts = options.accounts === undefined ? undefined : new Set(options.accounts);
  for (const { read, balances } of snapshots) {
    const where = `bank snapshot (${operationRef(read)})`;
    const sum = sumOf(balances);
    if (sum !== total) {
      const source = options.total === undefined ? `the ${total} of the first snapshot` : `the total ${total}`;
      anomalies.push({ kind: 'wrong-total', read, message: `${where} sums to ${sum}, not ${source}` });
    }
    for (const [account, balance] of balances) {
      if (balance < 0 && options.allowNegative !== true) {
        anomalies.push({ kind: 'negative', read, account, message: `${where} shows account ${JSON.stringify(account)} at ${balance}` });
      }
      if (expectedAccounts !== undefined && !expectedAccounts.has(account)) {
        anomalies.push({ kind: 'unknown-account', read, account, message: `${where} shows unknown account ${JSON.stringify(account)}` });
      }
    }
    for (const account of expectedAccounts ?? []) {
      if (!balances.has(account)) {
        anomalies.push({ kind: 'missing-account', read, account, message: `${where} lacks account ${JSON.stringify(account)}` });
      }
    }
  }
  if (anomalies.length > 0) return { valid: false, explanation: explainAnomalies(anomalies.map((a) => a.message)), anomalies, summary };
  return { valid: true, summary };
}

function balancesOf(read: Operation): Map<string, number> {
  const output = read.output;
  if (typeof output !== 'object' || output === null || Array.isArray(output)) {
    throw new HistoryError('MALFORMED_OPERATION', `op ${read.op} (readBalances): an ok snapshot must be an object of balances`);
  }
  const balances = new Map<string, number>();
  for (const [account, balance] of Object.entries(output)) {
    if (typeof balance !== 'number' || !Number.isFinite(balance)) {
      throw new HistoryError('MALFORMED_OPERATION', `op ${read.op} (readBalances): balance of ${JSON.stringify(account)} is not a number`);
    }
    balances.set(account, balance);
  }
  return balances;
}

function sumOf(balances: ReadonlyMap<string, number>): number {
  let sum = 0;
  for (const balance of balances.values()) sum += balance;
  return sum;
}
