/**
 * deploy/prometheus-alerts.yml is valid for Prometheus (`promtool check rules`) and its alerts fire
 * as intended on synthetic series (`promtool test rules deploy/prometheus-alerts.test.yml`). That
 * every metric the rules and the dashboard name is exposed by a live node is checked in
 * test/integration/admin-port.test.ts.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { requirePrometheusTool } from '../prometheus-env.js';

const root = join(import.meta.dirname, '..', '..');
const promtool = requirePrometheusTool('promtool', 'deploy monitoring');

function run(...args: string[]): string {
  if (!promtool.available) throw new Error('unreachable');
  return execFileSync(promtool.path, args, { cwd: root, encoding: 'utf8', timeout: 30_000 });
}

describe.skipIf(!promtool.available)('Prometheus alert rules', () => {
  it('pass promtool check rules', () => {
    expect(run('check', 'rules', 'deploy/prometheus-alerts.yml')).toMatch(/SUCCESS: 5 rules found/);
  });

  it('fire as their unit tests expect', () => {
    expect(run('test', 'rules', 'deploy/prometheus-alerts.test.yml')).toMatch(/SUCCESS/);
  });
});

describe('Grafana dashboard', () => {
  it('is JSON with Prometheus queries in every panel', () => {
    const dashboard = JSON.parse(readFileSync(join(root, 'deploy/grafana-dashboard.json'), 'utf8')) as { panels: Array<{ title: string; targets: Array<{ expr: string }> }> };
    expect(dashboard.panels.length).toBeGreaterThan(10);
    for (const panel of dashboard.panels) expect(panel.targets.length, panel.title).toBeGreaterThan(0);
  });
});
