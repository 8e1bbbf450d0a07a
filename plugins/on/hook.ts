/**
 * Running one `on` command as Caddy's onevent hook does (github.com/coredns/caddy/onevent/hook):
 * no shell — the command is found in $PATH when it has no slash, as Go's exec.Command — with the
 * server's standard input, output and error. A last argument `&` runs it in the background (the
 * hook returns once it started); otherwise the hook waits for it to exit. There is no timeout, as
 * in CoreDNS. Failures are worded as Go's exec errors (`exec: "x": executable file not found in
 * $PATH`, `exit status 3`, `signal: killed`).
 */
import { spawn } from 'node:child_process';
import { stdLog, stdPlainLine } from '../../src/log.js';

export type OnEvent = 'startup' | 'shutdown' | 'certrenew';

export interface HookConfig {
  /** A v4 UUID per `on` line, as Caddy gives each hook (named `on-ID`). */
  readonly id: string;
  readonly event: OnEvent;
  readonly command: string;
  /** The arguments, a trailing `&` included (it is taken off when the hook runs). */
  readonly args: readonly string[];
}

/** Go's syscall.Signal strings for the signals a command is likely to die of. */
const SIGNAL_TEXT: Record<string, string> = {
  SIGHUP: 'hangup',
  SIGINT: 'interrupt',
  SIGQUIT: 'quit',
  SIGABRT: 'aborted',
  SIGKILL: 'killed',
  SIGSEGV: 'segmentation fault',
  SIGPIPE: 'broken pipe',
  SIGTERM: 'terminated',
  SIGUSR1: 'user defined signal 1',
  SIGUSR2: 'user defined signal 2',
};

/** Go's error for a command that could not be started. */
function startError(command: string, e: NodeJS.ErrnoException): Error {
  if (!command.includes('/') && e.code === 'ENOENT')
    return new Error(`exec: ${JSON.stringify(command)}: executable file not found in $PATH`);
  const why: Record<string, string> = {
    ENOENT: 'no such file or directory',
    EACCES: 'permission denied',
    ENOEXEC: 'exec format error',
  };
  return new Error(`fork/exec ${command}: ${(e.code && why[e.code]) ?? e.message}`);
}

/** Run the hook's command; resolves with null, or the error Caddy would log. */
export function runHook(cfg: HookConfig): Promise<Error | null> {
  let args = [...cfg.args];
  const background = args.length >= 1 && args[args.length - 1] === '&';
  if (background) args = args.slice(0, -1);
  const text = `"${cfg.command} ${args.join(' ')}" with ID ${cfg.id}`;
  stdLog.info(`${background ? 'Nonblocking' : 'Blocking'} Command ${text}`);
  return new Promise((resolve) => {
    let settled = false;
    const done = (err: Error | null): void => {
      if (settled) return;
      settled = true;
      resolve(err);
    };
    const child = spawn(cfg.command, args, { stdio: 'inherit' });
    child.once('error', (e) => done(startError(cfg.command, e)));
    if (background) {
      child.once('spawn', () => {
        // Not waited for, and it does not keep the server's process alive.
        child.unref();
        done(null);
      });
      return;
    }
    child.once('exit', (code, signal) => {
      if (signal !== null) done(new Error(`signal: ${SIGNAL_TEXT[signal] ?? signal}`));
      else if (code !== 0) done(new Error(`exit status ${code ?? -1}`));
      else done(null);
    });
  });
}

/** Run the hooks of `event` one after the other, logging each failure as Caddy's EmitEvent does. */
export async function emit(hooks: readonly HookConfig[], event: OnEvent): Promise<void> {
  for (const h of hooks) {
    if (h.event !== event) continue;
    const err = await runHook(h);
    if (err) stdPlainLine(`error on 'on-${h.id}' hook: ${err.message}`);
  }
}
