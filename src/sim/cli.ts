/**
 * `npm run sim -- --seeds 1000` runs seeds 1..1000 and prints a line per batch and a final summary;
 * `npm run sim -- --seed 4711` replays one seed and prints its event trace on failure.
 * Options: --from N (first seed), --batch N (seeds per summary line), --bug NAME (negative control:
 * commitPreviousTerm | readIndexWithoutQuorum | skipCheckQuorum), --trace (print trace even on success).
 */
import type { RaftBugs } from '../raft/config.js';
import { runSeed, scenarioFromSeed, type SimResult } from './cluster.js';

interface CliOptions {
  seeds: number;
  from: number;
  seed: number | undefined;
  batch: number;
  bugs: RaftBugs;
  trace: boolean;
}

function parseArgs(argv: string[]): CliOptions {
  const options: CliOptions = { seeds: 200, from: 1, seed: undefined, batch: 100, bugs: {}, trace: false };
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i];
    const value = (): string => {
      const next = argv[++i];
      if (next === undefined) throw new Error(`${flag} needs a value`);
      return next;
    };
    switch (flag) {
      case '--seeds':
        options.seeds = positiveInt(value(), flag);
        break;
      case '--from':
        options.from = positiveInt(value(), flag);
        break;
      case '--seed':
        options.seed = positiveInt(value(), flag);
        break;
      case '--batch':
        options.batch = positiveInt(value(), flag);
        break;
      case '--bug': {
        const name = value();
        if (!['commitPreviousTerm', 'readIndexWithoutQuorum', 'skipCheckQuorum'].includes(name)) {
          throw new Error(`unknown bug ${name}`);
        }
        options.bugs = { ...options.bugs, [name]: true };
        break;
      }
      case '--trace':
        options.trace = true;
        break;
      default:
        throw new Error(`unknown option ${flag}`);
    }
  }
  return options;
}

function positiveInt(text: string, flag: string | undefined): number {
  const value = Number(text);
  if (!Number.isInteger(value) || value < 1) throw new Error(`${flag} must be a positive integer, got ${text}`);
  return value;
}

function describe(result: SimResult): string {
  const s = scenarioFromSeed(result.seed);
  return `seed ${result.seed} (${s.profile}, ${s.nodeCount} nodes, ${s.readMode} reads, preVote=${s.preVote}, quiesce=${s.quiesceAfterTicks}, batchAppends=${s.batchAppends})`;
}

function replay(options: CliOptions, seed: number): number {
  const result = runSeed(seed, { bugs: options.bugs, trace: true });
  if (!result.ok || options.trace) {
    for (const line of result.trace) console.log(line);
  }
  if (result.ok) {
    console.log(`sim: ${describe(result)} passed in ${result.ticks} ticks; ${JSON.stringify(result.stats)}`);
    console.log('sim: 1 seeds, 1 passed, 0 failed');
    return 0;
  }
  console.log(`sim: ${describe(result)} FAILED at tick ${result.ticks}\n${result.error}`);
  console.log('sim: 1 seeds, 0 passed, 1 failed');
  return 1;
}

function main(): number {
  const options = parseArgs(process.argv.slice(2));
  if (options.seed !== undefined) return replay(options, options.seed);
  const failed: number[] = [];
  let passed = 0;
  let batchStart = Date.now();
  const started = Date.now();
  const last = options.from + options.seeds - 1;
  for (let seed = options.from; seed <= last; seed++) {
    const result = runSeed(seed, { bugs: options.bugs });
    if (result.ok) passed++;
    else {
      failed.push(seed);
      console.log(`sim: FAILED ${describe(result)}: ${result.error?.split('\n')[0]}`);
      console.log(`sim:   replay with: npm run sim -- --seed ${seed}${bugFlags(options.bugs)}`);
    }
    if ((seed - options.from + 1) % options.batch === 0 || seed === last) {
      const elapsed = ((Date.now() - batchStart) / 1000).toFixed(1);
      console.log(`sim: seeds ..${seed}: ${passed} passed, ${failed.length} failed (${elapsed}s)`);
      batchStart = Date.now();
    }
  }
  const total = ((Date.now() - started) / 1000).toFixed(1);
  console.log(`sim: ${options.seeds} seeds, ${passed} passed, ${failed.length} failed (${total}s)${failed.length ? ` failing seeds: ${failed.join(',')}` : ''}`);
  return failed.length === 0 ? 0 : 1;
}

function bugFlags(bugs: RaftBugs): string {
  return Object.keys(bugs).map((name) => ` --bug ${name}`).join('');
}

process.exitCode = main();
