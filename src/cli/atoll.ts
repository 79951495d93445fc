#!/usr/bin/env node
/**
 * The `atoll` executable: runs the command line (run.ts) against the real process streams and
 * environment, and exits with its code. Try `atoll --help`.
 */
import { run } from './run.js';

process.exitCode = await run(process.argv.slice(2), {
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
  stdoutBytes: (bytes) => process.stdout.write(bytes),
  stdoutIsTty: process.stdout.isTTY === true,
  // Read only when a command is given `-`: the stream is the process's stdin, as bytes.
  stdin: () => process.stdin,
  env: process.env,
});
