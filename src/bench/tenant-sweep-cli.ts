#!/usr/bin/env node
/**
 * The many-tenant sweep's two helpers (scripts/bench-vs-etcd.sh runs them):
 *
 *   node dist/src/bench/tenant-sweep-cli.js tokens --endpoints E --admin-token-file F --count N --out FILE
 *     creates N readwrite tokens, tenants bench-tenant-0 ... bench-tenant-<N-1>, and writes them
 *     one a line to FILE (mode 0600): `atoll bench --etcd-password-file FILE` gives tenant i line i.
 *   node dist/src/bench/tenant-sweep-cli.js report DIR [--markdown FILE.md]
 *     prints the sweep of the `atoll bench --json` files in DIR (tenant-sweep.ts): one table, then
 *     one line per tenant count and system. Exit 2 when there is nothing to report.
 */
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { AtollClient } from '../client/index.js';
import type { BenchJson } from './bench-report.js';
import { sweepLines, sweepOf, sweepTable } from './tenant-sweep.js';

const usage = 'usage: tenant-sweep-cli.js tokens --endpoints E --admin-token-file F --count N --out FILE | report DIR [--markdown FILE.md]';

function fail(message: string): never {
  process.stderr.write(`${message}\n`);
  process.exit(2);
}

async function tokens(args: string[]): Promise<void> {
  const { values } = parseArgs({ args, options: { endpoints: { type: 'string' }, 'admin-token-file': { type: 'string' }, count: { type: 'string' }, out: { type: 'string' } } });
  const count = Number(values.count);
  if (values.endpoints === undefined || values['admin-token-file'] === undefined || values.out === undefined || !Number.isSafeInteger(count) || count < 1) fail(usage);
  const token = readFileSync(values['admin-token-file'], 'utf8').trim();
  const client = new AtollClient({ endpoints: values.endpoints.split(','), defaultTimeoutMs: 10_000, token });
  const created: string[] = [];
  try {
    for (let index = 0; index < count; index++) {
      const answer = await client.authCall('CreateToken', { tenant: `bench-tenant-${index}`, role: 'readwrite', name: 'bench:etcd tenant sweep' });
      created.push(String(answer['token']));
    }
  } finally {
    client.close();
  }
  writeFileSync(values.out, `${created.join('\n')}\n`, { mode: 0o600 });
}

function report(args: string[]): void {
  const { values, positionals } = parseArgs({ args, allowPositionals: true, options: { markdown: { type: 'string' } } });
  const directory = positionals[0] ?? fail(usage);
  const reports: BenchJson[] = [];
  for (const name of readdirSync(directory).filter((file) => file.endsWith('.json')).sort()) {
    try {
      reports.push(JSON.parse(readFileSync(join(directory, name), 'utf8')) as BenchJson);
    } catch (error) {
      // A run that was cut short leaves an empty or partial file: report the rest.
      process.stderr.write(`tenant sweep: skipping ${name}: ${error instanceof Error ? error.message : String(error)}\n`);
    }
  }
  if (reports.length === 0) fail(`tenant sweep: no result files in ${directory}`);
  const sweep = sweepOf(reports);
  const title = `### Many tenants (${sweep.workload}, c=${sweep.concurrency}, workers spread over the tenants; etcd: as many key prefixes)`;
  process.stdout.write(`\n${title}\n\n${sweepTable(sweep).join('\n')}\n\n${sweepLines(sweep).join('\n')}\n`);
  if (values.markdown !== undefined) writeFileSync(values.markdown, `${title}\n\n${sweepTable(sweep, 'markdown').join('\n')}\n\n\`\`\`\n${sweepLines(sweep).join('\n')}\n\`\`\`\n`);
}

const [command, ...rest] = process.argv.slice(2);
if (command === 'tokens') await tokens(rest);
else if (command === 'report') report(rest);
else fail(usage);
