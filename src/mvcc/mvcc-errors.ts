/** The errors the MVCC store's jobs answer with that depend on its state. */
import { AtollError } from '../errors.js';
import type { Limits } from '../limits.js';
import type { TxnCommand } from './commands.js';
import type { MvccState } from './mvcc-state.js';

export function futureRevision(state: MvccState, revision: number): AtollError {
  return new AtollError('FUTURE_REVISION', `revision ${revision} is above the current revision ${state.revision}`, {
    revision,
    currentRevision: state.revision,
  });
}

export function compacted(state: MvccState, revision: number): AtollError {
  return new AtollError(
    'COMPACTED',
    `revision ${revision} has been compacted; the oldest readable revision is ${state.compactedRevision}`,
    { revision, compactedRevision: state.compactedRevision },
  );
}

export function validationTooLarge(limits: Limits, txn: TxnCommand, keyPrefix: string): AtollError {
  return new AtollError(
    'RESOURCE_EXHAUSTED',
    `a serializable commit validates at most ${limits.maxTxnPrefixKeys} keys and ${limits.maxScanVersions} versions under its read prefixes`,
    { keyPrefix, snapshotRevision: txn.snapshotRevision, maxKeys: limits.maxTxnPrefixKeys, maxVersions: limits.maxScanVersions },
  );
}

export function conflict(txn: TxnCommand, details: Record<string, unknown>): AtollError {
  return new AtollError('TXN_CONFLICT', `the transaction conflicts with a write after its snapshot revision ${txn.snapshotRevision}`, {
    snapshotRevision: txn.snapshotRevision,
    ...details,
  });
}

export function frozenError(state: MvccState): AtollError {
  const into = state.frozen?.into;
  // reason 'frozen': not merged yet, so the range keeps its own group (router.ts keeps its start).
  return new AtollError('PARTITION_MOVED', `partition ${state.partition?.id ?? '?'} is being merged into partition ${into ?? '?'}: refresh the partition table and retry`, {
    servedPartitionId: state.partition?.id, mergedInto: into, reason: 'frozen',
  });
}

export function mergedAwayError(state: MvccState): AtollError {
  return new AtollError('PARTITION_MOVED', `partition ${state.partition?.id ?? '?'} was merged into partition ${state.mergedInto ?? '?'}: refresh the partition table`, {
    servedPartitionId: state.partition?.id,
    mergedInto: state.mergedInto,
  });
}
