/**
 * The public face of the history checkers: `checkAll` for a whole history, one function per
 * property for a workload of its own, and the shared verdict shapes. All pure: they read
 * operations and return verdicts, with no I/O.
 */
export { checkAll, checkAllOperations, checkerNames } from './check-all.js';
export type { CheckAllOptions, CheckAllResult, CheckerName, CheckerResults } from './check-all.js';
export { checkBank } from './bank.js';
export type { BankAnomaly, BankAnomalyKind, BankCheckOptions, BankSummary, BankVerdict } from './bank.js';
export { checkCounter } from './counter.js';
export type { CounterAnomaly, CounterAnomalyKind, CounterCheckOptions, CounterSummary, CounterVerdict } from './counter.js';
export { checkLinearizableRegister, checkRegisterKey, defaultMaxExploredStates, registerFunctions } from './linearizable-register.js';
export type { RegisterCheckOptions, RegisterKeyResult, RegisterVerdict } from './linearizable-register.js';
export { checkSet } from './set.js';
export type { SetAnomaly, SetAnomalyKind, SetCheckOptions, SetSummary, SetVerdict } from './set.js';
export { combineValidity, headline } from './verdict.js';
export type { InvalidVerdict, UnknownVerdict, ValidVerdict, Validity, Verdict } from './verdict.js';
export { checkWatchHistory } from './watch-history.js';
export type { AcknowledgedWrite, WatchAnomaly, WatchAnomalyKind, WatchRecord, WatchSummary, WatchVerdict } from './watch-history.js';
export { checkLockHistory } from './lock-history.js';
export type { AcceptedFencedWrite, LockAnomaly, LockAnomalyKind, LockGrant, LockSummary, LockVerdict } from './lock-history.js';
