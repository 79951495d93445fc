/**
 * A small binary writer and reader for compact, deterministic encodings (log commands, snapshot
 * chunks, stored records). Integers are big-endian; byte strings and text carry a uint32 length.
 *
 * The reader checks every length against what is left, and reports malformed input as an
 * INVALID_ARGUMENT AtollError rather than an assertion: encoded bytes may come from another node
 * or another version, and bad input must never crash a node.
 */
import assert from 'node:assert/strict';
import { AtollError } from '../errors.js';

const encoder = new TextEncoder();
const decoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
/** Text up to this many UTF-16 code units is encoded straight into the writer's buffer. */
const TEXT_IN_PLACE_MAX = 4096;

/**
 * The buffer every writer starts in: most writers are made, filled and finished in one synchronous
 * run, and finish() copies out anyway, so the scratch saves them their own first buffer and its
 * DataView (two of the three allocations of a small record). The newest writer holds it: a writer
 * made while another still holds it (nested encoders, a writer kept across an await, one abandoned
 * by an encoder that threw) moves that one to a copy of its bytes first, so no writer ever sees
 * another's bytes and an abandoned writer never keeps the scratch from the others.
 */
const SCRATCH_BYTES = 64 * 1024;
const scratch = new Uint8Array(SCRATCH_BYTES);
const scratchView = new DataView(scratch.buffer);
let scratchHolder: ByteWriter | undefined;

export class ByteWriter {
  private buffer: Uint8Array;
  private view: DataView;
  private length = 0;
  /** Whether `buffer` is the shared scratch (see above); true only for scratchHolder. */
  private onScratch = false;

  constructor(initialCapacity = 256) {
    if (initialCapacity <= SCRATCH_BYTES) {
      scratchHolder?.leaveScratch();
      this.buffer = scratch;
      this.view = scratchView;
      this.onScratch = true;
      scratchHolder = this;
    } else {
      this.buffer = new Uint8Array(initialCapacity);
      this.view = new DataView(this.buffer.buffer);
    }
  }

  /**
   * Leaves the scratch for `own`, which holds the writer's bytes so far (default: a copy of them
   * with room to grow), and hands the scratch back.
   */
  private leaveScratch(own?: Uint8Array): void {
    assert(this.onScratch && scratchHolder === this, 'only the writer holding the scratch leaves it');
    const next = own ?? new Uint8Array(Math.max(256, 2 * this.length));
    if (own === undefined) next.set(this.buffer.subarray(0, this.length));
    this.onScratch = false;
    scratchHolder = undefined;
    this.buffer = next;
    this.view = new DataView(next.buffer, next.byteOffset, next.byteLength);
  }

  private reserve(extraBytes: number): void {
    const needed = this.length + extraBytes;
    if (needed <= this.buffer.length) return;
    let capacity = this.buffer.length * 2;
    while (capacity < needed) capacity *= 2;
    const grown = new Uint8Array(capacity);
    grown.set(this.buffer.subarray(0, this.length));
    if (this.onScratch) {
      this.leaveScratch(grown);
      return;
    }
    this.buffer = grown;
    this.view = new DataView(grown.buffer);
  }

  uint8(value: number): this {
    assert(Number.isInteger(value) && value >= 0 && value <= 0xff, 'uint8 out of range');
    this.reserve(1);
    this.buffer[this.length++] = value;
    return this;
  }

  uint16(value: number): this {
    assert(Number.isInteger(value) && value >= 0 && value <= 0xffff, 'uint16 out of range');
    this.reserve(2);
    this.view.setUint16(this.length, value, false);
    this.length += 2;
    return this;
  }

  uint32(value: number): this {
    assert(Number.isInteger(value) && value >= 0 && value <= 0xffff_ffff, 'uint32 out of range');
    this.reserve(4);
    this.view.setUint32(this.length, value, false);
    this.length += 4;
    return this;
  }

  /** A non-negative safe integer as a uint64 (two uint32 halves: no BigInt per field). */
  uint64(value: number): this {
    assert(Number.isSafeInteger(value) && value >= 0, 'uint64 must be a safe non-negative integer');
    this.reserve(8);
    this.view.setUint32(this.length, Math.floor(value / 0x1_0000_0000), false);
    this.view.setUint32(this.length + 4, value >>> 0, false);
    this.length += 8;
    return this;
  }

  int64(value: bigint): this {
    assert(value >= -(1n << 63n) && value < 1n << 63n, 'int64 out of range');
    this.reserve(8);
    this.view.setBigInt64(this.length, value, false);
    this.length += 8;
    return this;
  }

  /** Raw bytes with no length: the reader must know how many to take. */
  raw(bytes: Uint8Array): this {
    this.reserve(bytes.length);
    this.buffer.set(bytes, this.length);
    this.length += bytes.length;
    return this;
  }

  /** A uint32 length, then the bytes. */
  bytes(bytes: Uint8Array): this {
    return this.uint32(bytes.length).raw(bytes);
  }

  /**
   * UTF-8 text with a uint32 byte length. The caller has checked the text is well-formed. Encoded
   * in place (encodeInto) up to TEXT_IN_PLACE_MAX code units: a Uint8Array per text field was
   * most of a record's encoding cost; longer text is encoded apart, so that room for its worst
   * case (3 bytes a code unit) is never reserved.
   */
  text(text: string): this {
    if (text.length > TEXT_IN_PLACE_MAX) return this.bytes(encoder.encode(text));
    const most = text.length * 3;
    this.reserve(4 + most);
    const start = this.length + 4;
    const { written } = encoder.encodeInto(text, this.buffer.subarray(start, start + most));
    this.view.setUint32(this.length, written, false);
    this.length = start + written;
    return this;
  }

  /** The written bytes, copied into a buffer of exactly their size. */
  finish(): Uint8Array {
    const bytes = this.buffer.slice(0, this.length);
    if (this.onScratch) this.leaveScratch(bytes);
    return bytes;
  }

  /**
   * The written bytes as a view of the writer's buffer, not copied (the buffer may be a little
   * larger; copied when the writer was on the shared scratch); the writer must not be written to again.
   */
  written(): Uint8Array {
    if (this.onScratch) return this.finish();
    return this.buffer.subarray(0, this.length);
  }
}

export class ByteReader {
  private offset = 0;
  private readonly view: DataView;

  constructor(
    private readonly source: Uint8Array,
    private readonly what = 'input',
  ) {
    this.view = new DataView(source.buffer, source.byteOffset, source.byteLength);
  }

  get remaining(): number {
    return this.source.length - this.offset;
  }

  get done(): boolean {
    return this.offset === this.source.length;
  }

  malformed(reason: string): AtollError {
    return new AtollError('INVALID_ARGUMENT', `malformed ${this.what}: ${reason}`, { offset: this.offset });
  }

  private take(byteCount: number): number {
    if (byteCount > this.remaining) throw this.malformed(`needs ${byteCount} more bytes, has ${this.remaining}`);
    const start = this.offset;
    this.offset += byteCount;
    return start;
  }

  uint8(): number {
    return this.source[this.take(1)]!;
  }

  uint16(): number {
    return this.view.getUint16(this.take(2), false);
  }

  uint32(): number {
    return this.view.getUint32(this.take(4), false);
  }

  uint64(): number {
    const start = this.take(8);
    const high = this.view.getUint32(start, false);
    // 2^53 - 1 is the largest safe integer: its high half is 0x1fffff.
    if (high > 0x1f_ffff) throw this.malformed('uint64 exceeds the safe integer range');
    return high * 0x1_0000_0000 + this.view.getUint32(start + 4, false);
  }

  int64(): bigint {
    return this.view.getBigInt64(this.take(8), false);
  }

  raw(byteCount: number): Uint8Array {
    const start = this.take(byteCount);
    return this.source.slice(start, start + byteCount);
  }

  bytes(): Uint8Array {
    return this.raw(this.uint32());
  }

  text(): string {
    const length = this.uint32();
    const start = this.take(length);
    try {
      // A view, not a copy: the decoder copies what it keeps.
      return decoder.decode(this.source.subarray(start, start + length));
    } catch {
      throw this.malformed('text is not valid UTF-8');
    }
  }

  /** Throws unless every byte was consumed, so trailing garbage is never ignored. */
  finish(): void {
    if (!this.done) throw this.malformed(`${this.remaining} unexpected trailing bytes`);
  }
}
