/**
 * Samples what a node shows from outside while the hostile load run (hostile-load.ts) goes on,
 * once a second per node:
 * - its resident memory, from /proc/PID/status (VmRSS; Linux) and from the admin port's
 *   process_resident_memory_bytes;
 * - its event-loop stalls, from the admin port: the lag gauge nodejs_eventloop_lag_seconds (how
 *   late a setImmediate ran at the previous scrape) and the maximum of the lag histogram,
 *   nodejs_eventloop_lag_max_seconds (prom-client's monitorEventLoopDelay, reset by each scrape,
 *   so the maximum over the samples is the longest it saw over the run; a scrape that failed loses
 *   nothing, the next one reports it). The histogram records the time between two runs of its
 *   timer, its 100 ms interval included (EVENT_LOOP_SAMPLE_MS: an idle node shows 100 ms), so
 *   its maximum less that interval is the longest its timer ran late: no more than the longest
 *   stall, and all of it when the timer fell due as the stall began (over many stalls, the
 *   longest). After a reset the timer's first run only restarts its clock, so a stall that ends
 *   it is not seen; the /livez probe covers that;
 * - how long /livez takes to answer, as a probe would see it;
 * - the bytes it holds for watch clients (atoll_memory_watch_bytes) and its elections;
 * - the CPU time it used (/proc/PID/stat), as a percentage of one core.
 * Requests go on connections of their own (no keep-alive: the admin port closes idle connections
 * to make room when hostile ones fill it) from the default source address, and a node's next
 * sample is skipped while its last one is still out.
 */
import { request } from 'node:http';
import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { countOutcome, outcomeOf, type Outcomes } from './hostile-attacks.js';
import { EVENT_LOOP_SAMPLE_MS } from '../limits.js';
import { processCpuSeconds } from './process-cpu.js';

/** What one node showed over the run. */
export interface NodeObservation {
  readonly id: number;
  readonly pid: number | undefined;
  /** The largest VmRSS read from /proc, and how many reads there were. */
  peakRssBytes: number;
  rssSamples: number;
  /** The largest process_resident_memory_bytes the admin port reported. */
  peakRssMetricBytes: number;
  /** The largest lag gauge and histogram maximum the admin port reported, in ms (the histogram's as reported: its sampling interval included). */
  lagGaugeMaxMs: number;
  lagHistogramMaxMs: number;
  metricsSamples: number;
  metricsFailures: Outcomes;
  /** The slowest /livez answer (ms), and the probes that got no 200 answer within the timeout. */
  livezMaxMs: number;
  livezProbes: number;
  livezFailures: Outcomes;
  peakWatchBytes: number;
  /** atoll_elections_total at the first and the last sample. */
  electionsFirst: number | undefined;
  electionsLast: number | undefined;
  /** Sample rounds skipped because the previous one was still out. */
  skippedRounds: number;
  /** CPU seconds used and the time (performance.now() ms) at the first and the last sample. */
  cpuFirst: { seconds: number; atMs: number } | undefined;
  cpuLast: { seconds: number; atMs: number } | undefined;
}

/** CPU use between two readings, in percent of one core (undefined without two readings). */
function cpuPercentBetween(first: { seconds: number; atMs: number } | undefined, last: { seconds: number; atMs: number } | undefined): number | undefined {
  if (first === undefined || last === undefined || last.atMs <= first.atMs) return undefined;
  const percent = (100 * (last.seconds - first.seconds)) / ((last.atMs - first.atMs) / 1000);
  return Math.round(percent * 10) / 10;
}

/** The node's average CPU use over the samples, in percent of one core. */
export function cpuPercentOf(node: NodeObservation): number | undefined {
  return cpuPercentBetween(node.cpuFirst, node.cpuLast);
}

/** The lag histogram's sampling interval (ms), which each value it reports includes. */
export const lagHistogramIntervalMs = EVENT_LOOP_SAMPLE_MS;

/** A stall from the two figures: the lag gauge, or the histogram's maximum less its sampling interval (how late its timer ran). */
export function stallMsOf(gaugeMs: number, histogramMaxMs: number): number {
  return Math.max(gaugeMs, histogramMaxMs - lagHistogramIntervalMs, 0);
}

/** The longest event-loop stall a node showed. */
export function longestStallMs(node: NodeObservation): number {
  return stallMsOf(node.lagGaugeMaxMs, node.lagHistogramMaxMs);
}

/** The largest resident memory seen either way. */
export function peakRssOf(node: NodeObservation): number {
  return Math.max(node.peakRssBytes, node.peakRssMetricBytes);
}

interface Answer {
  readonly status: number;
  readonly body: string;
  readonly ms: number;
}

/** One GET to an admin address on a connection of its own; rejects after `timeoutMs`. */
function adminGet(address: string, path: string, timeoutMs: number): Promise<Answer> {
  const colon = address.lastIndexOf(':');
  const startedMs = performance.now();
  return new Promise((resolveAnswer, reject) => {
    const outgoing = request({ host: address.slice(0, colon), port: Number(address.slice(colon + 1)), path, agent: false }, (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () => resolveAnswer({ status: response.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8'), ms: performance.now() - startedMs }));
      response.on('error', reject);
    });
    outgoing.setTimeout(timeoutMs, () => outgoing.destroy(Object.assign(new Error(`no answer within ${timeoutMs} ms`), { code: 'TIMEOUT' })));
    outgoing.on('error', reject);
    outgoing.end();
  });
}

/** The first sample of each named metric in a Prometheus text page. */
export function metricValues(page: string, names: readonly string[]): Map<string, number> {
  const values = new Map<string, number>();
  for (const line of page.split('\n')) {
    if (line.startsWith('#')) continue;
    const name = line.slice(0, line.search(/[ {]/));
    if (!names.includes(name) || values.has(name)) continue;
    const value = Number(line.slice(line.lastIndexOf(' ') + 1));
    if (Number.isFinite(value)) values.set(name, value);
  }
  return values;
}

function vmRssBytes(pid: number): number | undefined {
  try {
    const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match === null ? undefined : Number(match[1]) * 1024;
  } catch {
    return undefined; // Not Linux, or the process is gone.
  }
}

const sampledMetrics = ['nodejs_eventloop_lag_seconds', 'nodejs_eventloop_lag_max_seconds', 'process_resident_memory_bytes', 'atoll_memory_watch_bytes', 'atoll_elections_total'];

export class NodeSampler {
  readonly observation: NodeObservation;
  /** The longest stall and the latest RSS since the last call of takeWindow (for progress lines). */
  private windowStallMs = 0;
  private latestRssBytes = 0;
  private windowCpu: { seconds: number; atMs: number } | undefined;
  private busy = false;

  constructor(
    id: number,
    pid: number | undefined,
    private readonly adminAddress: string,
    private readonly timeoutMs = 2_000,
  ) {
    this.observation = {
      id,
      pid,
      peakRssBytes: 0,
      rssSamples: 0,
      peakRssMetricBytes: 0,
      lagGaugeMaxMs: 0,
      lagHistogramMaxMs: 0,
      metricsSamples: 0,
      metricsFailures: {},
      livezMaxMs: 0,
      livezProbes: 0,
      livezFailures: {},
      peakWatchBytes: 0,
      electionsFirst: undefined,
      electionsLast: undefined,
      skippedRounds: 0,
      cpuFirst: undefined,
      cpuLast: undefined,
    };
  }

  /** One round: RSS, a scrape and a /livez probe. Skipped while the last round is still out. */
  async sample(): Promise<void> {
    const node = this.observation;
    if (this.busy) {
      node.skippedRounds++;
      return;
    }
    this.busy = true;
    try {
      const cpuSeconds = node.pid === undefined ? undefined : processCpuSeconds(node.pid);
      if (cpuSeconds !== undefined) {
        node.cpuLast = { seconds: cpuSeconds, atMs: performance.now() };
        node.cpuFirst ??= node.cpuLast;
        this.windowCpu ??= node.cpuLast;
      }
      const rss = node.pid === undefined ? undefined : vmRssBytes(node.pid);
      if (rss !== undefined) {
        node.rssSamples++;
        node.peakRssBytes = Math.max(node.peakRssBytes, rss);
        this.latestRssBytes = rss;
      }
      await Promise.all([this.scrape(), this.probe()]);
    } finally {
      this.busy = false;
    }
  }

  private async scrape(): Promise<void> {
    const node = this.observation;
    try {
      const answer = await adminGet(this.adminAddress, '/metrics', this.timeoutMs);
      if (answer.status !== 200) {
        countOutcome(node.metricsFailures, `HTTP ${answer.status}`);
        return;
      }
      const values = metricValues(answer.body, sampledMetrics);
      node.metricsSamples++;
      const gaugeMs = (values.get('nodejs_eventloop_lag_seconds') ?? 0) * 1000;
      const histogramMs = (values.get('nodejs_eventloop_lag_max_seconds') ?? 0) * 1000;
      node.lagGaugeMaxMs = Math.max(node.lagGaugeMaxMs, gaugeMs);
      node.lagHistogramMaxMs = Math.max(node.lagHistogramMaxMs, histogramMs);
      this.windowStallMs = Math.max(this.windowStallMs, stallMsOf(gaugeMs, histogramMs));
      const rss = values.get('process_resident_memory_bytes') ?? 0;
      node.peakRssMetricBytes = Math.max(node.peakRssMetricBytes, rss);
      if (node.rssSamples === 0) this.latestRssBytes = rss;
      node.peakWatchBytes = Math.max(node.peakWatchBytes, values.get('atoll_memory_watch_bytes') ?? 0);
      const elections = values.get('atoll_elections_total');
      if (elections !== undefined) {
        node.electionsFirst ??= elections;
        node.electionsLast = elections;
      }
    } catch (error) {
      countOutcome(node.metricsFailures, outcomeOf(error));
    }
  }

  private async probe(): Promise<void> {
    const node = this.observation;
    node.livezProbes++;
    try {
      const answer = await adminGet(this.adminAddress, '/livez', this.timeoutMs);
      node.livezMaxMs = Math.max(node.livezMaxMs, answer.ms);
      if (answer.status !== 200) countOutcome(node.livezFailures, `HTTP ${answer.status}`);
    } catch (error) {
      node.livezMaxMs = Math.max(node.livezMaxMs, this.timeoutMs);
      countOutcome(node.livezFailures, outcomeOf(error));
    }
  }

  /**
   * Starts the run after a baseline sample: forgets the lag and /livez figures seen so far. The
   * baseline's lag histogram covers everything since the node started (the cluster's start and the
   * run's setup, which writes the watched history), not the run.
   */
  startRun(): void {
    this.observation.lagGaugeMaxMs = 0;
    this.observation.lagHistogramMaxMs = 0;
    this.observation.livezMaxMs = 0;
    this.takeWindow();
  }

  /** The longest stall seen since the last call, the latest RSS and the CPU use since the last call; starts a new window. */
  takeWindow(): { stallMs: number; rssBytes: number; cpuPercent: number | undefined } {
    const window = { stallMs: this.windowStallMs, rssBytes: this.latestRssBytes, cpuPercent: cpuPercentBetween(this.windowCpu, this.observation.cpuLast) };
    this.windowStallMs = 0;
    this.windowCpu = this.observation.cpuLast;
    return window;
  }
}
