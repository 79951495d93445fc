/**
 * `npm run hostile-load -- --duration 60`: the hostile load run (hostile-load.ts). Progress lines
 * go to stderr every few seconds; the report goes to stdout as a table, or as JSON with `--json`,
 * and to a file with `--out FILE` (JSON). Exit code 0 when the goal is met, 1 when it is not, 2
 * when the run itself failed (the cluster did not start, ...).
 */
import { writeFileSync } from 'node:fs';
import { Command, InvalidArgumentError } from 'commander';
import { patternNames, type PatternName } from './hostile-attacks.js';
import { defaultAttackScale, defaultHostileLoadOptions, reducedAttackScale, runHostileLoad } from './hostile-load.js';
import { reportText } from './hostile-load-report.js';

function positive(name: string) {
  return (text: string): number => {
    const value = Number(text);
    if (!Number.isInteger(value) || value < 1) throw new InvalidArgumentError(`${name} must be a positive integer`);
    return value;
  };
}

function nonNegative(name: string) {
  return (text: string): number => {
    const value = Number(text);
    if (!Number.isFinite(value) || value < 0) throw new InvalidArgumentError(`${name} must be a number of seconds, 0 or more`);
    return value;
  };
}

/** A comma-separated list of pattern names; "none" for none (a baseline: the ordinary tenant alone). */
function patternList(text: string): PatternName[] {
  if (text === 'none') return [];
  const names = text.split(',').map((name) => name.trim());
  for (const name of names) if (!(patternNames as readonly string[]).includes(name)) throw new InvalidArgumentError(`unknown pattern ${name}; the patterns: ${patternNames.join(',')}`);
  return names as PatternName[];
}

const program = new Command('hostile-load')
  .description('every hostile pattern of issue 33 at once on a three-node cluster with authentication, while an ordinary tenant puts and gets')
  .option('--duration <seconds>', 'how long the load runs', positive('--duration'), defaultHostileLoadOptions.durationMs / 1000)
  .option('--rate <n>', "the ordinary tenant's operations a second", positive('--rate'), defaultHostileLoadOptions.rate)
  .option('--partitions <n>', 'partitions', positive('--partitions'), defaultHostileLoadOptions.partitions)
  .option('--patterns <list>', `the hostile patterns to run, comma-separated, or none (a baseline); the goal needs all: ${patternNames.join(',')}`, patternList, [...patternNames])
  .option('--reduced', 'a few of each hostile pattern and a small history (a quick look; what the test runs)')
  .option('--scripts <n>', `hostile scripts at once (default ${defaultAttackScale.scripts})`, positive('--scripts'))
  .option('--watch-connections <n>', `zero-window connections for watches (default ${defaultAttackScale.watchConnections})`, positive('--watch-connections'))
  .option('--watches-per-connection <n>', `watches kept open on each (default ${defaultAttackScale.watchesPerConnection})`, positive('--watches-per-connection'))
  .option('--admin-connections <n>', `partial-header connections to each admin port (default ${defaultAttackScale.adminConnectionsPerNode})`, positive('--admin-connections'))
  .option('--lease-rate <n>', `lease grants a second at most (default ${defaultAttackScale.leaseRate})`, positive('--lease-rate'))
  .option('--guess-rate <n>', `random-token calls a second at most (default ${defaultAttackScale.guessRate})`, positive('--guess-rate'))
  .option('--stream-frames <n>', `requests written on each never-read KV.Stream (default ${defaultAttackScale.streamFrames})`, positive('--stream-frames'))
  .option('--progress-every <seconds>', 'a progress line this often', positive('--progress-every'), defaultHostileLoadOptions.progressEveryMs / 1000)
  .option('--warm-up <seconds>', 'the ordinary tenant runs this long before the attacks start, not measured (0: none)', nonNegative('--warm-up'), defaultHostileLoadOptions.warmUpMs / 1000)
  .option('--attacker-nice <n|keep>', `the attackers' thread's nice value (they stand for clients on other hosts: at 19 they take only the CPU the nodes leave); keep: the run's own (default ${defaultHostileLoadOptions.attackerNice})`, (value: string) => {
    if (value === 'keep') return 'keep';
    const nice = Number(value);
    if (!Number.isInteger(nice) || nice < -20 || nice > 19) throw new InvalidArgumentError('an integer from -20 to 19, or keep');
    return nice;
  })
  .option('--json', 'print the report as JSON (the table goes to stderr)')
  .option('--out <file>', 'also write the report as JSON to this file')
  .parse();

const options = program.opts<{
  duration: number;
  rate: number;
  partitions: number;
  patterns: PatternName[];
  reduced?: boolean;
  scripts?: number;
  watchConnections?: number;
  watchesPerConnection?: number;
  adminConnections?: number;
  leaseRate?: number;
  guessRate?: number;
  streamFrames?: number;
  progressEvery: number;
  warmUp: number;
  attackerNice?: number | 'keep';
  json?: boolean;
  out?: string;
}>();

const base = options.reduced === true ? reducedAttackScale : defaultAttackScale;
const scale = {
  ...base,
  ...(options.scripts !== undefined && { scripts: options.scripts }),
  ...(options.watchConnections !== undefined && { watchConnections: options.watchConnections }),
  ...(options.watchesPerConnection !== undefined && { watchesPerConnection: options.watchesPerConnection }),
  ...(options.adminConnections !== undefined && { adminConnectionsPerNode: options.adminConnections }),
  ...(options.leaseRate !== undefined && { leaseRate: options.leaseRate }),
  ...(options.guessRate !== undefined && { guessRate: options.guessRate }),
  ...(options.streamFrames !== undefined && { streamFrames: options.streamFrames }),
};

try {
  const report = await runHostileLoad({
    ...defaultHostileLoadOptions,
    durationMs: options.duration * 1000,
    rate: options.rate,
    partitions: options.partitions,
    ...(options.reduced === true && { historyValues: 4 }),
    scale,
    patterns: options.patterns,
    progressEveryMs: options.progressEvery * 1000,
    warmUpMs: Math.round(options.warmUp * 1000),
    ...(options.attackerNice === 'keep' ? { attackerNice: undefined } : options.attackerNice !== undefined && { attackerNice: options.attackerNice }),
    log: (line) => process.stderr.write(`${line}\n`),
  });
  const json = `${JSON.stringify(report, null, 2)}\n`;
  if (options.out !== undefined) writeFileSync(options.out, json);
  if (options.json === true) {
    process.stderr.write(`${reportText(report)}\n`);
    process.stdout.write(json);
  } else {
    process.stdout.write(`${reportText(report)}\n`);
  }
  process.exitCode = report.goal.met ? 0 : 1;
} catch (error) {
  process.stderr.write(`hostile-load: the run failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exitCode = 2;
}
