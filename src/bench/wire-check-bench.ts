/**
 * What the wire UTF-8 check (src/wire/wire-utf8.ts) costs on the hot path: decoding a request
 * with the checked deserializer the server uses against proto-loader's plain one, for a Put with a
 * 100-byte value, unary and inside a KV.Stream request, and the walk alone.
 *
 *   npm run build && node dist/src/bench/wire-check-bench.js [rounds] [messagesPerRound]
 *
 * The variants alternate round by round (so drift and other processes on the machine hit them
 * alike), and each figure is the median over the rounds of CPU nanoseconds per message.
 */
import { packageDefinition, kvServiceDefinition, messagePlans } from '../wire/protos.js';
import { findWireProblem } from '../wire/wire-utf8.js';

type Decode = (bytes: Buffer) => unknown;

interface Variant {
  readonly name: string;
  readonly run: Decode;
}

interface Workload {
  readonly name: string;
  readonly bytes: Buffer;
  readonly variants: readonly Variant[];
}

const value = Buffer.alloc(100, 0x61);
const plainDecoder = (typeName: string): Decode => (packageDefinition[`atoll.v1.${typeName}`] as unknown as { deserialize: Decode }).deserialize;

function workloads(): Workload[] {
  const putMethod = kvServiceDefinition['Put']!;
  const streamMethod = kvServiceDefinition['Stream']!;
  const putPlan = messagePlans.get('atoll.v1.PutRequest')!;
  const streamPlan = messagePlans.get('atoll.v1.StreamRequest')!;
  const asciiPut = putMethod.requestSerialize({ key: 'bench/key-000123', value });
  const accentedPut = putMethod.requestSerialize({ key: 'bänch/clé-000123', value });
  const streamPut = streamMethod.requestSerialize({ id: '123456', timeoutMs: 5000, put: { key: 'bench/key-000123', value } });
  return [
    { name: 'PutRequest, ASCII key', bytes: asciiPut, variants: variantsOf(plainDecoder('PutRequest'), putMethod.requestDeserialize as Decode, putPlan) },
    { name: 'PutRequest, non-ASCII key', bytes: accentedPut, variants: variantsOf(plainDecoder('PutRequest'), putMethod.requestDeserialize as Decode, putPlan) },
    { name: 'StreamRequest{put}, ASCII key', bytes: streamPut, variants: variantsOf(plainDecoder('StreamRequest'), streamMethod.requestDeserialize as Decode, streamPlan) },
  ];
}

function variantsOf(plain: Decode, checked: Decode, plan: NonNullable<ReturnType<typeof messagePlans.get>>): Variant[] {
  return [
    { name: 'protobufjs decode', run: plain },
    { name: 'checked decode', run: checked },
    { name: 'walk then decode', run: (bytes) => (findWireProblem(plan, bytes) === undefined ? plain(bytes) : undefined) },
    { name: 'walk alone', run: (bytes) => findWireProblem(plan, bytes) },
  ];
}

/**
 * CPU nanoseconds (user + system) per message for one round: CPU time rather than wall time, so
 * the other processes of a shared machine do not count. `sink` keeps results alive.
 */
let sink = 0;
function timeRound(run: Decode, bytes: Buffer, messages: number): number {
  const start = process.cpuUsage();
  for (let index = 0; index < messages; index++) if (run(bytes) !== undefined) sink++;
  const used = process.cpuUsage(start);
  return ((used.user + used.system) * 1000) / messages;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

function main(): void {
  const rounds = Math.min(101, Math.max(3, Number(process.argv[2] ?? 41)));
  const messages = Math.min(5_000_000, Math.max(1_000, Number(process.argv[3] ?? 20_000)));
  console.log(`node ${process.version}, ${rounds} rounds of ${messages} messages per variant, medians in ns per message`);
  for (const workload of workloads()) {
    for (const variant of workload.variants) timeRound(variant.run, workload.bytes, messages); // warm-up
    const samples = workload.variants.map(() => [] as number[]);
    for (let round = 0; round < rounds; round++) {
      workload.variants.forEach((variant, index) => samples[index]!.push(timeRound(variant.run, workload.bytes, messages)));
    }
    const medians = samples.map(median);
    const plain = medians[0]!;
    const checked = medians[1]!;
    console.log(`${workload.name} (${workload.bytes.length} bytes)`);
    workload.variants.forEach((variant, index) => console.log(`  ${variant.name.padEnd(18)} ${medians[index]!.toFixed(0).padStart(6)} ns`));
    console.log(`  checked - plain    ${(checked - plain).toFixed(0).padStart(6)} ns (${(((checked - plain) / plain) * 100).toFixed(1)}%)`);
  }
  if (sink < 0) console.log(sink);
}

main();
