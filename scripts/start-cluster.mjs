#!/usr/bin/env node
/**
 * `npm start`: a local three-node Atoll cluster on 127.0.0.1. Prints each node's client address
 * and admin URL (Prometheus /metrics, /livez, /readyz on the client port + 1000, the server's
 * default, bound to loopback like the client port) and `atoll: cluster ready` once every partition
 * has a leader; Ctrl-C stops all three cleanly. Each node also serves etcd's v3 API at its client
 * port + 300 (`etcdctl --endpoints 127.0.0.1:7301 get --prefix ""`; docs/etcd-api.md).
 * Environment: ATOLL_DATA (default ./data), ATOLL_BASE_PORT (default 7001), ATOLL_NODES (default 3),
 * ATOLL_PARTITIONS (default 64), ATOLL_LOG_LEVEL (default warn for this script).
 * The nodes talk to each other on peer ports ATOLL_BASE_PORT + 100 and up (each node's client port
 * + 100, the server's default), proving the cluster peer secret in ATOLL_DATA/peer-secret, which
 * the first node to start creates (docs/security.md, "Peers").
 * ATOLL_CERTS=DIR serves TLS with the certificates scripts/dev-certs.sh made in DIR: clients use
 * `--tls-ca DIR/ca.pem`, and the peer ports use mutual TLS (docs/security.md, "TLS").
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
// The CLI's TLS credentials (built by `npm start` like the server): grpc-js's own would send the
// IP address 127.0.0.1 as the TLS server name, and Node would print its DEP0123 warning.
import { channelCredentialsOf } from '../dist/src/wire/tls-credentials.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const dataRoot = resolve(process.env.ATOLL_DATA ?? join(root, 'data'));
const basePort = Number(process.env.ATOLL_BASE_PORT ?? 7001);
const nodeCount = Number(process.env.ATOLL_NODES ?? 3);
const partitions = Number(process.env.ATOLL_PARTITIONS ?? 64);
const readyTimeoutMs = Number(process.env.ATOLL_READY_TIMEOUT_MS ?? 60_000);

const ids = Array.from({ length: nodeCount }, (_, i) => i + 1);
const addressOf = (id) => `127.0.0.1:${basePort + id - 1}`;
const adminUrlOf = (id) => `http://127.0.0.1:${basePort + 1000 + id - 1}`;
/** etcd's v3 API (docs/etcd-api.md) at each node's client port + 300. */
const etcdAddressOf = (id) => `127.0.0.1:${basePort + 300 + id - 1}`;
const peers = ids.map((id) => `${id}=${addressOf(id)}`).join(',');
const certs = process.env.ATOLL_CERTS ? resolve(process.env.ATOLL_CERTS) : undefined;
if (certs && !existsSync(join(certs, 'ca.pem'))) {
  console.error(`atoll: no ${join(certs, 'ca.pem')}; make the certificates first: scripts/dev-certs.sh ${certs}`);
  process.exit(1);
}
const peerAddresses = ids.map((id) => `${id}=127.0.0.1:${basePort + 100 + id - 1}`).join(',');
/** Node `id`'s TLS flags: its client-port and peer certificates, every peer port, the peer CA. */
const tlsFlags = (id) =>
  certs
    ? ['--tls-cert', join(certs, `node${id}.pem`), '--tls-key', join(certs, `node${id}-key.pem`), '--peer-addresses', peerAddresses,
       '--peer-cert', join(certs, `node${id}-peer.pem`), '--peer-key', join(certs, `node${id}-peer-key.pem`), '--peer-ca', join(certs, 'peer-ca.pem')]
    : [];

mkdirSync(dataRoot, { recursive: true });
const peerSecretFile = join(dataRoot, 'peer-secret');
const children = new Map();
let stopping = false;

for (const id of ids) {
  const dataDir = join(dataRoot, `node${id}`);
  mkdirSync(dataDir, { recursive: true });
  const child = spawn(process.execPath, [join(root, 'dist/src/bin/atoll-server.js'), '--id', String(id), '--peers', peers, '--data-dir', dataDir, '--partitions', String(partitions), '--peer-secret-file', peerSecretFile, '--etcd-listen', etcdAddressOf(id), ...tlsFlags(id)], {
    stdio: ['ignore', 'inherit', 'inherit'],
    env: { ...process.env, ATOLL_LOG_LEVEL: process.env.ATOLL_LOG_LEVEL ?? 'warn', ATOLL_LOG_FORMAT: 'json' },
  });
  children.set(id, child);
  child.on('exit', (code, signal) => {
    children.delete(id);
    if (!stopping) {
      console.error(`atoll: node ${id} exited (${signal ?? code}); stopping the cluster`);
      stop(1);
    } else if (children.size === 0) {
      console.log('atoll: cluster stopped');
      process.exit(process.exitCode ?? 0);
    }
  });
  console.log(`atoll: node ${id} client address ${addressOf(id)}, etcd API ${etcdAddressOf(id)}, admin ${adminUrlOf(id)} (data ${dataDir})`);
}

function stop(code = 0) {
  if (stopping) return;
  stopping = true;
  process.exitCode = code;
  for (const child of children.values()) child.kill('SIGTERM');
  if (children.size === 0) process.exit(code);
  setTimeout(() => {
    for (const child of children.values()) child.kill('SIGKILL');
  }, 10_000).unref();
}

process.on('SIGINT', () => stop(0));
process.on('SIGTERM', () => stop(0));

const definition = protoLoader.loadSync(['atoll/v1/cluster.proto'], { includeDirs: [join(root, 'proto')], keepCase: false, longs: String, enums: String, defaults: true, oneofs: true });
const Cluster = grpc.loadPackageDefinition(definition).atoll.v1.Cluster;
const credentials = channelCredentialsOf(certs ? { ca: readFileSync(join(certs, 'ca.pem')) } : undefined);
const clients = ids.map((id) => new Cluster(addressOf(id), credentials));

function clusterInfo(client) {
  return new Promise((resolveInfo) => {
    client.clusterInfo({}, { deadline: Date.now() + 1000 }, (error, info) => resolveInfo(error ? undefined : info));
  });
}

const started = Date.now();
const poll = setInterval(async () => {
  const infos = await Promise.all(clients.map(clusterInfo));
  if (infos.every((info) => info && info.partitions.every((p) => Number(p.leader) !== 0))) {
    clearInterval(poll);
    console.log(`atoll: cluster ready (${partitions} partitions on ${nodeCount} nodes, ${((Date.now() - started) / 1000).toFixed(1)}s); try: ${certs ? `export ATOLL_TLS_CA=${join(certs, 'ca.pem')}; ` : ''}npx atoll put hello world && npx atoll get hello`);
  } else if (Date.now() - started > readyTimeoutMs) {
    clearInterval(poll);
    console.error(`atoll: cluster not ready after ${readyTimeoutMs / 1000}s`);
    stop(1);
  }
}, 250);
