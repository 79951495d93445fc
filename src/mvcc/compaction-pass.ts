/** The state of physical compaction between its bounded steps (compactor.ts), kept in MvccState. */

export interface StorageCompactionStep {
  readonly removedVersions: number;
  /** True when no physical compaction is pending any more. */
  readonly done: boolean;
  /** True when a snapshot export or import runs, so the step did nothing. */
  readonly deferred: boolean;
}

/** A physical compaction pass in progress (see compactStorageStep). */
export interface CompactionPass {
  /** The floor this pass removes below: the store's floor when it began (at or below the current one). */
  readonly floor: number;
  /** The import epoch it began in (an import discards it). */
  readonly epoch: number;
  /** The first stored version the pass has not examined; undefined: the first of the partition. */
  resumeAt: Uint8Array | undefined;
  /** The key group the previous step stopped inside. */
  group: CompactionGroup | undefined;
}

/** Per key: the newest version at or below the pass's floor seen so far, which a reader may still need. */
export interface CompactionGroup {
  readonly groupKey: Uint8Array;
  readonly userKey: Uint8Array;
  /** Decoded from userKey on the group's first removal. */
  tenant?: string;
  aboveFloor: boolean;
  newestAtFloor?: { readonly storageKey: Uint8Array; readonly revision: number; readonly isTombstone: boolean; readonly bytes: number };
}
