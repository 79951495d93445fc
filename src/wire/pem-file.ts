/**
 * Reading a PEM file named on a command line (atoll-server's TLS flags and the CLI's), so that a
 * missing or unreadable file, or one that holds no PEM block, fails with a message naming the flag
 * and the file rather than a handshake error later.
 */
import { readFileSync } from 'node:fs';
import { AtollError } from '../errors.js';

/** Reads a PEM file named by `flag`; the error (INVALID_ARGUMENT) names both. */
export function readPemFile(flag: string, path: string): Buffer {
  let contents: Buffer;
  try {
    contents = readFileSync(path);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const reason = code === 'ENOENT' ? 'no such file' : code === 'EACCES' ? 'permission denied' : (error as Error).message;
    throw new AtollError('INVALID_ARGUMENT', `${flag} ${path}: cannot read it (${reason})`);
  }
  if (!contents.includes('-----BEGIN ')) throw new AtollError('INVALID_ARGUMENT', `${flag} ${path}: not a PEM file (no "-----BEGIN" line)`);
  return contents;
}
