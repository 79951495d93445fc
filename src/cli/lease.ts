/**
 * `atoll lease ...`: grant, keep alive, revoke and describe server leases (docs/api.md, "Leases").
 * A lease lives in the partition of the bucket it was granted for; `atoll put KEY VALUE --lease ID`
 * attaches a key of that partition to it.
 */
import { InvalidArgumentError, type Command } from 'commander';
import type { AtollClient } from '../client/index.js';
import { json } from './format.js';

type Print = (line: string) => void;
type Action = (client: AtollClient, print: Print, globals: { json?: boolean }) => Promise<number>;
type Act = (work: (...args: unknown[]) => Action) => (...args: unknown[]) => Promise<void>;

function positiveMs(name: string) {
  return (text: string): number => {
    const value = Number(text);
    if (!/^\d+$/.test(text) || !Number.isSafeInteger(value) || value < 1) throw new InvalidArgumentError(`${name} must be a positive whole number of milliseconds`);
    return value;
  };
}

/** Keepalive rounds `atoll lease keepalive --every` runs at most (a bound on an unattended loop). */
const maxKeepAliveRounds = 1_000_000;

export function addLeaseCommands(program: Command, act: Act): void {
  const lease = program.command('lease').description('grant, keep alive, revoke and describe leases (keys attached to a lease go when it ends)');
  lease
    .command('grant')
    .description('grant a lease of TTL milliseconds in the partition of BUCKET; prints its id')
    .argument('<bucket>', 'a bucket (or key) naming the partition; only keys of that partition can attach')
    .argument('<ttl>', 'the time to live in milliseconds', positiveMs('TTL'))
    .action(
      act((bucket, ttlMs) => async (client, print, globals) => {
        const granted = await client.leaseCall({ action: 'grant', key: bucket as string, ttlMs: ttlMs as number });
        print(globals.json === true ? json({ lease: granted.lease, ttlMs: granted.ttlMs }) : granted.lease);
        return 0;
      }),
    );
  lease
    .command('keepalive')
    .description('restart the TTL of lease ID (exit 1 when it is gone); with --every, keep doing it until the lease is lost or interrupted')
    .argument('<id>')
    .option('--every <ms>', 'repeat every MS milliseconds (a third of the TTL is a good choice)', positiveMs('--every'))
    .action(
      act((id, options) => async (client, print, globals) => {
        const every = (options as { every?: number }).every;
        for (let round = 0; round < maxKeepAliveRounds; round++) {
          const kept = await client.leaseCall({ action: 'keepAlive', lease: id as string });
          print(globals.json === true ? json({ lease: kept.lease, ttlMs: kept.ttlMs, ttlLeftMs: kept.ttlLeftMs }) : `kept alive for ${kept.ttlLeftMs} ms`);
          if (every === undefined) break;
          await new Promise((resolve) => setTimeout(resolve, every));
        }
        return 0;
      }),
    );
  lease
    .command('revoke')
    .description('end lease ID now: every key attached to it is deleted in one revision')
    .argument('<id>')
    .action(
      act((id) => async (client, print, globals) => {
        const revoked = await client.leaseCall({ action: 'revoke', lease: id as string });
        print(globals.json === true ? json({ lease: revoked.lease, revision: revoked.revision }) : `revoked at revision ${revoked.revision}`);
        return 0;
      }),
    );
  lease
    .command('info')
    .description("print lease ID's TTL, time left and keys")
    .argument('<id>')
    .action(
      act((id) => async (client, print, globals) => {
        const info = await client.leaseCall({ action: 'info', lease: id as string });
        if (globals.json === true) print(json({ lease: info.lease, ttlMs: info.ttlMs, ttlLeftMs: info.ttlLeftMs, keys: info.keys }));
        else print([`lease ${info.lease}: ttl ${info.ttlMs} ms, ${info.ttlLeftMs} ms left`, ...info.keys.map((key) => `  ${key}`)].join('\n'));
        return 0;
      }),
    );
}
