/**
 * A registry's exposition, rendered in turns of the event loop. prom-client's `metrics()` starts
 * every family's collection at once and formats them all before it returns to the loop: on a node
 * of 64 partitions that held the loop 10 ms and more at every scrape, idle (1,200 lines), longer
 * under load, and every request on the node waited behind it. Here families render one after
 * another, and past TURN_MS of rendering the next family waits for the loop's next turn, so a
 * scrape holds the loop for about TURN_MS plus one family at a time.
 *
 * The text is exactly prom-client's (families in registration order, separated by a blank line),
 * but families are read at slightly different moments: Prometheus' exposition makes no promise of
 * one instant across families either.
 */
import { Registry } from 'prom-client';

/** How long a scrape renders before it lets the loop turn. */
export const TURN_MS = 2;

export async function renderExposition(registry: Registry, turnMs = TURN_MS): Promise<string> {
  // OpenMetrics (not what the node serves) renames counters as it goes: prom-client's own path.
  if (registry.contentType !== Registry.PROMETHEUS_CONTENT_TYPE) return registry.metrics();
  const families: string[] = [];
  let turnStart = performance.now();
  for (const metric of registry.getMetricsAsArray()) {
    families.push(await registry.getSingleMetricAsString(metric.name));
    if (performance.now() - turnStart >= turnMs) {
      await new Promise<void>((resolve) => setImmediate(resolve));
      turnStart = performance.now();
    }
  }
  return `${families.join('\n\n')}\n`;
}
