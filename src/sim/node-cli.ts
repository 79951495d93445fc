/**
 * `npm run sim:node -- --seeds N [--start S]` runs seeds S..S+N-1 of the whole-node simulator
 * (src/sim/node/) and prints progress and the summary line `sim:node: N seeds, N passed, N failed`;
 * a failing seed prints the checker and invariant that failed and its replay command.
 * `npm run sim:node -- --seed S` replays one seed exactly and prints its trace (the newest lines,
 * bounded by --trace-lines). `--bug NAME` plants one NodeTestBugs defect; `--control NAME` plants
 * it with its negative control's settings (src/sim/node/negative-controls.ts).
 */
import type { NodeTestBugs } from '../node/node-config.js';
import { negativeControls } from './node/negative-controls.js';
import { runNodeSeed, type NodeSeedResult } from './node/run-seed.js';
import type { ScenarioOverrides } from './node/scenario.js';

const bugNames = ['followerAckBeforeSync', 'applyBeforeCommit', 'dedupForgetsOnSnapshot', 'serializableSkipsPrefixValidation', 'nonAtomicSnapshotInstall', 'leaseIgnoresMargin', 'moveRemovesSourceEarly', 'splitKeepsMovedKeys', 'splitHealDisabled', 'mergeLeavesLeftovers', 'movedAwayAfterRestart', 'orphanLearnersKept', 'noStartupCampaigns', 'lockGrantsBeforeDelete', 'txnScopeByInitialTable', 'prepareWithoutVoteFloor', 'voterHolesKept', 'noticeCommitBeyondMatch'] as const;

interface CliOptions {
  seeds: number;
  start: number;
  seed: number | undefined;
  traceLines: number;
  bugs: NodeTestBugs;
  control: string | undefined;
  overrides: ScenarioOverrides;
}

function parseArgs(argv: readonly string[]): CliOptions {
  const options: CliOptions = { seeds: 20, start: 1, seed: undefined, traceLines: 400, bugs: {}, control: undefined, overrides: {} };
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
      case '--start':
        options.start = positiveInt(value(), flag);
        break;
      case '--seed':
        options.seed = positiveInt(value(), flag);
        break;
      case '--trace-lines':
        options.traceLines = positiveInt(value(), flag);
        break;
      case '--bug': {
        const name = value();
        if (!(bugNames as readonly string[]).includes(name)) throw new Error(`unknown bug ${name}; one of ${bugNames.join(', ')}`);
        options.bugs = { ...options.bugs, [name]: true };
        break;
      }
      case '--control': {
        const name = value();
        const control = negativeControls[name];
        if (control === undefined) throw new Error(`unknown control ${name}; one of ${Object.keys(negativeControls).join(', ')}`);
        options.control = name;
        options.bugs = { ...options.bugs, [control.bug]: true };
        options.overrides = control.overrides;
        break;
      }
      default:
        throw new Error(`unknown option ${flag}`);
    }
  }
  return options;
}

function positiveInt(text: string, flag: string | undefined): number {
  const value = Number(text);
  if (!Number.isSafeInteger(value) || value < 1) throw new Error(`${flag} must be a positive integer, got ${text}`);
  return value;
}

function bugFlags(bugs: NodeTestBugs, control: string | undefined): string {
  if (control !== undefined) return ` --control ${control}`;
  return Object.keys(bugs).map((name) => ` --bug ${name}`).join('');
}

function report(result: NodeSeedResult, bugs: NodeTestBugs, control: string | undefined): void {
  console.log(`sim:node: seed ${result.seed} FAILED (${result.scenario})`);
  for (const failure of result.failures.slice(0, 5)) {
    const [first, ...more] = failure.message.split('\n');
    console.log(`sim:node:   ${failure.checker} / ${failure.invariant}: ${first}`);
    // The next few lines of a long message (the caught-up check's replica states, say).
    for (const line of more.slice(0, 12)) console.log(`sim:node:     ${line}`);
  }
  if (result.failures.length > 5) console.log(`sim:node:   ... and ${result.failures.length - 5} more`);
  console.log(`sim:node:   replay with: npm run sim:node -- --seed ${result.seed}${bugFlags(bugs, control)}`);
}

async function main(): Promise<number> {
  const options = parseArgs(process.argv.slice(2));
  if (options.seed !== undefined) {
    const result = await runNodeSeed(options.seed, { testBugs: options.bugs, overrides: options.overrides, traceLines: options.traceLines });
    for (const line of result.trace) console.log(line);
    console.log(`sim:node: seed ${result.seed}: ${JSON.stringify(result.stats)}; trace sha256 ${result.traceDigest}`);
    if (!result.ok) report(result, options.bugs, options.control);
    console.log(`sim:node: 1 seeds, ${result.ok ? 1 : 0} passed, ${result.ok ? 0 : 1} failed`);
    return result.ok ? 0 : 1;
  }
  let passed = 0;
  const failed: number[] = [];
  const started = performance.now();
  const last = options.start + options.seeds - 1;
  for (let seed = options.start; seed <= last; seed++) {
    const result = await runNodeSeed(seed, { testBugs: options.bugs, overrides: options.overrides, traceLines: 50 });
    if (result.ok) passed++;
    else {
      failed.push(seed);
      report(result, options.bugs, options.control);
    }
    const done = seed - options.start + 1;
    if (done % 10 === 0 || seed === last) {
      console.log(`sim:node: seeds ..${seed}: ${passed} passed, ${failed.length} failed (${((performance.now() - started) / 1000).toFixed(1)} s)`);
    }
  }
  console.log(`sim:node: ${options.seeds} seeds, ${passed} passed, ${failed.length} failed`);
  if (failed.length > 0) console.log(`sim:node: failing seeds: ${failed.join(',')}`);
  return failed.length === 0 ? 0 : 1;
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    console.error(error);
    process.exitCode = 2;
  },
);
