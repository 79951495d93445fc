/** The integration tests use the harness's cluster launcher. */
export { LocalCluster, type ClusterInfoMessage, type LocalClusterOptions } from '../../src/chaos/local-cluster.js';
