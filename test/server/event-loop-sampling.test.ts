/**
 * Idle wakeups (issue 18): the event-loop lag histogram of the node's process metrics samples with
 * a libuv timer; prom-client's default resolution (10 ms) woke an idle node 100 times a second.
 * The node's registry asks for 100 ms.
 */
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import { PrometheusNodeMetrics } from '../../src/server/node-metrics.js';

describe('process metrics', () => {
  it('sample the event-loop lag every 100 ms, not every 10 ms', () => {
    const perfHooks = createRequire(import.meta.url)('node:perf_hooks') as typeof import('node:perf_hooks');
    const original = perfHooks.monitorEventLoopDelay;
    const resolutions: Array<number | undefined> = [];
    perfHooks.monitorEventLoopDelay = (options) => {
      resolutions.push(options?.resolution);
      return original(options);
    };
    try {
      new PrometheusNodeMetrics({ processMetrics: true });
    } finally {
      perfHooks.monitorEventLoopDelay = original;
    }
    expect(resolutions).toEqual([100]);
  });
});
