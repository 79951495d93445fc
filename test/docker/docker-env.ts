/**
 * What the container tests need from the machine: a Docker engine that answers, the Compose v2
 * plugin and the Atoll image (scripts/docker-setup.sh provides all three, .ci/run calls it).
 * Without them a developer's run skips these tests with the reason printed; a CI run fails.
 */
import { execFile } from 'node:child_process';
import net from 'node:net';
import { promisify } from 'node:util';

const execFileAsync = promisify(execFile);

/** The image under test: built by scripts/docker-setup.sh, or named by ATOLL_IMAGE. */
export const atollImage = process.env['ATOLL_IMAGE'] ?? 'atoll:local';

/** Every docker command is bounded; a hung engine must fail the test, not stall it. */
const dockerCommandTimeoutMs = 60_000;

/** Runs the docker CLI; rejects with its stderr when it exits non-zero or times out. */
export async function docker(...args: string[]): Promise<string> {
  try {
    const { stdout } = await execFileAsync('docker', args, { timeout: dockerCommandTimeoutMs, maxBuffer: 16 * 1024 * 1024 });
    return stdout;
  } catch (error) {
    const failure = error as { stderr?: string; message: string };
    throw new Error(`docker ${args.join(' ')} failed: ${(failure.stderr ?? '').trim() || failure.message}`);
  }
}

export type DockerAvailability = { readonly available: true } | { readonly available: false; readonly reason: string };

async function firstMissing(): Promise<string | undefined> {
  const checks: Array<{ args: string[]; missing: string }> = [
    { args: ['info', '--format', '{{.ServerVersion}}'], missing: 'no Docker engine answers' },
    { args: ['compose', 'version'], missing: 'the Docker Compose v2 plugin is missing' },
    { args: ['image', 'inspect', atollImage], missing: `the image ${atollImage} is missing` },
  ];
  for (const check of checks) {
    try {
      await docker(...check.args);
    } catch (error) {
      return `${check.missing} (${(error as Error).message.split('\n')[0]}); run scripts/docker-setup.sh`;
    }
  }
  return undefined;
}

/**
 * Checks once per test file. When something is missing: throws if CI is set (the run must fail,
 * not pass without these tests), else prints why and reports the tests as unavailable.
 */
export async function requireDocker(suite: string): Promise<DockerAvailability> {
  const reason = await firstMissing();
  if (reason === undefined) return { available: true };
  if (process.env['CI']) throw new Error(`${suite}: Docker is required when CI is set, and ${reason}`);
  console.warn(`${suite} skipped: ${reason}`);
  return { available: false, reason };
}

/** A loopback port nothing listens on now: one the kernel handed out, then closed again. */
export async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}
