/**
 * Run a server command (bin/clusterdns or the real CoreDNS in .bin/coredns) in a directory and
 * collect its output lines, to compare log lines byte for byte.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { BIN } from './spawn.js';

/** The real CoreDNS 1.15.0 (behaviour oracle). */
export const COREDNS = resolve(import.meta.dirname, '../../.bin/coredns');

/**
 * Fail (never skip) a suite that compares with the real CoreDNS when the binary is missing: the
 * comparison is the point of those tests (scripts/install-coredns.sh builds it; npm test runs it).
 */
export function requireCoreDNS(): void {
  if (!existsSync(COREDNS)) {
    throw new Error(
      `CoreDNS 1.15.0 not found at ${COREDNS}: run \`bash scripts/install-coredns.sh\` (npm test and .ci/run do)`,
    );
  }
}

export interface LineProcess {
  readonly proc: ChildProcess;
  /** stdout and stderr lines, in arrival order. */
  readonly lines: string[];
  /** Wait until a line matching `re` appears (at or after index `from`); returns its index. */
  waitFor(re: RegExp, from?: number, timeoutMs?: number): Promise<number>;
  stop(): Promise<void>;
}

/** Start `which` with `args` in `cwd`. */
export function startLines(
  which: 'clusterdns' | 'coredns',
  args: string[],
  cwd: string,
  env: NodeJS.ProcessEnv = process.env,
): LineProcess {
  const proc =
    which === 'coredns'
      ? spawn(COREDNS, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] })
      : spawn(process.execPath, [BIN, ...args], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
  const lines: string[] = [];
  const partial = { out: '', err: '' };
  let notify: (() => void)[] = [];
  const feed = (key: 'out' | 'err') => (chunk: Buffer) => {
    const text = partial[key] + chunk.toString();
    const parts = text.split('\n');
    partial[key] = parts.pop()!;
    lines.push(...parts);
    const n = notify;
    notify = [];
    for (const f of n) f();
  };
  proc.stdout!.on('data', feed('out'));
  proc.stderr!.on('data', feed('err'));
  const exited = new Promise<void>((r) =>
    proc.on('exit', () => {
      r();
      for (const f of notify) f();
    }),
  );
  const waitFor = async (re: RegExp, from = 0, timeoutMs = 20_000): Promise<number> => {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      for (let i = from; i < lines.length; i++) if (re.test(lines[i]!)) return i;
      if (proc.exitCode !== null || Date.now() > deadline)
        throw new Error(`no line matching ${re}; output:\n${lines.join('\n')}`);
      await new Promise<void>((r) => {
        const t = setTimeout(r, Math.max(1, deadline - Date.now()));
        notify.push(() => {
          clearTimeout(t);
          r();
        });
      });
    }
  };
  return {
    proc,
    lines,
    waitFor,
    stop: async () => {
      if (proc.exitCode === null) proc.kill('SIGTERM');
      await exited;
    },
  };
}
