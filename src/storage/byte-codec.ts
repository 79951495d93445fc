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

export class ByteWriter {
  private buffer: Uint8Array;
  private view: DataView;
  private length = 0;

  constructor(initialCapacity = 256) {
    this.buffer = new Uint8Array(initialCapacity);
    this.view = new DataView(this.buffer.buffer);
  }

  get byteLength(): number {
    return this.length;
  }

  private reserve(extraBytes: number): void {
    const needed = this.length + extraBytes;
    if (needed <= this.buffer.length) return;
    let capacity = this.buffer.length * 2;
    while (capacity < needed) capacity *= 2;
    const grown = new Uint8Array(capacity);
    grown.set(this.buffer.subarray(0, this.length));
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

  /** A non-negative safe integer as a uint64. */
  uint64(value: number): this {
    assert(Number.isSafeInteger(value) && value >= 0, 'uint64 must be a safe non-negative integer');
    this.reserve(8);
    this.view.setBigUint64(this.length, BigInt(value), false);
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

  /** UTF-8 text with a uint32 byte length. The caller has checked the text is well-formed. */
  text(text: string): this {
    return this.bytes(encoder.encode(text));
  }

  /** The written bytes, copied into a buffer of exactly their size. */
  finish(): Uint8Array {
    return this.buffer.slice(0, this.length);
  }

  /**
   * The written bytes as a view of the writer's buffer, not copied (the buffer may be a little
   * larger); the writer must not be written to again.
   */
  written(): Uint8Array {
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
    const value = this.view.getBigUint64(this.take(8), false);
    if (value > BigInt(Number.MAX_SAFE_INTEGER)) throw this.malformed('uint64 exceeds the safe integer range');
    return Number(value);
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
    const bytes = this.bytes();
    try {
      return decoder.decode(bytes);
    } catch {
      throw this.malformed('text is not valid UTF-8');
    }
  }

  /** Throws unless every byte was consumed, so trailing garbage is never ignored. */
  finish(): void {
    if (!this.done) throw this.malformed(`${this.remaining} unexpected trailing bytes`);
  }
}
