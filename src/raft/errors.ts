/** Typed, expected outcomes of the Raft core; anything else the core throws is a programming error. */

export type RaftErrorCode =
  /** Storage: the requested index is below the first retained index (compacted into a snapshot). */
  | 'COMPACTED'
  /** Storage: the requested index is above the last index. */
  | 'UNAVAILABLE'
  /** Storage: a snapshot is being prepared; the leader retries later. */
  | 'SNAPSHOT_TEMPORARILY_UNAVAILABLE'
  /** A proposal, conf change or read could not be accepted here (not leader, transferring, full). */
  | 'PROPOSAL_DROPPED';

export class RaftError extends Error {
  readonly code: RaftErrorCode;

  constructor(code: RaftErrorCode, message: string) {
    super(message);
    this.name = 'RaftError';
    this.code = code;
  }
}

export function isRaftError(error: unknown, code?: RaftErrorCode): error is RaftError {
  return error instanceof RaftError && (code === undefined || error.code === code);
}
