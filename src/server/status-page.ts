/**
 * The live status page on the admin port: GET / and /status serve one self-contained HTML page
 * (inline CSS and JS, no external assets) that polls GET /status.json every 1.5 s.
 *
 * /status.json is the whole cluster as one node sees it: the partition map and leaders from its
 * ClusterInfo, and each node's health, load and recent leader changes from that node's own status,
 * asked over the peer port (Peer.NodeStatus: the peer secret, over peer TLS when configured; never
 * the viewer's token, which stays on the node it was sent to). Bounded: a short deadline per peer,
 * and the answer's size by the peer channel's message limit and src/wire/status-codec.ts. A peer that does
 * not answer is shown unreachable and its share of the load is missing.
 *
 * Hot keys name keys, so with authentication on /status.json requires the cluster admin token
 * (Authorization: Bearer <token>), checked by the node like any call (admin-auth.ts): 401 without a
 * valid token, 403 for a token that is not the cluster admin's. The page asks for the token and
 * keeps it in sessionStorage. The page renders every value with textContent (keys are user data).
 */
import type { IncomingMessage } from 'node:http';
import { mergeClusterLoad } from '../hotkeys/cluster-load.js';
import { tenantOfInternalKey, tenantTag } from '../keys/tenant-keys.js';
import type { AtollNode } from '../node/atoll-node.js';
import type { LeaderChange } from '../api/node-api.js';
import { clusterAdminRefusal } from './admin-auth.js';
import type { AdminResponse, AdminServer } from './admin-server.js';
import { readinessProblems } from './admin-server.js';
import type { NodeStatus } from '../wire/status-codec.js';

/** How long a peer's status may take before it counts as not answering. */
const PEER_TIMEOUT_MS = 1_500;
/** Hot partitions and hot keys shown, and leader changes shown (newest first). */
const HOT_LIMIT = 10;
const CHANGES_SHOWN = 20;

export interface StatusPageNode {
  /** The node, or undefined while it opens (then /status.json answers 503). */
  readonly node: () => AtollNode | undefined;
  readonly serving: () => boolean;
  /** Peer `peer`'s own status, by `deadlineMs` (Peer.NodeStatus over the peer port). */
  readonly peerStatus: (peer: number, deadlineMs: number) => Promise<NodeStatus>;
}

const json = (status: number, body: unknown): AdminResponse => ({ status, contentType: 'application/json; charset=utf-8', body: JSON.stringify(body) });

/** Registers /, /status and /status.json on `admin`. */
export function addStatusPage(admin: AdminServer, source: StatusPageNode): void {
  const page = (): AdminResponse => ({ status: 200, contentType: 'text/html; charset=utf-8', body: STATUS_HTML });
  admin.route('/', page);
  admin.route('/status', page);
  admin.route('/status.json', (request) => statusJson(request, source));
}

/**
 * This node's own status: its /readyz verdict, its ClusterInfo with every tenant's hot keys, its
 * replicas' recent leader changes. Served to the cluster admin (/status.json) and to peers
 * (Peer.NodeStatus).
 */
export function ownNodeStatus(node: AtollNode, serving: boolean): NodeStatus {
  const problems = readinessProblems(serving, node.metricsView());
  return { nodeId: node.id, ready: problems.length === 0, problems, info: node.clusterInfoForStatus(), leaderChanges: node.recentLeaderChanges() };
}

async function statusJson(request: IncomingMessage, source: StatusPageNode): Promise<AdminResponse> {
  const node = source.node();
  if (node === undefined) return json(503, { error: 'the node is starting' });
  const refused = await clusterAdminRefusal(request, node, 'the status page');
  if (refused !== undefined) return refused;
  const own = ownNodeStatus(node, source.serving());
  const url = new URL(request.url ?? '/', 'http://admin');
  if (url.searchParams.get('scope') === 'node') return json(200, own);
  return json(200, await clusterStatus(own, source.peerStatus));
}

/** The whole cluster from this node's view plus every peer's own view. */
async function clusterStatus(own: NodeStatus, peerStatus: StatusPageNode['peerStatus']): Promise<unknown> {
  const info = own.info;
  const answers = new Map<number, NodeStatus>([[own.nodeId, own]]);
  const peers = info.nodes.filter((n) => n.id !== own.nodeId);
  const deadlineMs = Date.now() + PEER_TIMEOUT_MS;
  // A peer that does not answer in time (or answers nonsense) is shown unreachable.
  const peerAnswers = await Promise.all(peers.map((peer) => peerStatus(peer.id, deadlineMs).catch(() => undefined)));
  peers.forEach((peer, i) => {
    const answer = peerAnswers[i];
    if (answer !== undefined && answer.nodeId === peer.id) answers.set(peer.id, answer);
  });
  const leadersPerNode = new Map<number, number>(info.nodes.map((n) => [n.id, 0]));
  for (const partition of info.partitions) if (partition.leader !== 0) leadersPerNode.set(partition.leader, (leadersPerNode.get(partition.leader) ?? 0) + 1);
  const views = [...answers.values()].map((answer) => answer.info);
  const partitions = info.partitions.map((partition) => {
    // Commit index: the highest any answering replica knows; lag: how far the slowest answering
    // replica's applied index is behind it.
    let commitIndex = 0;
    let slowestApplied = Number.POSITIVE_INFINITY;
    for (const view of views) {
      const mine = view.partitions.find((p) => p.id === partition.id);
      if (mine === undefined || !partition.replicas.includes(view.nodeId)) continue;
      commitIndex = Math.max(commitIndex, mine.commitIndex);
      slowestApplied = Math.min(slowestApplied, mine.appliedIndex);
    }
    return {
      id: partition.id,
      rangeStart: partition.rangeStart,
      rangeEnd: partition.rangeEnd,
      leader: partition.leader,
      term: partition.term,
      replicas: partition.replicas,
      commitIndex,
      applyLag: Number.isFinite(slowestApplied) ? Math.max(0, commitIndex - slowestApplied) : null,
    };
  });
  const load = mergeClusterLoad(views, HOT_LIMIT);
  // The same change seen by several replicas is one change.
  const changes = new Map<string, LeaderChange & { seenBy: number }>();
  for (const answer of answers.values()) {
    for (const change of answer.leaderChanges) {
      const key = `${change.partition}/${change.to}/${change.term}`;
      const known = changes.get(key);
      if (known === undefined || change.atMs < known.atMs) changes.set(key, { ...change, seenBy: answer.nodeId });
    }
  }
  return {
    nodeId: own.nodeId,
    atMs: Date.now(),
    partitionCount: info.partitionCount,
    replicationFactor: info.replicationFactor,
    nodes: info.nodes.map((n) => {
      const answer = answers.get(n.id);
      return {
        id: n.id,
        address: n.address,
        adminAddress: n.adminAddress ?? '',
        reachable: answer !== undefined,
        ready: answer?.ready ?? false,
        problems: answer?.problems ?? ['did not answer'],
        leaders: leadersPerNode.get(n.id) ?? 0,
      };
    }),
    partitions,
    totalRequestsPerSecond: load.totalRequestsPerSecond,
    hotPartitions: load.partitions,
    // A cluster admin's hot keys are internal keys (a tenant tag before the user key): shown as
    // the tenant and the key the tenant knows.
    hotKeys: load.keys.map((hot) => {
      // No assertion here (toUserKey's): a key cut for the report may have lost its tag's end.
      const tenant = tenantOfInternalKey(hot.key);
      const tag = tenantTag(tenant);
      return { ...hot, tenant, key: tag !== '' && hot.key.startsWith(tag) ? hot.key.slice(tag.length) : hot.key };
    }),
    leaderChanges: [...changes.values()].sort((a, b) => b.atMs - a.atMs).slice(0, CHANGES_SHOWN),
  };
}

/** The page. Everything it shows comes from /status.json and is set with textContent. */
const STATUS_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Atoll status</title>
<style>
  body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5em; color: #1b2330; background: #f6f7f9; }
  h1 { font-size: 20px; margin: 0 0 .3em; }
  h2 { font-size: 15px; margin: 1.2em 0 .4em; }
  table { border-collapse: collapse; background: #fff; min-width: 20em; }
  th, td { border: 1px solid #d5d9e0; padding: 3px 8px; text-align: left; font-variant-numeric: tabular-nums; }
  th { background: #eef1f5; }
  .ok { color: #17743a; font-weight: 600; }
  .bad { color: #b3261e; font-weight: 600; }
  .muted { color: #667; }
  .grid { display: flex; flex-wrap: wrap; gap: 0 2.5em; }
  #token-form { background: #fff; border: 1px solid #d5d9e0; padding: 1em; max-width: 36em; }
  #token-form input { width: 28em; font-family: monospace; }
  code { font-size: 13px; }
</style>
</head>
<body>
<h1>Atoll cluster status</h1>
<div id="status-line" class="muted">loading…</div>
<form id="token-form" hidden>
  <p>This cluster has authentication on. Enter the cluster admin token (kept in this tab's sessionStorage only).</p>
  <p id="token-error" class="bad"></p>
  <input id="token-input" type="password" autocomplete="off" placeholder="atk_…">
  <button id="token-submit" type="submit">Show status</button>
</form>
<div id="content" hidden>
  <div class="grid">
    <section><h2>Nodes</h2><table id="nodes"><thead><tr><th>node</th><th>address</th><th>reachable</th><th>ready</th><th>leaders</th></tr></thead><tbody></tbody></table></section>
    <section><h2>Requests</h2><p>cluster total: <span id="total-rate">0</span> requests/s</p>
      <h2>Hottest partitions</h2><table id="hot-partitions"><thead><tr><th>partition</th><th>leader</th><th>req/s</th><th>share</th></tr></thead><tbody></tbody></table></section>
  </div>
  <h2>Partitions</h2>
  <table id="partitions"><thead><tr><th>partition</th><th>hash range</th><th>leader</th><th>term</th><th>replicas</th><th>commit</th><th>apply lag</th></tr></thead><tbody></tbody></table>
  <div class="grid">
    <section><h2>Hottest keys</h2><table id="hot-keys"><thead><tr><th>tenant</th><th>key</th><th>partition</th><th>req/s</th><th>share</th></tr></thead><tbody></tbody></table></section>
    <section><h2>Recent leader changes</h2><table id="leader-changes"><thead><tr><th>time</th><th>partition</th><th>from</th><th>to</th><th>term</th></tr></thead><tbody></tbody></table></section>
  </div>
</div>
<script>
(function () {
  'use strict';
  var POLL_MS = 1500;
  var TOKEN_KEY = 'atoll-admin-token';
  var form = document.getElementById('token-form');
  var content = document.getElementById('content');
  var statusLine = document.getElementById('status-line');
  var timer = null;

  function cell(row, text, className) {
    var td = document.createElement('td');
    td.textContent = String(text);
    if (className) td.className = className;
    row.appendChild(td);
    return td;
  }
  function fill(id, items, render) {
    var body = document.querySelector('#' + id + ' tbody');
    var rows = document.createDocumentFragment();
    items.forEach(function (item) { var tr = document.createElement('tr'); render(tr, item); rows.appendChild(tr); });
    body.replaceChildren(rows);
  }
  function nodeName(id) { return id === 0 ? 'none' : 'node ' + id; }
  function hex(n) { return '0x' + Number(n).toString(16).padStart(8, '0'); }
  function percent(x) { return (x * 100).toFixed(1) + '%'; }
  function rate(x) { return Number(x).toFixed(1); }

  function render(data) {
    form.hidden = true;
    content.hidden = false;
    statusLine.textContent = 'as seen by node ' + data.nodeId + ', updated ' + new Date(data.atMs).toLocaleTimeString() + ' (' + data.partitionCount + ' partitions, replication factor ' + data.replicationFactor + ')';
    statusLine.className = 'muted';
    fill('nodes', data.nodes, function (tr, n) {
      tr.dataset.node = n.id;
      cell(tr, nodeName(n.id));
      cell(tr, n.address);
      cell(tr, n.reachable ? 'yes' : 'no', n.reachable ? 'ok' : 'bad');
      var ready = cell(tr, n.ready ? 'yes' : 'no', n.ready ? 'ok' : 'bad');
      if (!n.ready) ready.title = n.problems.join('\\n');
      cell(tr, n.leaders).dataset.leaders = n.leaders;
    });
    fill('partitions', data.partitions, function (tr, p) {
      tr.dataset.partition = p.id;
      cell(tr, p.id);
      cell(tr, hex(p.rangeStart) + ' – ' + hex(p.rangeEnd));
      var leader = cell(tr, nodeName(p.leader), p.leader === 0 ? 'bad' : '');
      leader.dataset.leader = p.leader;
      cell(tr, p.term);
      cell(tr, p.replicas.join(', '));
      cell(tr, p.commitIndex);
      cell(tr, p.applyLag === null ? '?' : p.applyLag);
    });
    document.getElementById('total-rate').textContent = rate(data.totalRequestsPerSecond);
    fill('hot-partitions', data.hotPartitions, function (tr, p) {
      cell(tr, p.id); cell(tr, nodeName(p.leader)); cell(tr, rate(p.requestsPerSecond)); cell(tr, percent(p.share));
    });
    fill('hot-keys', data.hotKeys, function (tr, k) {
      cell(tr, k.tenant); cell(tr, k.key + (k.truncated ? '…' : '')); cell(tr, k.partition); cell(tr, rate(k.requestsPerSecond)); cell(tr, percent(k.share));
    });
    fill('leader-changes', data.leaderChanges, function (tr, c) {
      tr.dataset.partition = c.partition;
      cell(tr, new Date(c.atMs).toLocaleTimeString()); cell(tr, c.partition); cell(tr, nodeName(c.from)); cell(tr, nodeName(c.to)); cell(tr, c.term);
    });
  }

  function askForToken(message) {
    content.hidden = true;
    form.hidden = false;
    statusLine.textContent = 'authentication required';
    document.getElementById('token-error').textContent = message || '';
  }

  function poll() {
    clearTimeout(timer);
    var token = sessionStorage.getItem(TOKEN_KEY);
    var headers = token ? { authorization: 'Bearer ' + token } : {};
    var controller = new AbortController();
    var abort = setTimeout(function () { controller.abort(); }, 5000);
    fetch('/status.json', { headers: headers, cache: 'no-store', signal: controller.signal })
      .then(function (response) {
        if (response.status === 401 || response.status === 403) {
          return response.json().catch(function () { return {}; }).then(function (body) {
            if (token) sessionStorage.removeItem(TOKEN_KEY);
            askForToken(token ? (body.error || 'that token was refused') : '');
          });
        }
        if (!response.ok) throw new Error('HTTP ' + response.status);
        return response.json().then(function (data) { render(data); timer = setTimeout(poll, POLL_MS); });
      })
      .catch(function (error) {
        statusLine.textContent = 'cannot reach the node: ' + error.message + ' (retrying)';
        statusLine.className = 'bad';
        timer = setTimeout(poll, POLL_MS);
      })
      .finally(function () { clearTimeout(abort); });
  }

  form.addEventListener('submit', function (event) {
    event.preventDefault();
    var value = document.getElementById('token-input').value.trim();
    if (value) sessionStorage.setItem(TOKEN_KEY, value);
    document.getElementById('token-input').value = '';
    poll();
  });
  poll();
})();
</script>
</body>
</html>
`;
