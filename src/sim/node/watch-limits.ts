/**
 * The nodes' watch limits in the simulator (sim-cluster.ts gives them to every node): a small ring
 * (watchers fall behind it and read the store's history in small pages), short progress and stall
 * intervals (progress messages and WATCH_OVERFLOW happen within a seed's few seconds). Only
 * watches read these, so the other workloads run as before.
 */
import type { Limits } from '../../limits.js';

export const simWatchLimits: Partial<Limits> = { watchRingChanges: 64, watchReadChanges: 8, watchProgressIntervalMs: 500, watchStallMs: 800 };
