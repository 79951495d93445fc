/** A watch transport for tests: cut-offs are counted, and it closes when the test says so. */
import type { WatchTransport } from '../../src/watch/watch-memory.js';

export class FakeTransport implements WatchTransport {
  cutOffs = 0;
  private readonly listeners = new Set<() => void>();

  constructor(readonly connection: unknown) {}

  cutOff(): void {
    this.cutOffs++;
  }

  onClosed(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** The stream closed: every listener is told, once. */
  close(): void {
    for (const listener of [...this.listeners]) listener();
    this.listeners.clear();
  }

  get listening(): number {
    return this.listeners.size;
  }
}
