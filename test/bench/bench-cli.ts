/** Runs `atoll bench ARGS` in this process, as the CLI would, and collects what it printed. */
import { run, type CliIo } from '../../src/cli/run.js';

export async function bench(...argv: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const io: CliIo = { stdout: (text) => (stdout += text), stderr: (text) => (stderr += text), env: {} };
  const code = await run(['bench', ...argv], io);
  return { code, stdout, stderr };
}
