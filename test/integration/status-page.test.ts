/**
 * The status page (src/server/status-page.ts) in a real browser: headless Chromium (the system's
 * /usr/bin/chromium, driven through playwright-core; never a downloaded browser) against a real
 * three-node cluster with authentication on. The page first asks for the admin token, then shows
 * every partition and its current leader; after the leader of a partition is killed, the page's
 * leader cell changes and a leader change from the killed node appears. Saves screenshots to
 * test-artifacts/. Skips with the reason printed when chromium is missing, unless CI is set.
 */
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AtollClient } from '../../src/client/index.js';
import { newToken } from '../../src/tenancy/token.js';
import { LocalCluster } from './local-cluster.js';

const PARTITIONS = 4;
const CHROMIUM = process.env['CHROMIUM_PATH'] ?? '/usr/bin/chromium';
const available = existsSync(CHROMIUM);
if (!available) {
  if (process.env['CI'] === 'true' || process.env['CI'] === '1') throw new Error(`the status page test needs chromium at ${CHROMIUM} under CI (.ci/run installs Debian's chromium)`);
  console.warn(`status-page test skipped: no chromium at ${CHROMIUM} (apt-get install chromium, or set CHROMIUM_PATH)`);
}
const artifacts = join(import.meta.dirname, '..', '..', 'test-artifacts');

/** Partition id -> the node its leader cell names (0: none), as the page shows it. */
async function leadersOnPage(page: Page): Promise<Map<number, number>> {
  const rows = await page.$$eval('#partitions tbody tr', (trs) => trs.map((tr) => [Number(tr.getAttribute('data-partition')), Number(tr.querySelector('[data-leader]')?.getAttribute('data-leader'))]));
  return new Map(rows as Array<[number, number]>);
}

describe.skipIf(!available)('status page in headless Chromium', () => {
  let cluster: LocalCluster;
  let browser: Browser;
  let work: string;
  const token = newToken();

  beforeAll(async () => {
    work = mkdtempSync(join(tmpdir(), 'atoll-status-'));
    const file = join(work, 'admin-token');
    writeFileSync(file, `${token}\n`, { mode: 0o600 });
    [cluster, browser] = await Promise.all([
      LocalCluster.start({ partitions: PARTITIONS, extraArgs: ['--admin-token-file', file] }),
      chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'], timeout: 20_000 }),
    ]);
    mkdirSync(artifacts, { recursive: true });
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await cluster?.stop();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  it('refuses /status.json without the cluster admin token (401) or with a tenant admin\'s (403), and serves it with the token', async () => {
    const address = cluster.adminAddresses.get(1) as string;
    const json = (authorization?: string): Promise<Response> =>
      fetch(`http://${address}/status.json`, { headers: authorization ? { authorization } : {}, signal: AbortSignal.timeout(5_000) });
    expect((await json()).status).toBe(401);
    expect((await json(`Bearer ${newToken()}`)).status).toBe(401);
    // A tenant's admin is not the cluster admin: the page would show other tenants' keys.
    const admin = new AtollClient({ endpoints: cluster.endpoints, defaultTimeoutMs: 5_000, token });
    try {
      const tenantAdmin = String((await admin.authCall('CreateToken', { tenant: 'acme', role: 'admin', name: 'acme-admin' }))['token']);
      expect((await json(`Bearer ${tenantAdmin}`)).status).toBe(403);
    } finally {
      await admin.close();
    }
    const ok = await json(`Bearer ${token}`);
    expect(ok.status).toBe(200);
    const body = (await ok.json()) as { partitions: unknown[]; nodes: Array<{ reachable: boolean }> };
    expect(body.partitions).toHaveLength(PARTITIONS);
    expect(body.nodes.map((n) => n.reachable)).toEqual([true, true, true]);
    // The page itself names no data: it is served to anyone.
    const html = await fetch(`http://${address}/`, { signal: AbortSignal.timeout(5_000) });
    expect(html.status).toBe(200);
    expect(html.headers.get('content-type')).toContain('text/html');
  });

  it('asks for the token, shows every partition and its leader, and follows a leader kill', async () => {
    // Generate a little load so the hot partitions and keys have rows (and the screenshot shows them).
    const client = new AtollClient({ endpoints: cluster.endpoints, defaultTimeoutMs: 5_000, token });
    for (let i = 0; i < 60; i++) await client.put(i % 3 === 0 ? 'cart:<b>hot</b>' : `user:${i}`, `v${i}`);
    const page = await browser.newPage({ viewport: { width: 1200, height: 900 } });
    try {
      // Watch the page from node 1; the victim is the leader of some partition other than node 1.
      await page.goto(`http://${cluster.adminAddresses.get(1)}/status`, { timeout: 10_000 });
      await page.locator('#token-form').waitFor({ state: 'visible', timeout: 10_000 });
      expect(await page.locator('#content').isHidden()).toBe(true);
      await page.locator('#token-input').fill(token);
      await page.locator('#token-submit').click();
      await page.locator('#content').waitFor({ state: 'visible', timeout: 10_000 });
      expect(await page.locator('#token-form').isHidden()).toBe(true);

      // Every partition, each with the leader the cluster reports (leaders may still settle: wait).
      let victim = 0;
      let watched = -1;
      const deadline = Date.now() + 20_000;
      while (Date.now() < deadline) {
        const shown = await leadersOnPage(page);
        const info = await cluster.clusterInfoOf(1);
        const truth = new Map(info.partitions.map((p) => [Number(p.id), Number(p.leader)]));
        if (shown.size === PARTITIONS && [...truth].every(([id, leader]) => leader !== 0 && shown.get(id) === leader)) {
          const moved = [...truth].find(([, leader]) => leader !== 1);
          if (moved !== undefined) [watched, victim] = moved;
          break;
        }
        await page.waitForTimeout(300);
      }
      expect([...(await leadersOnPage(page)).keys()].sort()).toEqual([...Array(PARTITIONS).keys()]);
      // Leaderships settle on their preferred nodes, spread over the three: some partition is led
      // by a node other than node 1 (whose page we watch).
      expect(victim).not.toBe(0);
      expect(await page.locator('#nodes tbody tr').count()).toBe(3);
      // Keys are user data rendered as text: the hot key shows literally, no element made of it.
      await expect.poll(() => page.locator('#hot-keys tbody').textContent(), { timeout: 10_000, interval: 300 }).toContain('cart:<b>hot</b>');
      expect(await page.locator('#hot-keys b').count()).toBe(0);
      await page.screenshot({ path: join(artifacts, 'status-page.png'), fullPage: true });

      await cluster.kill(victim);
      // The leader cell of the watched partition moves to a live node, and the change from the
      // victim shows up in the recent leader changes.
      const leaderCell = page.locator(`#partitions tbody tr[data-partition="${watched}"] [data-leader]`);
      // Between the two the page may show no leader (0) while the election runs: the poll waits for
      // a live node's id, not merely for the victim's to go (a CI run caught the page at 0).
      const survivors = [...cluster.addresses.keys()].filter((id) => id !== victim);
      await expect.poll(async () => survivors.includes(Number(await leaderCell.getAttribute('data-leader'))), { timeout: 25_000, interval: 300 }).toBe(true);
      const change = page.locator(`#leader-changes tbody tr[data-partition="${watched}"]`).filter({ hasText: `node ${victim}` });
      await change.first().waitFor({ state: 'visible', timeout: 10_000 });
      // The killed node shows unreachable.
      await expect.poll(async () => page.locator(`#nodes tbody tr[data-node="${victim}"] td`).nth(2).textContent(), { timeout: 10_000, interval: 300 }).toBe('no');
      await page.screenshot({ path: join(artifacts, 'status-page-after-kill.png'), fullPage: true });
    } finally {
      await page.close();
      await client.close();
    }
  }, 60_000);
});
