import { EntryType, type Entry } from '../raft/types.js';

/**
 * The simulator's replicated state machine: a running digest over every applied entry. Two nodes
 * that applied different entries at any index end with different digests at that index, which is
 * what the state-machine-safety checker compares. It also keeps the last applied proposal ids so a
 * snapshot carries real, checkable content.
 */
export class DigestStateMachine {
  appliedIndex = 0;
  digest = 0;

  apply(entry: Entry): number {
    this.digest = nextDigest(this.digest, entry);
    this.appliedIndex = entry.index;
    return this.digest;
  }

  snapshotData(): Uint8Array {
    return new TextEncoder().encode(JSON.stringify({ appliedIndex: this.appliedIndex, digest: this.digest }));
  }

  restore(data: Uint8Array): void {
    const parsed = JSON.parse(new TextDecoder().decode(data)) as { appliedIndex: number; digest: number };
    this.appliedIndex = parsed.appliedIndex;
    this.digest = parsed.digest;
  }
}

/** FNV-1a style mixing of (previous digest, index, term, type, data): cheap and order-sensitive. */
export function nextDigest(previous: number, entry: Entry): number {
  let hash = previous ^ 0x811c9dc5;
  hash = mix(hash, entry.index);
  hash = mix(hash, entry.term);
  hash = mix(hash, entry.type === EntryType.ConfChange ? 1 : 0);
  for (let i = 0; i < entry.data.length; i++) hash = mix(hash, entry.data[i] as number);
  return hash >>> 0;
}

export function dataHash(data: Uint8Array): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < data.length; i++) hash = mix(hash, data[i] as number);
  return (hash ^ data.length) >>> 0;
}

function mix(hash: number, value: number): number {
  let h = hash;
  h ^= value & 0xff;
  h = Math.imul(h, 0x01000193);
  h ^= (value >>> 8) & 0xffffff;
  h = Math.imul(h, 0x01000193);
  h ^= Math.floor(value / 0x1_0000_0000);
  return Math.imul(h, 0x01000193);
}
