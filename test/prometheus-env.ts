/**
 * Whether Debian's `prometheus` package (the prometheus server and promtool) is on this machine;
 * .ci/run installs it. Without it a developer's run skips the tests that need it, printing why; a
 * CI run (CI set) fails instead, so the tests can never pass unrun there.
 */
import { execFileSync } from 'node:child_process';

export type ToolAvailability = { readonly available: true; readonly path: string } | { readonly available: false; readonly reason: string };

function which(tool: string): string | undefined {
  try {
    return execFileSync('sh', ['-c', `command -v ${tool}`], { encoding: 'utf8', timeout: 5_000 }).trim() || undefined;
  } catch {
    return undefined;
  }
}

/** Looks `tool` (prometheus or promtool) up on PATH; see the file comment for what a miss does. */
export function requirePrometheusTool(tool: 'prometheus' | 'promtool', suite: string): ToolAvailability {
  const path = which(tool);
  if (path !== undefined) return { available: true, path };
  const reason = `${tool} is not installed (apt-get install -y --no-install-recommends prometheus; .ci/run does)`;
  if (process.env['CI']) throw new Error(`${suite}: ${tool} is required when CI is set, and ${reason}`);
  console.warn(`${suite} skipped: ${reason}`);
  return { available: false, reason };
}
