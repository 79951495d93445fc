/**
 * The run's trace: what happened, in virtual time, for a person replaying a seed. It keeps the
 * newest lines up to a bound and a running hash of every line, so two runs of one seed can be
 * compared whole without holding them in memory. Also the nodes' logger: warn and above, and the
 * info lines the fault schedule watches for, go into the trace.
 */
import { createHash } from 'node:crypto';
import type { AtollNodeConfig } from '../../node/node-config.js';

/** The logger type the node takes (pino's), named without importing pino here. */
export type NodeLogger = AtollNodeConfig['logger'];

export class Trace {
  private readonly lines: string[] = [];
  private dropped = 0;
  private readonly hash = createHash('sha256');
  count = 0;

  constructor(
    private readonly clock: () => number,
    private readonly maxLines: number,
  ) {}

  add(text: string): void {
    const line = `${this.clock().toFixed(1).padStart(9)} ${text}`;
    this.hash.update(line).update('\n');
    this.count++;
    this.lines.push(line);
    if (this.lines.length > this.maxLines * 2) {
      const cut = this.lines.length - this.maxLines;
      this.lines.splice(0, cut);
      this.dropped += cut;
    }
  }

  /** The newest lines (at most maxLines), with a note of how many came before them. */
  tail(): string[] {
    const keep = this.lines.slice(-this.maxLines);
    const before = this.dropped + this.lines.length - keep.length;
    return before > 0 ? [`... ${before} earlier trace lines not kept`, ...keep] : keep;
  }

  /** Hex SHA-256 of every line added so far (a copy: the trace goes on). */
  digest(): string {
    return this.hash.copy().digest('hex');
  }
}

const levels = ['trace', 'debug', 'info', 'warn', 'error', 'fatal'] as const;
type Level = (typeof levels)[number];

/**
 * A pino-shaped logger that writes into the trace: `warn` and above always, `info` too (the node
 * logs snapshot installs and exports at info), `debug` and `trace` never. `onLine` sees every
 * line that is kept (the fault schedule reacts to some).
 */
export function traceLogger(node: number, trace: Trace, onLine: (level: Level, message: string) => void): NodeLogger {
  const write = (level: Level, first: unknown, second?: unknown): void => {
    if (level === 'debug' || level === 'trace') return;
    const message = typeof first === 'string' ? first : typeof second === 'string' ? second : '';
    const fields = typeof first === 'object' && first !== null ? describeFields(first as Record<string, unknown>) : '';
    trace.add(`n${node} log.${level} ${message}${fields}`);
    onLine(level, message);
  };
  const logger: Record<string, unknown> = { level: 'info' };
  for (const level of levels) logger[level] = (first: unknown, second?: unknown) => write(level, first, second);
  logger['child'] = () => logger;
  logger['isLevelEnabled'] = (level: string) => level !== 'debug' && level !== 'trace';
  return logger as unknown as NodeLogger;
}

function describeFields(fields: Record<string, unknown>): string {
  const parts: string[] = [];
  for (const [key, value] of Object.entries(fields)) {
    if (value instanceof Error) parts.push(`${key}=${value.message.slice(0, 300)}`);
    else if (typeof value === 'object' && value !== null) parts.push(`${key}=${safeJson(value).slice(0, 200)}`);
    else parts.push(`${key}=${String(value)}`);
  }
  return parts.length > 0 ? ` {${parts.join(' ')}}` : '';
}

function safeJson(value: unknown): string {
  try {
    return JSON.stringify(value, (_key, v: unknown) => (typeof v === 'bigint' ? v.toString() : v)) ?? '';
  } catch {
    return '[unprintable]';
  }
}
