/**
 * `atoll auth ...`: tokens, quotas and usage of a cluster with authentication (docs/security.md).
 * Every command but `new-admin-token` calls the Auth service with the caller's --token.
 */
import { InvalidArgumentError, type Command } from 'commander';
import type { AtollClient } from '../client/index.js';
import { newToken } from '../tenancy/token.js';
import { json } from './format.js';

type Print = (line: string) => void;
type Action = (client: AtollClient, print: Print, globals: { json?: boolean }) => Promise<number>;
type Act = (work: (...args: unknown[]) => Action) => (...args: unknown[]) => Promise<void>;

interface TokenInfoMessage {
  id: string;
  tenant: string;
  role: string;
  name: string;
  createdAtMs: string;
  revoked: boolean;
}

function tokenLine(info: TokenInfoMessage): string {
  const created = new Date(Number(info.createdAtMs)).toISOString();
  return `${info.id}  ${info.tenant.padEnd(16)} ${info.role.padEnd(9)} ${info.revoked ? 'revoked' : 'active '}  ${created}  ${info.name}`;
}

function count(name: string) {
  return (text: string): number => {
    const value = Number(text);
    if (!/^\d+$/.test(text) || !Number.isSafeInteger(value)) throw new InvalidArgumentError(`${name} must be a non-negative integer`);
    return value;
  };
}

export function addAuthCommands(program: Command, act: Act, out: Print): void {
  const auth = program.command('auth').description('tokens, quotas and usage (clusters started with --admin-token-file)');
  auth
    .command('new-admin-token')
    .description('print a fresh random token to start a cluster with (atoll-server --admin-token-file)')
    .action(() => out(newToken()));
  auth
    .command('whoami')
    .description("show the tenant and role of this CLI's token")
    .action(
      act(() => async (client, print, globals) => {
        const who = await client.authCall('WhoAmI');
        print(globals.json === true ? json(who) : `tenant ${String(who['tenant'])}, role ${String(who['role'])}${who['clusterAdmin'] === true ? ', cluster admin' : ''}`);
        return 0;
      }),
    );
  const token = auth.command('token').description('create, list and revoke tokens');
  token
    .command('create')
    .description('create a token for a tenant (prints the secret once)')
    .requiredOption('--tenant <tenant>', 'the tenant the token acts for')
    .requiredOption('--role <role>', 'read, readwrite or admin')
    .option('--name <name>', 'a label for people', '')
    .action(
      act((options) => async (client, print, globals) => {
        const { tenant, role, name } = options as { tenant: string; role: string; name: string };
        const created = await client.authCall('CreateToken', { tenant, role, name });
        const info = created['info'] as TokenInfoMessage;
        print(globals.json === true ? json({ token: created['token'], ...info }) : `${String(created['token'])}\n${tokenLine(info)}`);
        return 0;
      }),
    );
  token
    .command('list')
    .description('list tokens (ids, tenants, roles; never the secrets)')
    .option('--tenant <tenant>', 'only this tenant')
    .action(
      act((options) => async (client, print, globals) => {
        const listed = await client.authCall('ListTokens', { tenant: (options as { tenant?: string }).tenant ?? '' });
        const tokens = (listed['tokens'] ?? []) as TokenInfoMessage[];
        if (globals.json === true) print(json(tokens));
        else for (const info of tokens) print(tokenLine(info));
        return 0;
      }),
    );
  token
    .command('revoke')
    .description('revoke a token by its id (every node refuses it within 2 s)')
    .argument('<id>')
    .action(
      act((id) => async (client, print, globals) => {
        const revoked = await client.authCall('RevokeToken', { id });
        const info = revoked['info'] as TokenInfoMessage;
        print(globals.json === true ? json(info) : `revoked ${tokenLine(info)}`);
        return 0;
      }),
    );
  const quota = auth.command('quota').description("set a tenant's quotas (cluster admin)");
  quota
    .command('set')
    .requiredOption('--tenant <tenant>', 'the tenant')
    .option('--keys <n>', 'stored keys (0: unlimited)', count('--keys'), 0)
    .option('--bytes <n>', 'stored key and value bytes (0: unlimited)', count('--bytes'), 0)
    .option('--rps <n>', 'requests per second per leader node (0: unlimited)', count('--rps'), 0)
    .option('--leases <n>', 'leases held at once, all partitions (0: the default, 10000; never unlimited)', count('--leases'), 0)
    .action(
      act((options) => async (client, print) => {
        const { tenant, keys, bytes, rps, leases } = options as { tenant: string; keys: number; bytes: number; rps: number; leases: number };
        await client.authCall('SetQuota', { tenant, quota: { maxKeys: String(keys), maxBytes: String(bytes), maxRequestsPerSecond: String(rps), maxLeases: String(leases) } });
        print(`quota of ${tenant}: keys ${keys || 'unlimited'}, bytes ${bytes || 'unlimited'}, requests/s ${rps || 'unlimited'}, leases ${leases || 'the default'}`);
        return 0;
      }),
    );
  auth
    .command('usage')
    .description("a tenant's stored keys, bytes (live and retained history), request rate and leases against its quotas")
    .option('--tenant <tenant>', 'this tenant (default: your own; the cluster admin sees all)')
    .action(
      act((options) => async (client, print, globals) => {
        const usage = await client.authCall('GetUsage', { tenant: (options as { tenant?: string }).tenant ?? '' });
        const tenants = (usage['tenants'] ?? []) as Array<{ tenant: string; keys: string; bytes: string; historyBytes?: string; requestsPerSecond: number; leases?: string; quota?: Record<string, string> }>;
        if (globals.json === true) {
          print(json(tenants));
          return 0;
        }
        for (const t of tenants) {
          const limit = (value: string | undefined): string => (value === undefined || value === '0' ? 'unlimited' : value);
          // The bytes quota bounds live bytes plus retained history (freed when partitions compact).
          const history = BigInt(t.historyBytes ?? '0');
          const stored = (BigInt(t.bytes) + history).toString();
          print(
            `${t.tenant}: keys ${t.keys}/${limit(t.quota?.['maxKeys'])}, bytes ${stored}/${limit(t.quota?.['maxBytes'])} (live ${t.bytes}, history ${history}), ` +
              `requests/s ${t.requestsPerSecond}/${limit(t.quota?.['maxRequestsPerSecond'])}, leases ${t.leases ?? '0'}/${limit(t.quota?.['maxLeases'])}`,
          );
        }
        return 0;
      }),
    );
}
