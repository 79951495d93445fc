/**
 * The `atoll` command line, as a function: `run(argv, io)` parses the arguments, talks to the
 * cluster and returns the exit code, so tests drive it without spawning processes.
 *
 * Exit codes: 0 success; 1 the answer was negative (get/del/extend of a missing key, exists of a
 * missing key, a conditional put whose condition did not hold, a script that rolled back); 2 an error, printed on stderr as
 * `error CODE: message` (usage errors too: `error INVALID_ARGUMENT: ` and commander's message).
 *
 * Values are bytes: `put KEY -` and `--file PATH` read them byte for byte, `get --out PATH` and
 * `get --raw` write them so, and `--json` shows a value that is not UTF-8 text in base64
 * (`"valueEncoding": "base64"`).
 */
import { closeSync, openSync, readSync } from 'node:fs';
import { addAuthCommands } from './auth.js';
import { addLeaseCommands } from './lease.js';
import { addLockCommand } from './lock.js';
import { Command, CommanderError, InvalidArgumentError, Option } from 'commander';
import { AtollClient, type AtollClientOptions, type PutOptions } from '../client/index.js';
import { AtollError } from '../errors.js';
import { limits } from '../limits.js';
import { addMembershipCommands, rebalancerText } from './membership.js';
import { mergeWithLeaderTransfer } from './cluster-merge.js';
import { clusterStatusJson, clusterStatusText, entryJson, getJson, json, jsonInteger, valueJson } from './format.js';
import { InputReader, isText, writeValueFile, type InputLimit, type StdinSource } from './value-input.js';
import { addTlsOptions, clientTlsOf, type TlsFlags } from './tls-flags.js';
import { addBenchCommand } from '../bench/bench-command.js';
import { addBackupCommands } from './backup.js';
import { addHealthCommand } from './health.js';
import { addTopCommand } from './top.js';

export interface CliIo {
  /** Receives whole lines, each ending in "\n". */
  stdout(text: string): void;
  stderr(text: string): void;
  /** Receives exact bytes (`get --raw`); without it they go to stdout(text) decoded as UTF-8. */
  stdoutBytes?(bytes: Uint8Array): void;
  /** Whether stdout is a terminal, where `get --raw` refuses bytes that are not text. */
  readonly stdoutIsTty?: boolean;
  /** Where `-` reads from (`put KEY -`, `--file -`); without it `-` is refused. */
  readonly stdin?: StdinSource;
  readonly env: Readonly<Record<string, string | undefined>>;
  /** Builds the client (tests may wrap it); defaults to `new AtollClient(options)`. */
  createClient?: (options: AtollClientOptions) => AtollClient;
}

export const exitCodes = Object.freeze({ ok: 0, negative: 1, error: 2 });

export const defaultEndpoints = '127.0.0.1:7001,127.0.0.1:7002,127.0.0.1:7003';

interface GlobalOptions {
  token?: string;
  tokenFile?: string;
  endpoints?: string;
  json?: boolean;
  timeout?: number;
}

/** What one command does with a client: print through `out`, return the exit code. */
type Action = (client: AtollClient, out: (line: string) => void, globals: GlobalOptions) => Promise<number>;

function parseCount(name: string, minimum: number) {
  return (text: string): number => {
    const value = Number(text);
    if (!/^\d+$/.test(text) || !Number.isSafeInteger(value) || value < minimum) {
      throw new InvalidArgumentError(`${name} must be an integer >= ${minimum}`);
    }
    return value;
  };
}

/** A value read from stdin or a file: at most the value limit, byte for byte. */
const valueInput: InputLimit = { maxBytes: limits.maxValueBytes, tooLargeCode: 'VALUE_TOO_LARGE' };
/** A script (-f) or a script parameter from a file (--param-file): UTF-8 text. */
const scriptInput: InputLimit = { maxBytes: limits.maxScriptBytes, tooLargeCode: 'INVALID_ARGUMENT' };
const paramInput: InputLimit = { maxBytes: limits.maxValueBytes, tooLargeCode: 'INVALID_ARGUMENT' };
/** How long `atoll cluster move-replica` waits by default: a move copies a whole partition. */
const MOVE_TIMEOUT_MS = 120_000;

/** Commander's usage errors ("error: unknown option '--x'") in the CLI's `error CODE: message` form. */
export function usageErrorLine(text: string): string {
  return text.replace(/^error: /, 'error INVALID_ARGUMENT: ');
}

function parseDelta(text: string): bigint {
  if (!/^-?\d{1,20}$/.test(text)) throw new InvalidArgumentError('DELTA must be an integer');
  return BigInt(text);
}

/** A token file holds one token; anything longer is not one (and is not read into memory whole). */
const maxTokenFileBytes = 4096;

/** At most maxTokenFileBytes + 1 bytes of the file: enough to tell that it is too large. */
function readTokenBytes(path: string): Buffer {
  const descriptor = openSync(path, 'r');
  try {
    const buffer = Buffer.alloc(maxTokenFileBytes + 1);
    let length = 0;
    // Bounded by the buffer: each read adds at least one byte or ends the loop.
    while (length < buffer.length) {
      const read = readSync(descriptor, buffer, length, buffer.length - length, null);
      if (read === 0) break;
      length += read;
    }
    return buffer.subarray(0, length);
  } finally {
    closeSync(descriptor);
  }
}

function readTokenFile(path: string, source: string): string {
  let text: string;
  try {
    const bytes = readTokenBytes(path);
    if (bytes.length > maxTokenFileBytes) throw new AtollError('INVALID_ARGUMENT', `${source} ${path} is larger than ${maxTokenFileBytes} bytes: it holds one token`);
    text = bytes.toString('utf8');
  } catch (error) {
    if (error instanceof AtollError) throw error;
    throw new AtollError('INVALID_ARGUMENT', `cannot read ${source} ${path}: ${error instanceof Error ? error.message : String(error)}`);
  }
  const token = text.trim();
  if (token === '' || /\s/.test(token)) throw new AtollError('INVALID_ARGUMENT', `${source} ${path} must hold exactly one token`);
  return token;
}

/**
 * The token, from the first of: --token-file, --token, $ATOLL_TOKEN_FILE, $ATOLL_TOKEN (empty
 * variables count as unset). --token puts the secret in the command line, which other users of the
 * machine can read (ps, /proc/<pid>/cmdline); a file or the environment does not.
 */
export function tokenOf(globals: { token?: string; tokenFile?: string }, env: Readonly<Record<string, string | undefined>>): string | undefined {
  if (globals.tokenFile !== undefined && globals.token !== undefined) throw new AtollError('INVALID_ARGUMENT', 'give --token or --token-file, not both');
  if (globals.tokenFile !== undefined) return readTokenFile(globals.tokenFile, '--token-file');
  if (globals.token !== undefined) return globals.token;
  const file = env['ATOLL_TOKEN_FILE'];
  if (file !== undefined && file !== '') return readTokenFile(file, 'ATOLL_TOKEN_FILE');
  const token = env['ATOLL_TOKEN'];
  return token === undefined || token === '' ? undefined : token;
}

export async function run(argv: readonly string[], io: CliIo): Promise<number> {
  let exitCode: number = exitCodes.ok;
  const program = new Command('atoll');
  const out = (line: string): void => io.stdout(`${line}\n`);

  /** Wraps a command's work: builds the client from the global options, maps errors to exit 2. */
  const act =
    (work: (...args: unknown[]) => Action) =>
    async (...args: unknown[]): Promise<void> => {
      const command = args[args.length - 1] as Command;
      const globals = command.optsWithGlobals<GlobalOptions & TlsFlags>();
      // `restore --addresses` names the target cluster; everything else uses --endpoints.
      const addresses = (globals as { addresses?: string }).addresses;
      const endpoints = (addresses ?? globals.endpoints ?? io.env['ATOLL_ENDPOINTS'] ?? defaultEndpoints).split(',');
      let client: AtollClient | undefined;
      try {
        const token = tokenOf(globals, io.env);
        const options: AtollClientOptions = {
          endpoints,
          // One-shot commands gain nothing from a stream; a unary call is one round trip fewer.
          pipelining: false,
          ...(globals.timeout !== undefined && { defaultTimeoutMs: globals.timeout }),
          ...(token !== undefined && { token }),
        };
        const tls = clientTlsOf(globals, io.env);
        const withTls: AtollClientOptions = tls === undefined ? options : { ...options, tls };
        client = io.createClient?.(withTls) ?? new AtollClient(withTls);
        exitCode = await work(...args.slice(0, -1))(client, out, globals);
      } catch (error) {
        exitCode = exitCodes.error;
        const code = error instanceof AtollError ? error.code : 'INTERNAL';
        const message = error instanceof Error ? error.message : String(error);
        io.stderr(`error ${code}: ${message}\n`);
      } finally {
        client?.close();
      }
    };

  program
    .name('atoll')
    .description('Command-line client for the Atoll key-value store.')
    .option('--endpoints <list>', `comma-separated host:port list (default: $ATOLL_ENDPOINTS or ${defaultEndpoints})`)
    .option('--json', 'print results as JSON')
    .option('--token-file <file>', 'read the bearer token of a cluster with authentication from FILE (default: $ATOLL_TOKEN_FILE, then $ATOLL_TOKEN)')
    .option('--token <token>', 'the bearer token itself; other users of this machine can read it in the process list (ps): prefer --token-file')
    .option('--timeout <ms>', 'timeout of each call in milliseconds', parseCount('--timeout', 1))
    .exitOverride()
    .configureOutput({ writeOut: (text) => io.stdout(text), writeErr: (text) => io.stderr(text), outputError: (text, write) => write(usageErrorLine(text)) })
    .showSuggestionAfterError();
  addTlsOptions(program);

  const conditions = ['ifAbsent', 'ifPresent', 'ifRevision', 'ifValue', 'ifValueFile'];
  const conflictsWithOthers = (name: string) => conditions.filter((other) => other !== name);
  program
    .command('put')
    .description('write KEY = VALUE (exit 1 when a condition did not hold); VALUE - reads the value from stdin, byte for byte')
    .argument('<key>')
    .argument('[value]', 'the value as text; - for stdin; or give --file')
    .option('--file <path>', 'read the value from FILE, byte for byte (- for stdin)')
    .option('--ttl <ms>', 'expire the key this many milliseconds from now', parseCount('--ttl', limits.minTtlMs))
    .addOption(new Option('--keep-ttl', "keep the key's current expiry").conflicts('ttl'))
    .addOption(new Option('--if-absent', 'only if the key is absent').conflicts(conflictsWithOthers('ifAbsent')))
    .addOption(new Option('--if-present', 'only if the key is present').conflicts(conflictsWithOthers('ifPresent')))
    .addOption(
      new Option('--if-revision <n>', "only if the key's mod revision is N (0: absent)").argParser(parseCount('--if-revision', 0)).conflicts(conflictsWithOthers('ifRevision')),
    )
    .addOption(new Option('--if-value <value>', 'only if the key holds exactly VALUE').conflicts(conflictsWithOthers('ifValue')))
    .addOption(new Option('--if-value-file <path>', 'only if the key holds exactly the bytes of FILE (- for stdin)').conflicts(conflictsWithOthers('ifValueFile')))
    .option('--lease <id>', 'attach the key to lease ID (atoll lease grant): it is deleted when the lease ends')
    .option('--if-fence <token>', "a fenced write: refused (FENCED) when a newer lock holder's token already wrote the key", parseCount('--if-fence', 1))
    .action(
      act((key, valueArgument, options) => async (client, print, globals) => {
        const flags = options as { file?: string; ttl?: number; keepTtl?: boolean; ifAbsent?: boolean; ifPresent?: boolean; ifRevision?: number; ifValue?: string; ifValueFile?: string; lease?: string; ifFence?: number };
        if ((valueArgument === undefined) === (flags.file === undefined)) {
          throw new AtollError('INVALID_ARGUMENT', 'give the value as VALUE, as - (stdin) or with --file PATH: exactly one');
        }
        const inputs = new InputReader(io.stdin);
        const value = flags.file !== undefined ? await inputs.read(flags.file, valueInput, '--file') : valueArgument === '-' ? await inputs.read('-', valueInput, 'VALUE') : (valueArgument as string);
        const ifValue = flags.ifValueFile !== undefined ? await inputs.read(flags.ifValueFile, valueInput, '--if-value-file') : flags.ifValue;
        const putOptions: PutOptions = {
          ...(flags.ttl !== undefined && { ttlMs: flags.ttl }),
          ...(flags.keepTtl === true && { keepTtl: true }),
          ...(flags.ifAbsent === true && { ifAbsent: true }),
          ...(flags.ifPresent === true && { ifPresent: true }),
          ...(flags.ifRevision !== undefined && { ifModRevision: flags.ifRevision }),
          ...(ifValue !== undefined && { ifValue }),
          ...(flags.lease !== undefined && { lease: flags.lease }),
          ...(flags.ifFence !== undefined && { ifFence: flags.ifFence }),
        };
        const result = await client.put(key as string, value, putOptions);
        if (globals.json === true) print(json({ applied: result.applied, revision: result.revision }));
        else print(result.applied ? `OK revision ${result.revision}` : '(not applied)');
        return result.applied ? exitCodes.ok : exitCodes.negative;
      }),
    );

  program
    .command('get')
    .description('print the value of KEY (exit 1 when not found)')
    .argument('<key>')
    .option('--revision <n>', 'read at this past revision', parseCount('--revision', 1))
    .option('--stale', 'allow a stale read from any replica')
    .addOption(new Option('--out <path>', 'write the exact bytes of the value to FILE (nothing on stdout)').conflicts('raw'))
    .option('--raw', 'write the exact bytes of the value to stdout, with no newline (not to a terminal unless it is text)')
    .action(
      act((key, options) => async (client, print, globals) => {
        const flags = options as { revision?: number; stale?: boolean; out?: string; raw?: boolean };
        const exact = flags.out !== undefined || flags.raw === true;
        if (exact && globals.json === true) throw new AtollError('INVALID_ARGUMENT', '--json prints the value in JSON: give it without --out and --raw');
        const result = await client.get(key as string, {
          ...(flags.revision !== undefined && { revision: flags.revision }),
          ...(flags.stale === true && { consistency: 'stale' as const }),
        });
        if (globals.json === true) {
          print(json(getJson(key as string, result)));
        } else if (!result.found) {
          // With --raw, stdout holds only the value's bytes; a miss says so on stderr.
          if (exact) io.stderr('(not found)\n');
          else print('(not found)');
        } else if (flags.out !== undefined) {
          writeValueFile(flags.out, result.value, '--out');
        } else if (flags.raw === true) {
          if (io.stdoutIsTty === true && !isText(result.value)) {
            throw new AtollError('INVALID_ARGUMENT', `the value of ${key as string} is not UTF-8 text (${result.value.length} bytes): redirect stdout or give --out PATH`);
          }
          if (io.stdoutBytes !== undefined) io.stdoutBytes(result.value);
          else io.stdout(result.text());
        } else {
          print(result.text());
          if (!isText(result.value)) io.stderr(`note: the value is not UTF-8 text (${result.value.length} bytes); for its exact bytes give --out PATH or --raw\n`);
        }
        return result.found ? exitCodes.ok : exitCodes.negative;
      }),
    );

  program
    .command('del')
    .description('delete KEY (exit 1 when it was not found)')
    .argument('<key>')
    .action(
      act((key) => async (client, print, globals) => {
        const result = await client.delete(key as string);
        if (globals.json === true) print(json({ deleted: result.deleted, revision: result.revision }));
        else print(result.deleted ? `deleted revision ${result.revision}` : '(not found)');
        return result.deleted ? exitCodes.ok : exitCodes.negative;
      }),
    );

  program
    .command('incr')
    .description('add DELTA (default 1) to the counter at KEY and print the new value')
    .argument('<key>')
    .argument('[delta]', 'the amount to add, may be negative', parseDelta)
    .option('--ttl <ms>', 'give the counter a new expiry', parseCount('--ttl', limits.minTtlMs))
    .action(
      act((key, delta, options) => async (client, print, globals) => {
        const flags = options as { ttl?: number };
        const result = await client.increment(key as string, (delta as bigint | undefined) ?? 1n, flags.ttl === undefined ? {} : { ttlMs: flags.ttl });
        if (globals.json === true) print(json({ value: jsonInteger(result.value), revision: result.revision }));
        else print(result.value.toString());
        return exitCodes.ok;
      }),
    );

  program
    .command('exists')
    .description('print whether KEY exists (exit 1 when it does not)')
    .argument('<key>')
    .action(
      act((key) => async (client, print, globals) => {
        const result = await client.exists(key as string);
        print(globals.json === true ? json({ exists: result.exists, revision: result.revision }) : String(result.exists));
        return result.exists ? exitCodes.ok : exitCodes.negative;
      }),
    );

  program
    .command('extend')
    .description('make KEY expire MS milliseconds from now (exit 1 when not found)')
    .argument('<key>')
    .argument('<ms>', 'the new time to live', parseCount('MS', limits.minTtlMs))
    .action(
      act((key, ttlMs) => async (client, print, globals) => {
        const result = await client.extend(key as string, ttlMs as number);
        if (globals.json === true) print(json({ extended: result.extended, expiresAtMs: result.expiresAtMs, revision: result.revision }));
        else print(result.extended ? `extended until ${new Date(result.expiresAtMs).toISOString()}` : '(not found)');
        return result.extended ? exitCodes.ok : exitCodes.negative;
      }),
    );

  program
    .command('prefix')
    .description('list the keys under PREFIX (a bucket name, or a prefix inside one bucket)')
    .argument('<prefix>')
    .option('--limit <n>', 'print at most N keys', parseCount('--limit', 1))
    .option('--stale', 'allow a stale read from any replica')
    .action(
      act((prefix, options) => async (client, print, globals) => {
        const flags = options as { limit?: number; stale?: boolean };
        const items = [];
        let pageToken = '';
        let revision = 0;
        // Bounded by the limit, or by the number of keys under the prefix.
        do {
          const remaining = flags.limit === undefined ? limits.maxPageSize : Math.min(limits.maxPageSize, flags.limit - items.length);
          const page = await client.getByPrefix(prefix as string, {
            limit: remaining,
            pageToken,
            ...(revision !== 0 && { revision }),
            ...(flags.stale === true && { consistency: 'stale' as const }),
          });
          revision = page.revision;
          items.push(...page.items);
          pageToken = page.nextPageToken;
        } while (pageToken !== '' && (flags.limit === undefined || items.length < flags.limit));
        if (globals.json === true) print(json({ items: items.map(entryJson), revision }));
        else for (const item of items) print(`${item.key}\t${item.text()}`);
        return exitCodes.ok;
      }),
    );

  program
    .command('watch')
    .description('print every change to the keys under PREFIX (a bucket, or a prefix inside one) as it happens, until interrupted')
    .argument('<prefix>')
    .option('--from <rev>', 'start after revision REV (the last one you saw); default: now', parseCount('--from', 0))
    .option('--key', 'watch exactly the key PREFIX, not every key starting with it')
    .option('--keys-only', 'leave values out')
    .option('--progress', 'also print progress lines (the revision the watch has caught up to) on an idle watch')
    .option('--limit <n>', 'stop after N changes', parseCount('--limit', 1))
    .action(
      act((prefix, options) => async (client, print, globals) => {
        const flags = options as { from?: number; key?: boolean; keysOnly?: boolean; progress?: boolean; limit?: number };
        let changes = 0;
        // Runs until interrupted, or until --limit changes were printed.
        for await (const item of client.watch(prefix as string, {
          ...(flags.from !== undefined && { fromRevision: flags.from }),
          ...(flags.key === true && { exactKey: true }),
          ...(flags.keysOnly === true && { keysOnly: true }),
          ...(flags.progress === true && { progress: true }),
        })) {
          if (item.type === 'progress') {
            print(globals.json === true ? json({ type: 'progress', revision: item.revision }) : `progress\t${item.revision}`);
            continue;
          }
          if (globals.json === true) {
            print(
              json({
                type: item.type,
                key: item.key,
                revision: item.revision,
                ...(item.type === 'put'
                  ? { ...(flags.keysOnly === true ? {} : valueJson(item.value)), createRevision: item.createRevision, version: item.version, expiresAtMs: item.expiresAtMs }
                  : { reason: item.reason }),
              }),
            );
          } else if (item.type === 'put') {
            print(`put\t${item.revision}\t${item.key}${flags.keysOnly === true ? '' : `\t${Buffer.from(item.value).toString()}`}`);
          } else {
            print(`delete\t${item.revision}\t${item.key}\t${item.reason}`);
          }
          if (flags.limit !== undefined && ++changes >= flags.limit) break;
        }
        return exitCodes.ok;
      }),
    );

  const collect = (value: string, previous: string[] = []): string[] => [...previous, value];
  program
    .command('txn')
    .description('run a script transaction (docs/script-language.md); prints its return value as JSON')
    .option('-e, --eval <script>', 'the script text')
    .option('-f, --file <path>', 'read the script from a file (- for stdin)')
    .option('--param <name=text>', 'bind @name to a string (repeatable)', collect)
    .option('--param-file <name=path>', 'bind @name to the text of FILE, which must be UTF-8 (- for stdin; repeatable)', collect)
    .option('--param-json <name=json>', 'bind @name to a JSON value: 42, true, [1,2] (repeatable)', collect)
    .option('--bucket <bucket>', 'the bucket to run in (default: the first key the script names)')
    .addOption(new Option('--isolation <level>', 'snapshot or serializable').choices(['snapshot', 'serializable']).default('snapshot'))
    .action(
      act((options) => async (client, print, globals) => {
        const opts = options as { eval?: string; file?: string; param?: string[]; paramFile?: string[]; paramJson?: string[]; bucket?: string; isolation: 'snapshot' | 'serializable' };
        if ((opts.eval === undefined) === (opts.file === undefined)) throw new AtollError('INVALID_ARGUMENT', 'give the script with exactly one of -e SCRIPT or -f FILE');
        const inputs = new InputReader(io.stdin);
        const script = opts.eval ?? (await inputs.readText(opts.file!, scriptInput, '-f'));
        const params: Record<string, unknown> = {};
        const nameOf = (spec: string): string => {
          const at = spec.indexOf('=');
          if (at <= 0) throw new AtollError('INVALID_ARGUMENT', `a parameter is NAME=VALUE, got ${JSON.stringify(spec)}`);
          return spec.slice(0, at);
        };
        const bind = (spec: string, parse: (text: string) => unknown): void => {
          params[nameOf(spec)] = parse(spec.slice(nameOf(spec).length + 1));
        };
        for (const spec of opts.param ?? []) bind(spec, (text) => text);
        for (const spec of opts.paramFile ?? []) {
          const name = nameOf(spec);
          params[name] = await inputs.readText(spec.slice(name.length + 1), paramInput, `--param-file ${name}`);
        }
        for (const spec of opts.paramJson ?? []) {
          bind(spec, (text) => {
            try {
              return JSON.parse(text) as unknown;
            } catch {
              throw new AtollError('INVALID_ARGUMENT', `--param-json ${spec.slice(0, spec.indexOf('='))}: not JSON: ${text}`);
            }
          });
        }
        const result = await client.executeScript(script, {
          params,
          isolation: opts.isolation,
          ...(opts.bucket !== undefined && { bucket: opts.bucket }),
        });
        if (globals.json === true) {
          print(json({ result: result.value, committed: result.committed, revision: result.revision, attempts: result.attempts }));
        } else {
          print(JSON.stringify(result.value));
        }
        return result.committed ? exitCodes.ok : exitCodes.negative;
      }),
    );

  addAuthCommands(program, act, out);
  addLeaseCommands(program, act);
  addLockCommand(program, act);

  const cluster = program.command('cluster').description('inspect and steer the cluster');
  cluster
    .command('status')
    .description('show nodes, partitions and their leaders')
    .action(
      act(() => async (client, print, globals) => {
        const info = await client.clusterInfo();
        // The rebalancer's state needs the cluster admin (and a server that has one): left out otherwise.
        const rebalancer = await client.rebalance({ action: 'status' }, { timeoutMs: 2_000 }).catch(() => undefined);
        print(globals.json === true ? json({ ...clusterStatusJson(info), ...(rebalancer !== undefined && { rebalancer }) }) : clusterStatusText(info) + rebalancerText(rebalancer));
        return exitCodes.ok;
      }),
    );
  cluster
    .command('transfer')
    .description('ask PARTITION to move its leadership to NODE')
    .argument('<partition>', 'partition id', parseCount('PARTITION', 0))
    .argument('<node>', 'target node id', parseCount('NODE', 1))
    .action(
      act((partition, node) => async (client, print, globals) => {
        await client.transferLeader(partition as number, node as number);
        print(globals.json === true ? json({ partition, node, started: true }) : `leadership transfer of partition ${partition} to node ${node} started`);
        return exitCodes.ok;
      }),
    );

  cluster
    .command('move-replica')
    .description("move PARTITION's replica from node FROM to node TO, online (cluster admin; repeat it to finish an interrupted move)")
    .argument('<partition>', 'partition id', parseCount('PARTITION', 0))
    .argument('<from>', 'node that gives up its replica', parseCount('FROM', 1))
    .argument('<to>', 'node that receives the replica', parseCount('TO', 1))
    .action(
      act((partition, from, to) => async (client, print, globals) => {
        // A move copies a whole partition: it gets minutes, not the usual seconds, unless --timeout says otherwise.
        const result = await client.moveReplica(partition as number, from as number, to as number, { timeoutMs: globals.timeout ?? MOVE_TIMEOUT_MS });
        print(globals.json === true ? json({ partition, from, to, voters: result.voters }) : `partition ${partition} moved from node ${from} to node ${to}; replicas: ${result.voters.join(', ')}`);
        return exitCodes.ok;
      }),
    );

  cluster
    .command('split')
    .description("split PARTITION's hash range in two partitions on the same replicas, at a bucket boundary its leader picks (cluster admin)")
    .argument('<partition>', 'partition id', parseCount('PARTITION', 0))
    .action(
      act((partition) => async (client, print, globals) => {
        const result = await client.splitPartition(partition as number, { timeoutMs: globals.timeout ?? MOVE_TIMEOUT_MS });
        const text = `partition ${result.partition} split at hash ${result.mid}: partition ${result.partition} keeps [${result.start}, ${result.mid}), new partition ${result.newPartition} owns [${result.mid}, ${result.end})`;
        print(globals.json === true ? json(result) : text);
        return exitCodes.ok;
      }),
    );

  cluster
    .command('merge')
    .description('join PARTITION with its right neighbour (the partition whose range starts at its end) into PARTITION; both must be on the same replicas, and the neighbour a split partition (cluster admin)')
    .argument('<partition>', 'partition id', parseCount('PARTITION', 0))
    .action(
      act((partition) => async (client, print, globals) => {
        const result = await mergeWithLeaderTransfer(client, partition as number, globals.timeout ?? MOVE_TIMEOUT_MS, globals.json === true ? undefined : print);
        const text = `partition ${result.mergedPartition} merged into partition ${result.partition}, which now owns [${result.start}, ${result.end})`;
        print(globals.json === true ? json(result) : text);
        return exitCodes.ok;
      }),
    );

  addMembershipCommands(cluster, act as Parameters<typeof addMembershipCommands>[1]);

  addBackupCommands(program, act, { ...io, defaultEndpoints });
  addHealthCommand(program, { ...io, setExitCode: (code) => (exitCode = code) });
  addBenchCommand(program, { ...io, defaultEndpoints, setExitCode: (code) => (exitCode = code) });
  addTopCommand(program, { ...io, defaultEndpoints, setExitCode: (code) => (exitCode = code) });

  try {
    await program.parseAsync([...argv], { from: 'user' });
  } catch (error) {
    if (!(error instanceof CommanderError)) throw error;
    // Help and version exit 0; every usage error (already printed by commander) is an error.
    return error.exitCode === 0 ? exitCodes.ok : exitCodes.error;
  }
  return exitCode;
}
