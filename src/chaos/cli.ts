/**
 * `npm run chaos -- --nodes 5 --duration 600 --seed 42`: a fault-injection run against real
 * processes; `--membership` adds membership changes (a node joins and leaves, replicas move, a
 * wiped node is replaced) to the faults. `--seed` replays the same fault schedule; `--bug NAME` plants a server defect to see
 * the checkers catch it. Exit code 0 when every checker is valid, 1 otherwise.
 */
import { Command, InvalidArgumentError } from 'commander';
import type { FaultKind } from './nemesis.js';
import { defaultChaosNetns, runChaos } from './runner.js';

const ALL_FAULTS: FaultKind[] = ['kill-leader', 'kill-node', 'kill-two', 'pause-node', 'restart-all', 'isolate-leader', 'split', 'one-way-partition', 'slow-link', 'one-way-link', 'blackhole-link', 'reset-link'];
const DEFAULT_FAULTS: FaultKind[] = ALL_FAULTS.filter((fault) => !fault.endsWith('-link'));

function positive(name: string) {
  return (text: string): number => {
    const value = Number(text);
    if (!Number.isInteger(value) || value < 1) throw new InvalidArgumentError(`${name} must be a positive integer`);
    return value;
  };
}

/** Interface names are the prefix plus up to 7 characters, and Linux allows 15. */
function netnsPrefix(text: string): string {
  if (!/^[a-z][a-z0-9]{0,7}$/.test(text)) throw new InvalidArgumentError('lower-case letters and digits, starting with a letter, at most 8');
  return text;
}

function subnetIndex(text: string): number {
  const value = Number(text);
  if (!/^\d{1,3}$/.test(text) || value > 255) throw new InvalidArgumentError('an integer from 0 to 255');
  return value;
}

const program = new Command('chaos')
  .option('--nodes <n>', 'cluster size (3 or 5)', positive('--nodes'), 3)
  .option('--duration <seconds>', 'how long faults run', positive('--duration'), 60)
  .option('--seed <n>', 'fault schedule seed', positive('--seed'), Math.floor(Math.random() * 1_000_000) + 1)
  .option('--partitions <n>', 'partitions', positive('--partitions'), 8)
  .option('--faults <list>', `comma-separated: ${ALL_FAULTS.join(',')} (the -link faults use loopback TCP proxies instead of namespaces)`, DEFAULT_FAULTS.join(','))
  .option('--bug <name>', 'plant a defect: reads-without-quorum | ack-before-commit | no-dedup | torn-transactions | watch-skips-on-resume | lock-skips-waiting')
  .option('--membership', 'membership faults too: a node joins (empty, --join) and leaves, replicas move, a node whose data directory was wiped is replaced')
  .option('--out <dir>', 'directory for the history file')
  .option('--netns-prefix <prefix>', 'name prefix of the network namespaces; two runs at once need different ones', netnsPrefix, defaultChaosNetns.prefix)
  .option('--netns-subnet <n>', 'their subnet 10.203.N.0/24 (0-255)', subnetIndex, defaultChaosNetns.subnetIndex)
  .parse();

const options = program.opts<{ nodes: number; duration: number; seed: number; partitions: number; faults: string; bug?: string; membership?: boolean; out?: string; netnsPrefix: string; netnsSubnet: number }>();
const faults = options.faults.split(',').map((f) => f.trim()) as FaultKind[];
for (const fault of faults) if (!ALL_FAULTS.includes(fault)) program.error(`error: unknown fault ${fault}`);

const result = await runChaos({
  nodes: options.nodes,
  durationSec: options.duration,
  seed: options.seed,
  partitions: options.partitions,
  faults,
  ...(options.bug ? { testBug: options.bug } : {}),
  ...(options.membership === true ? { membership: true } : {}),
  ...(options.out ? { historyDir: options.out } : {}),
  netns: { prefix: options.netnsPrefix, subnetIndex: options.netnsSubnet },
});
process.exitCode = result.valid ? 0 : 1;
