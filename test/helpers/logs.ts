/**
 * The one way tests read what clusterdns logs in-process: `captureLogs()` collects every log line
 * written from now until `restore()`.
 *
 * All captures share one sink installed once per test file, so captures may overlap (a server
 * started with startServer keeps its `logs` while a test captures its own), and a capture ending
 * never puts back a sink that another capture replaced. Set CLUSTERDNS_TEST_LOGS=1 to also see
 * the lines on stdout.
 */
import { setLogSink } from '../../src/log.js';

export interface LogCapture {
  /** The lines written since the capture began, in order. */
  readonly lines: string[];
  /** Resolves at the first line (already captured or still to come) that contains `text`. */
  waitFor(text: string): Promise<string>;
  /** Stop capturing (idempotent). */
  restore(): void;
}

const captures = new Set<(line: string) => void>();
let installed = false;

function install(): void {
  if (installed) return;
  installed = true;
  setLogSink((line) => {
    for (const c of captures) c(line);
    if (process.env.CLUSTERDNS_TEST_LOGS) process.stdout.write(`${line}\n`);
  });
}

/** `cleanups`, when given, gets the capture's `restore` (for tests that collect their teardown). */
export function captureLogs(cleanups?: { push(restore: () => void): unknown }): LogCapture {
  install();
  const lines: string[] = [];
  const waiters: { text: string; resolve: (line: string) => void }[] = [];
  const take = (line: string): void => {
    lines.push(line);
    for (let i = waiters.length - 1; i >= 0; i--) {
      const w = waiters[i]!;
      if (line.includes(w.text)) {
        waiters.splice(i, 1);
        w.resolve(line);
      }
    }
  };
  captures.add(take);
  const restore = (): void => void captures.delete(take);
  cleanups?.push(restore);
  return {
    lines,
    waitFor: (text) => {
      const seen = lines.find((l) => l.includes(text));
      return seen !== undefined ? Promise.resolve(seen) : new Promise((resolve) => waiters.push({ text, resolve }));
    },
    restore,
  };
}
