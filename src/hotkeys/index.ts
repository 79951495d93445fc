/**
 * Hot keys and hot partitions: space-bounded, time-decayed request rates (no clock, no I/O; time
 * is passed in). The node records requests in a LoadTracker and reports it in ClusterInfo;
 * `atoll top` merges the nodes' reports with mergeClusterLoad.
 */
export { SpaceSaving, type SpaceSavingEntry } from './space-saving.js';
export { DecayingTopK, type DecayingTopKOptions, type KeyRate } from './decaying-top-k.js';
export { cutKey, defaultLoadTrackerOptions, LoadTracker, type KeyLoad, type LoadReport, type LoadTrackerOptions, type PartitionLoad } from './load-tracker.js';
export { loadKeyOf, type CountedRequest } from './request-key.js';
export { mergeClusterLoad, type ClusterLoad, type HotKey, type HotPartition, type NodeLoadView } from './cluster-load.js';
