export { RawNode, type Ready, type RaftStatus } from './rawnode.js';
export { RAFT_DEFAULTS, type RaftConfig, type RaftBugs } from './config.js';
export { RaftError, isRaftError, type RaftErrorCode } from './errors.js';
export { MemoryLogStorage, type LogStorage } from './storage.js';
export { Rng } from './rng.js';
export * from './types.js';
