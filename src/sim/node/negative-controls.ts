/**
 * The node-level negative controls: for each deliberate defect (NodeTestBugs), the scenario
 * settings that expose it, the checker and invariant that must catch it, and the seed budget it
 * must be caught within. npm test runs each (test/sim/node/controls*.test.ts), and runs the
 * catching seed once more without the defect, which must pass: a control cannot pass on a failure
 * its defect did not cause. `npm run sim:node -- --control NAME --seed S` replays one.
 */
import type { NodeTestBugs } from '../../node/node-config.js';
import type { CheckerName } from './node-checkers.js';
import type { ScenarioOverrides } from './scenario.js';
import { defaultMix } from './scenario.js';

export interface NegativeControl {
  readonly bug: keyof NodeTestBugs;
  readonly overrides: ScenarioOverrides;
  readonly checker: CheckerName;
  readonly invariant: string;
  /** Seeds 1..budget are tried in order; the first one the named checker fails on is the catch. */
  readonly budget: number;
}

const noMix = { ...defaultMix, put: 0, cas: 0, del: 0, read: 0, staleRead: 0, prefixRead: 0, increment: 0, counterRead: 0, ttlPut: 0, txn: 0, claim: 0, script: 0, isolationTxn: 0 };

export const negativeControls: Readonly<Record<string, NegativeControl>> = {
  // Acknowledged appends a power loss then takes from every follower: increments acknowledged
  // to clients are missing from the final counter.
  followerAckBeforeSync: {
    bug: 'followerAckBeforeSync',
    overrides: { allowedFaults: ['power-loss'], powerLossEveryMs: 2_500, installCrashRate: 0 },
    checker: 'counter',
    invariant: 'exactly-once',
    budget: 10,
  },
  // An isolated leader applies proposals that never commit; its state leaves the others'.
  applyBeforeCommit: {
    bug: 'applyBeforeCommit',
    overrides: { allowedFaults: [], isolateEveryMs: 2_500, installCrashRate: 0 },
    checker: 'digest',
    invariant: 'equal-state-at-equal-index',
    budget: 10,
  },
  // A replica that installed a snapshot applies an answered increment's resend again, where the
  // others answer it from their dedup records: the replicas' states part at the same index.
  dedupForgetsOnSnapshot: {
    bug: 'dedupForgetsOnSnapshot',
    overrides: {
      installCrashRate: 0,
      resendAnsweredRate: 0.7,
      allowedFaults: ['crash', 'partition', 'heal', 'cut', 'pause'],
      mix: { ...noMix, put: 4, read: 2, increment: 20, counterRead: 4 },
    },
    checker: 'digest',
    invariant: 'equal-state-at-equal-index',
    budget: 10,
  },
  // Two claimers both read the empty round prefix and both commit.
  serializableSkipsPrefixValidation: {
    bug: 'serializableSkipsPrefixValidation',
    overrides: { installCrashRate: 0, allowedFaults: [], mix: { ...noMix, put: 2, read: 2, claim: 20 } },
    checker: 'serializable-claims',
    invariant: 'one-claim-per-round',
    budget: 5,
  },
  // Today's snapshot install (issue 16): a node killed inside or right after an install never
  // opens again. Default settings: the seed below is the regression seed.
  nonAtomicSnapshotInstall: {
    bug: 'nonAtomicSnapshotInstall',
    overrides: {},
    checker: 'restart',
    invariant: 'open-succeeds',
    budget: 10,
  },
};
