#!/usr/bin/env node
/**
 * Prints the side-by-side comparison from a directory of `atoll bench --json` files (one per
 * system, workload, concurrency and round; scripts/bench-vs-etcd.sh writes them):
 *
 *   node dist/src/bench/compare-cli.js RESULTS_DIR [--markdown FILE.md] [--out FILE.svg]
 *
 * One table per workload with the systems (atoll, atoll-etcd when measured, etcd) and each one's
 * ratio over etcd, then one line per workload, concurrency and system measured against etcd:
 * `ratio put c=64 atoll/etcd=2.31`, `ratio put c=64 atoll-etcd/etcd=0.60`. Exit 2 when there is
 * nothing to compare.
 */
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import type { BenchJson } from './bench-report.js';
import { compareReports, comparisonPanels, comparisonTables, ratioLines } from './compare.js';
import { latencySvg } from './latency-svg.js';

const { values, positionals } = parseArgs({ allowPositionals: true, options: { markdown: { type: 'string' }, out: { type: 'string' } } });
const directory = positionals[0];
if (directory === undefined) {
  process.stderr.write('usage: compare-cli.js RESULTS_DIR [--markdown FILE.md] [--out FILE.svg]\n');
  process.exit(2);
}

const files = readdirSync(directory)
  .filter((name) => name.endsWith('.json'))
  .sort();
const reports: BenchJson[] = [];
for (const name of files) {
  try {
    reports.push(JSON.parse(readFileSync(join(directory, name), 'utf8')) as BenchJson);
  } catch (error) {
    // A run that was cut short leaves an empty or partial file: compare the rest.
    process.stderr.write(`compare: skipping ${name}: ${error instanceof Error ? error.message : String(error)}\n`);
  }
}
if (reports.length === 0) {
  process.stderr.write(`compare: no result files in ${directory}\n`);
  process.exit(2);
}
const comparison = compareReports(reports);
const output = [comparison.settings, '', ...comparisonTables(comparison), ...ratioLines(comparison)];
process.stdout.write(`${output.join('\n')}\n`);
if (values.markdown !== undefined) {
  writeFileSync(values.markdown, `${[comparison.settings, '', ...comparisonTables(comparison, 'markdown'), '```', ...ratioLines(comparison), '```'].join('\n')}\n`);
}
if (values.out !== undefined) {
  writeFileSync(values.out, latencySvg('Atoll (solid) and etcd\'s client against etcd and Atoll\'s etcd port (dashed): latency by percentile', comparisonPanels(comparison)));
  process.stderr.write(`compare: latency distributions written to ${values.out}\n`);
}
