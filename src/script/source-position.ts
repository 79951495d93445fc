/** Where something is in a script's source. */
export interface SourcePosition {
  /** 1-based. */
  readonly line: number;
  /** 1-based, counting Unicode code points (a character outside the BMP is one column). */
  readonly column: number;
  /** The UTF-16 index into the source, for ordering. */
  readonly offset: number;
}
