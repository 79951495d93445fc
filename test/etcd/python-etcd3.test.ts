/**
 * Debian's python3-etcd3 (a client nobody here wrote, on Python's grpcio) against Atoll's etcd
 * port: put/get/range/delete, a transaction with compares, watches (from a revision and live),
 * leases and python-etcd3's locks, run by test/etcd/python_etcd3_client.py. The expected answers
 * are what the same script prints against a real etcd 3.4.
 *
 * Without a python3 that can import etcd3 a developer's run skips with the reason printed; a CI
 * run (CI set) fails.
 */
import { spawn, spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LocalCluster } from '../integration/local-cluster.js';

/** The first python3 that imports etcd3: Debian's (/usr/bin/python3) before whatever is on PATH. */
function pythonWithEtcd3(): { python?: string; reason?: string } {
  for (const python of ['/usr/bin/python3', 'python3']) {
    if (spawnSync(python, ['-c', 'import etcd3'], { encoding: 'utf8' }).status === 0) return { python };
  }
  const reason = 'no python3 can import etcd3 (apt-get install -y python3-etcd3)';
  if (process.env['CI']) throw new Error(`python3-etcd3 test: the client is required when CI is set, and ${reason}`);
  console.warn(`python3-etcd3 test skipped: ${reason}`);
  return { reason };
}

const found = pythonWithEtcd3();

function runScript(python: string, endpoint: string): Promise<{ stdout: string; stderr: string; status: number | null }> {
  const [host, port] = endpoint.split(':') as [string, string];
  return new Promise((resolve, reject) => {
    const child = spawn(python, [join(import.meta.dirname, 'python_etcd3_client.py'), host, port], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.on('error', reject);
    child.on('close', (status) => {
      clearTimeout(timer);
      resolve({ stdout, stderr, status });
    });
  });
}

describe.skipIf(found.python === undefined)('python3-etcd3 against Atoll', () => {
  let cluster: LocalCluster | undefined;

  beforeAll(async () => {
    cluster = await LocalCluster.start({ partitions: 2, etcd: true });
  }, 60_000);

  afterAll(async () => {
    await cluster?.stop();
  });

  it('answers put/get/range/txn/watch/lease/lock as etcd does', async () => {
    const result = await runScript(found.python!, cluster!.etcdAddresses.get(3) as string);
    expect(result.status, result.stderr).toBe(0);
    const answers: unknown = JSON.parse(result.stdout);
    expect(answers).toEqual({
      get: ['1', 'py/a', 1],
      get_missing: null,
      prefix: [['py/a', '1'], ['py/b', '2'], ['py/c', '3']],
      range: [['py/a', '1'], ['py/b', '2']],
      all_sorted_desc: ['py/c', 'py/b', 'py/a', 'other'],
      delete: true,
      delete_missing: false,
      txn_success: [true, [['2', 'py/b']]],
      txn_failure: [false, '10', 'yes'],
      watch: [['PutEvent', 'w/1', 'one'], ['PutEvent', 'w/2', 'two'], ['DeleteEvent', 'w/1', '']],
      watch_live: ['now'],
      lease_granted_ttl: 30,
      lease_keys: ['leased/k'],
      lease_refresh_ttl: 30,
      leased_value_meta_lease: true,
      after_revoke: null,
      revoked_remaining_ttl: -1,
      lock_first: true,
      lock_second_while_held: 'refused (retry wait reached)',
      lock_first_is_acquired: true,
      lock_second_is_acquired_while_held: false,
      lock_second_after_release: true,
      lock_second_is_acquired: true,
    });
  });
});
