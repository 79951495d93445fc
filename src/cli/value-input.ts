/**
 * Values from outside the command line, byte for byte (issue 22): `-` for stdin, a file path, and
 * where the exact bytes go (a file with --out, stdout with --raw). Every read is bounded: a stream
 * longer than the limit is cut off and refused, never read into memory whole.
 */
import { createReadStream, writeFileSync } from 'node:fs';
import { isUtf8 } from 'node:buffer';
import { AtollError, type AtollErrorCode } from '../errors.js';

/** Where `-` reads from: the process's stdin in the executable, bytes given by a test. */
export type StdinSource = () => AsyncIterable<Uint8Array | string>;

export interface InputLimit {
  readonly maxBytes: number;
  /** The code of an input past maxBytes: VALUE_TOO_LARGE for values, INVALID_ARGUMENT otherwise. */
  readonly tooLargeCode: AtollErrorCode;
}

/** Reads a stream to its end, refusing it as soon as it holds more than limit.maxBytes. */
export async function readBounded(stream: AsyncIterable<Uint8Array | string>, limit: InputLimit, what: string): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let total = 0;
  for await (const chunk of stream) {
    const bytes = typeof chunk === 'string' ? Buffer.from(chunk) : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    total += bytes.length;
    // Leaving the loop destroys the stream: nothing past the limit is read.
    if (total > limit.maxBytes) throw new AtollError(limit.tooLargeCode, `${what} is larger than ${limit.maxBytes} bytes`);
    chunks.push(bytes);
  }
  return Buffer.concat(chunks, total);
}

/**
 * Hands out stdin at most once per command: two inputs cannot both be `-`. The source reads it
 * when asked, so a command that does not use `-` never waits on a terminal.
 */
export class InputReader {
  private stdinClaimedBy: string | undefined;

  constructor(private readonly stdin: StdinSource | undefined) {}

  /** The bytes of `path` (`-`: stdin), or an INVALID_ARGUMENT error naming `what`. */
  async read(path: string, limit: InputLimit, what: string): Promise<Buffer> {
    if (path === '-') {
      if (this.stdinClaimedBy !== undefined) throw new AtollError('INVALID_ARGUMENT', `${what} and ${this.stdinClaimedBy} cannot both read stdin (-)`);
      this.stdinClaimedBy = what;
      if (this.stdin === undefined) throw new AtollError('INVALID_ARGUMENT', `${what}: stdin is not available`);
      return readBounded(this.stdin(), limit, `${what} (stdin)`);
    }
    try {
      return await readBounded(createReadStream(path), limit, `${what} ${path}`);
    } catch (error) {
      if (error instanceof AtollError) throw error;
      throw new AtollError('INVALID_ARGUMENT', `cannot read ${what} ${path}: ${error instanceof Error ? error.message : String(error)}`);
    }
  }

  /** Like read, for inputs that must be UTF-8 text (scripts, script parameters). */
  async readText(path: string, limit: InputLimit, what: string): Promise<string> {
    const bytes = await this.read(path, limit, what);
    if (!isUtf8(bytes)) throw new AtollError('INVALID_ARGUMENT', `${what} ${path === '-' ? '(stdin)' : path} is not UTF-8 text`);
    return bytes.toString('utf8');
  }
}

/** Writes exactly `bytes` to `path`, or throws an INVALID_ARGUMENT error naming the flag. */
export function writeValueFile(path: string, bytes: Uint8Array, what: string): void {
  try {
    writeFileSync(path, bytes);
  } catch (error) {
    throw new AtollError('INVALID_ARGUMENT', `cannot write ${what} ${path}: ${error instanceof Error ? error.message : String(error)}`);
  }
}

/** Whether bytes print as they are: valid UTF-8 (the only text encoding the CLI prints). */
export function isText(bytes: Uint8Array): boolean {
  return isUtf8(bytes);
}
