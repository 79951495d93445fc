/**
 * `atoll lock NAME [--ttl MS] [-- CMD ARGS...]`: takes the lock NAME (client.lock, docs/api.md
 * "Locks and fencing"). With a command, runs it while holding the lock, with the fencing token in
 * $ATOLL_FENCING_TOKEN and the lock key in $ATOLL_LOCK_KEY, then unlocks and exits with the
 * command's exit code (the command is sent SIGTERM and the exit code is 3 if the lock's lease is
 * lost meanwhile). Without one, prints the fencing token and holds the lock until Ctrl-C (SIGINT)
 * or SIGTERM, then unlocks.
 */
import { spawn } from 'node:child_process';
import { InvalidArgumentError, type Command } from 'commander';
import type { AtollClient, HeldLock } from '../client/index.js';
import { json } from './format.js';

type Print = (line: string) => void;
type Action = (client: AtollClient, print: Print, globals: { json?: boolean }) => Promise<number>;
type Act = (work: (...args: unknown[]) => Action) => (...args: unknown[]) => Promise<void>;

/** The exit code when the lock's lease was lost while it was held. */
export const lockLostExitCode = 3;

function positiveMs(text: string): number {
  const value = Number(text);
  if (!/^\d+$/.test(text) || !Number.isSafeInteger(value) || value < 1) throw new InvalidArgumentError('--ttl must be a positive whole number of milliseconds');
  return value;
}

/** Resolves on the first of SIGINT and SIGTERM (or `until`), removing its listeners. */
function interrupted(until: Promise<unknown>): Promise<'signal' | 'other'> {
  return new Promise((resolve) => {
    const onSignal = (): void => {
      done();
      resolve('signal');
    };
    const done = (): void => {
      process.removeListener('SIGINT', onSignal);
      process.removeListener('SIGTERM', onSignal);
    };
    process.once('SIGINT', onSignal);
    process.once('SIGTERM', onSignal);
    void until.then(() => {
      done();
      resolve('other');
    });
  });
}

function runHolding(held: HeldLock, argv: readonly string[]): Promise<number> {
  return new Promise((resolve) => {
    const child = spawn(argv[0]!, argv.slice(1), {
      stdio: 'inherit',
      env: { ...process.env, ATOLL_FENCING_TOKEN: String(held.fencingToken), ATOLL_LOCK_KEY: held.key },
    });
    let lost = false;
    void held.lost.then(() => {
      lost = true;
      child.kill('SIGTERM');
    });
    child.once('error', () => resolve(127));
    child.once('exit', (code, signal) => resolve(lost ? lockLostExitCode : (code ?? (signal !== null ? 128 : 1))));
  });
}

export function addLockCommand(program: Command, act: Act): void {
  // The command after `--` is read from the operands (lock.args), not declared as an argument,
  // so the command list of `atoll --help` keeps its column width.
  const lock = program.command('lock');
  lock
    .usage('[options] <name> [-- cmd...]')
    .description('take lock NAME; run CMD (after --) holding it, token in $ATOLL_FENCING_TOKEN; or print the token and hold until Ctrl-C')
    .argument('<name>', 'the lock name (its keys live under locks/NAME/)')
    .allowExcessArguments()
    .option('--ttl <ms>', "the lock's lease TTL: a dead holder's lock passes on within it (default 10000)", positiveMs)
    .action(
      act((name, options) => async (client, print, globals) => {
        const argv = lock.args.slice(1);
        const ttlMs = (options as { ttl?: number }).ttl;
        const held = await client.lock(name as string, ttlMs === undefined ? {} : { ttlMs });
        const line = globals.json === true ? json({ name: held.name, key: held.key, fencingToken: held.fencingToken }) : `locked ${held.name}: fencing token ${held.fencingToken}`;
        try {
          if (argv.length > 0) return await runHolding(held, argv);
          print(line);
          const how = await interrupted(held.lost);
          return how === 'signal' ? 0 : lockLostExitCode;
        } finally {
          await held.unlock().catch(() => undefined);
        }
      }),
    );
}
