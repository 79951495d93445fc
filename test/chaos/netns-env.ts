/**
 * Whether network-namespace tests can run here, decided once per test file: as the Docker tests do
 * (test/docker/docker-env.ts), a developer's run without namespaces skips them with the reason
 * printed, and a CI run (CI set) fails instead of passing without them.
 */
import { detectNetns, ensureIptables } from '../../src/chaos/netns.js';

export type NetnsAvailability = { readonly available: true } | { readonly available: false; readonly reason: string };

/** Namespaces need root; installing iptables is attempted only then (and logged by ensureIptables). */
async function probe(): Promise<NetnsAvailability> {
  if (process.platform === 'linux' && process.getuid?.() === 0) {
    try {
      await ensureIptables();
    } catch (error) {
      return { available: false, reason: String(error) };
    }
  }
  return detectNetns();
}

/** Throws when CI is set and namespaces are unavailable; otherwise prints why the tests skip. */
export async function requireNetns(suite: string): Promise<NetnsAvailability> {
  const availability = process.env['ATOLL_TEST_NO_NETNS'] === '1' ? { available: false as const, reason: 'ATOLL_TEST_NO_NETNS=1' } : await probe();
  if (availability.available) return availability;
  if (process.env['CI']) throw new Error(`${suite}: network namespaces are required when CI is set, and ${availability.reason}`);
  console.warn(`${suite} skipped: ${availability.reason}`);
  return availability;
}
