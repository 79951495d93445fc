/**
 * The CLI over TLS to IP endpoints prints nothing on stderr (issue 22): grpc-js's own credentials
 * sent the IP address as the TLS server name, and Node printed its DEP0123 deprecation warning on
 * every call. The certificate is still checked: against its IP SANs for an IP endpoint, against a
 * host name with SNI for a host name endpoint or --tls-server-name, and a wrong name is refused.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LocalCluster } from '../integration/local-cluster.js';
import { runAtollBinary } from './atoll-binary.js';

const devCerts = resolve(import.meta.dirname, '../../scripts/dev-certs.sh');

let certsDir: string;
let cluster: LocalCluster;
let port: string;

beforeAll(async () => {
  certsDir = mkdtempSync(join(tmpdir(), 'atoll-cli-certs-'));
  execFileSync('bash', [devCerts, certsDir], { stdio: 'pipe' });
  cluster = await LocalCluster.start({ nodes: 1, partitions: 2, tls: { certsDir }, extraArgs: ['--replication-factor', '1'] });
  port = (cluster.endpoints[0] as string).split(':').at(-1) as string;
}, 60_000);

afterAll(async () => {
  await cluster?.stop();
  rmSync(certsDir, { recursive: true, force: true });
});

describe('atoll over TLS', () => {
  it('a put and a get via 127.0.0.1 print nothing on stderr (no DEP0123)', async () => {
    const ca = join(certsDir, 'ca.pem');
    const put = await runAtollBinary(['--endpoints', `127.0.0.1:${port}`, '--tls-ca', ca, 'put', 'tls/ip', 'v']);
    expect(put.stderr).toBe('');
    expect(put.code).toBe(0);
    const got = await runAtollBinary(['--endpoints', `127.0.0.1:${port}`, 'get', 'tls/ip'], { env: { ATOLL_TLS_CA: ca } });
    expect(got).toMatchObject({ code: 0, stdout: 'v\n', stderr: '' });
    const health = await runAtollBinary(['--tls-ca', ca, 'health', `127.0.0.1:${port}`]);
    expect(health).toMatchObject({ code: 0, stderr: '' });
  });

  it('host names and --tls-server-name still verify the certificate', async () => {
    const ca = join(certsDir, 'ca.pem');
    expect(await runAtollBinary(['--endpoints', `localhost:${port}`, '--tls-ca', ca, 'get', 'tls/ip'])).toMatchObject({ code: 0, stdout: 'v\n', stderr: '' });
    const named = await runAtollBinary(['--endpoints', `127.0.0.1:${port}`, '--tls-ca', ca, '--tls-server-name', 'node1', 'get', 'tls/ip']);
    expect(named).toMatchObject({ code: 0, stdout: 'v\n', stderr: '' });
    const namedByIp = await runAtollBinary(['--endpoints', `localhost:${port}`, '--tls-ca', ca, '--tls-server-name', '127.0.0.1', 'get', 'tls/ip']);
    expect(namedByIp).toMatchObject({ code: 0, stdout: 'v\n', stderr: '' });
    const wrongName = await runAtollBinary(['--endpoints', `127.0.0.1:${port}`, '--tls-ca', ca, '--tls-server-name', 'elsewhere.example', '--timeout', '1500', 'get', 'tls/ip']);
    expect(wrongName.code).toBe(2);
    expect(wrongName.stderr).toMatch(/^error UNAVAILABLE: /);
  });
});
