/** Run the real `bin/clusterdns` (needs `npm run build`) for end-to-end tests of the command. */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { accessSync, constants, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { freePort } from './net.js';

export const BIN = resolve(import.meta.dirname, '../../bin/clusterdns');

export interface Spawned {
  readonly proc: ChildProcess;
  readonly port: number;
  readonly dir: string;
  readonly corefilePath: string;
  /** stdout+stderr lines so far. */
  readonly output: string[];
  /** Wait until a line matching `re` appears (rejects if the process exits first). */
  waitFor(re: RegExp, timeoutMs?: number): Promise<string>;
  /** Resolves with the exit code. */
  exited: Promise<number | null>;
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

export async function spawnServer(
  corefile: string,
  extraArgs: string[] = [],
  opts: { port?: number; env?: NodeJS.ProcessEnv } = {},
): Promise<Spawned> {
  const port = opts.port ?? (await freePort());
  const dir = mkdtempSync(join(tmpdir(), 'clusterdns-e2e-'));
  const corefilePath = join(dir, 'Corefile');
  writeFileSync(corefilePath, corefile);
  const proc = spawn(process.execPath, [BIN, '-conf', corefilePath, '-dns.port', String(port), ...extraArgs], {
    cwd: dir,
    env: { ...process.env, ...opts.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const { output, waitFor, exited } = watchLines(proc, { timeoutMs: 20000 });
  return {
    proc,
    port,
    dir,
    corefilePath,
    output,
    waitFor,
    exited,
    stop: async (signal = 'SIGTERM') => {
      if (proc.exitCode === null) proc.kill(signal);
      return exited;
    },
  };
}

/**
 * Call `onLine` for each line of `stream` as it arrives. A read can end inside a line (or inside a
 * UTF-8 sequence): the unfinished tail waits for the rest, each stream its own. Returns a flush
 * for the last line when the stream ends without a newline.
 */
export function onStreamLines(stream: NodeJS.ReadableStream, onLine: (line: string) => void): () => void {
  let partial = '';
  stream.setEncoding('utf8');
  stream.on('data', (chunk: string) => {
    const parts = (partial + chunk).split('\n');
    partial = parts.pop() ?? '';
    for (const line of parts) onLine(line);
  });
  return () => {
    if (partial) onLine(partial);
    partial = '';
  };
}

/** A child's stdout and stderr as lines, and a way to wait for one. */
export interface LineWatch {
  /** stdout+stderr lines so far (a line split across chunks is one line; empty lines are left out). */
  readonly output: string[];
  /** Wait until a line matching `re` appears (rejects if the process exits first). */
  waitFor(re: RegExp, timeoutMs?: number): Promise<string>;
  /** Resolves with the exit code. */
  readonly exited: Promise<number | null>;
}

/**
 * Collect `proc`'s output lines as they come. `label` prefixes the errors of `waitFor`;
 * `timeoutMs` is its default timeout.
 */
export function watchLines(proc: ChildProcess, opts: { label?: string; timeoutMs: number }): LineWatch {
  const output: string[] = [];
  const waiters: { re: RegExp; resolve: (l: string) => void }[] = [];
  const onLine = (line: string): void => {
    if (!line) return;
    output.push(line);
    for (const w of [...waiters]) {
      if (w.re.test(line)) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve(line);
      }
    }
  };
  const flushOut = onStreamLines(proc.stdout!, onLine);
  const flushErr = onStreamLines(proc.stderr!, onLine);
  const exited = new Promise<number | null>((r) =>
    proc.on('exit', (code) => {
      flushOut();
      flushErr();
      r(code);
    }),
  );
  const timedOut = opts.label ? `${opts.label}: timed out` : 'timed out';
  const exitedWith = opts.label ? `${opts.label} exited with` : 'exited with';
  const waitFor = (re: RegExp, timeoutMs = opts.timeoutMs): Promise<string> => {
    const seen = output.find((l) => re.test(l));
    if (seen) return Promise.resolve(seen);
    return new Promise<string>((resolve, reject) => {
      const t = setTimeout(
        () => reject(new Error(`${timedOut} waiting for ${re}; output:\n${output.join('\n')}`)),
        timeoutMs,
      );
      waiters.push({
        re,
        resolve: (l) => {
          clearTimeout(t);
          resolve(l);
        },
      });
      void exited.then((code) => {
        clearTimeout(t);
        reject(new Error(`${exitedWith} ${code} before ${re}; output:\n${output.join('\n')}`));
      });
    });
  };
  return { output, waitFor, exited };
}

/** Run the command to completion (for -version, -validate, bad configs). */
export function runCommand(
  args: string[],
  opts: { cwd?: string; input?: string; env?: NodeJS.ProcessEnv } = {},
): { status: number | null; stdout: string; stderr: string } {
  const env = opts.env ? { ...process.env, ...opts.env } : undefined;
  const r = spawnSync(process.execPath, [BIN, ...args], {
    cwd: opts.cwd,
    input: opts.input,
    env,
    encoding: 'utf8',
    timeout: 30000,
  });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** Run an external client (dig, kdig) and return stdout. */
export function runTool(cmd: string, args: string[]): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(cmd, args, { encoding: 'utf8', timeout: 30000 });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

export function hasTool(cmd: string): boolean {
  return spawnSync('sh', ['-c', `command -v ${cmd}`]).status === 0;
}

/**
 * Compile one C source with `compiler` into a fresh temporary directory, which the caller removes
 * (`dir`). Throws with the compiler's output when it cannot (the directory is removed then).
 */
export function compileC(
  source: string,
  name: string,
  compiler = 'cc',
  args: readonly string[] = [],
): { binary: string; dir: string } {
  const dir = mkdtempSync(join(tmpdir(), `clusterdns-${name}-`));
  const src = join(dir, `${name}.c`);
  writeFileSync(src, source);
  const binary = join(dir, name);
  const r = spawnSync(compiler, [...args, '-o', binary, src], { encoding: 'utf8' });
  if (r.error || r.status !== 0) {
    rmSync(dir, { recursive: true, force: true });
    throw new Error(`${compiler} failed to build ${name}: ${r.error?.message ?? r.stderr}`);
  }
  return { binary, dir };
}

/** Is `p` a file this process may execute? */
export function isExecutable(p: string): boolean {
  try {
    accessSync(p, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}
