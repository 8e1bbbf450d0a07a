/**
 * Running the host tools node-cache drives (`ip`, `nft`, `iptables-*`) without blocking the event
 * loop that answers queries: each call resolves with its status and output, never throws.
 */
import { execFile } from 'node:child_process';

export interface RunResult {
  /** Exit status; null when the command could not be started (see `error`). */
  status: number | null;
  stdout: string;
  stderr: string;
  /** Why it did not run (ENOENT: not installed). */
  error?: string;
}

export type Runner = (cmd: string, args: readonly string[], input?: string) => Promise<RunResult>;

const TIMEOUT_MS = 30_000;

export const run: Runner = (cmd, args, input) =>
  new Promise((resolve) => {
    const child = execFile(cmd, [...args], { timeout: TIMEOUT_MS, encoding: 'utf8' }, (err, stdout, stderr) => {
      const code = err && typeof err.code === 'number' ? err.code : err ? null : 0;
      const r: RunResult = { status: code, stdout, stderr };
      if (err && typeof err.code !== 'number') r.error = err.message;
      resolve(r);
    });
    if (input !== undefined) child.stdin?.end(input);
  });

/** `cmd args: stderr` for a log line. */
export function describeFailure(cmd: string, args: readonly string[], r: RunResult): string {
  const why = r.error ?? (r.stderr.trim() || `exit status ${r.status}`);
  return `${cmd} ${args.join(' ')}: ${why}`;
}
