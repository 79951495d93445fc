/**
 * The benchmark's operations on etcd through the `etcd3` npm client (a devDependency: only the
 * side-by-side comparison, scripts/bench-vs-etcd.sh, loads it, so it is imported lazily).
 *
 * Mapping: Atoll's stale get is etcd's serializable get; Atoll's increment has no etcd equivalent,
 * so `incr` is a put to the one hot key (the comparison the performance targets name); the
 * transaction reads both keys, then commits both puts if neither key's mod revision moved.
 */
import type { Etcd3 } from 'etcd3';
import { AtollError } from '../errors.js';
import { transactionRetries, type BenchTarget, type ReadConsistency } from './bench-target.js';

function bufferOf(value: Uint8Array): Buffer {
  return Buffer.isBuffer(value) ? value : Buffer.from(value.buffer, value.byteOffset, value.byteLength);
}

/** etcd's user and password (etcdctl --user NAME --password PASSWORD). */
export interface EtcdAuth {
  readonly username: string;
  readonly password: string;
}

export class EtcdTarget implements BenchTarget {
  readonly system = 'etcd' as const;
  private counter = 0;

  private constructor(private readonly client: Etcd3) {}

  /**
   * `endpoints` are host:port client addresses; every call gets `timeoutMs`. With `auth` the
   * client authenticates first (Auth.Authenticate) and sends the token it gets on every call: on
   * Atoll's etcd port the password is an Atoll token, which decides the tenant (docs/etcd-api.md).
   */
  static async connect(endpoints: readonly string[], timeoutMs: number, auth?: EtcdAuth): Promise<EtcdTarget> {
    const { Etcd3: Etcd3Client } = await import('etcd3');
    const client = new Etcd3Client({
      hosts: endpoints.map((endpoint) => `http://${endpoint}`),
      ...(auth !== undefined && { auth: { username: auth.username, password: auth.password, callOptions: () => ({ deadline: Date.now() + timeoutMs }) } }),
      defaultCallOptions: (context) => (context.isStream ? {} : { deadline: Date.now() + timeoutMs }),
    });
    return new EtcdTarget(client);
  }

  async put(key: string, value: Uint8Array): Promise<void> {
    await this.client.put(key).value(bufferOf(value)).exec();
  }

  async get(key: string, consistency: ReadConsistency): Promise<boolean> {
    const response = await this.client.get(key).serializable(consistency === 'stale').exec();
    return response.kvs.length > 0;
  }

  async increment(key: string): Promise<void> {
    this.counter++;
    await this.client.put(key).value(String(this.counter)).exec();
  }

  async readPrefix(prefix: string): Promise<number> {
    return (await this.client.getAll().prefix(prefix).exec()).kvs.length;
  }

  async readTwoWriteTwo(keyA: string, keyB: string, value: Uint8Array): Promise<void> {
    const bytes = bufferOf(value);
    for (let attempt = 0; attempt <= transactionRetries; attempt++) {
      const [a, b] = await Promise.all([this.client.get(keyA).exec(), this.client.get(keyB).exec()]);
      const result = await this.client
        .if(keyA, 'Mod', '==', a.kvs[0]?.mod_revision ?? 0)
        .and(keyB, 'Mod', '==', b.kvs[0]?.mod_revision ?? 0)
        .then(this.client.put(keyA).value(bytes), this.client.put(keyB).value(bytes))
        .commit();
      if (result.succeeded) return;
    }
    throw new AtollError('TXN_CONFLICT', `etcd transaction on ${keyA}, ${keyB} conflicted ${transactionRetries + 1} times`);
  }

  close(): void {
    this.client.close();
  }
}
