/**
 * Server log lines in CoreDNS's shape: `[LEVEL] plugin/<name>: message` on stdout, no timestamp
 * (the container runtime adds one). Levels: INFO, WARNING, ERROR, DEBUG, FATAL.
 * Tests can capture lines with `setLogSink`.
 */
export type Level = 'INFO' | 'WARNING' | 'ERROR' | 'DEBUG' | 'FATAL';

export interface Logger {
  info(msg: string): void;
  warning(msg: string): void;
  error(msg: string): void;
  debug(msg: string): void;
  /** A line without plugin prefix, e.g. the log plugin's query lines: `[INFO] <line>`. */
  raw(level: Level, line: string): void;
}

type Sink = (line: string) => void;

let sink: Sink = (line) => {
  process.stdout.write(`${line}\n`);
};
let debugEnabled = false;

/** Replace where log lines go (tests); returns the previous sink. */
export function setLogSink(s: Sink): Sink {
  const prev = sink;
  sink = s;
  return prev;
}

export function enableDebug(on: boolean): void {
  debugEnabled = on;
}

export function writeLine(level: Level, text: string): void {
  if (level === 'DEBUG' && !debugEnabled) return;
  sink(`[${level}] ${text}`);
}

/**
 * The start-up failure line and exit 1, as CoreDNS's `mustLogFatal` writes it: Go's standard
 * logger without flags, so the message alone on stderr (`Corefile:3 - Error during parsing: …`,
 * `listen tcp :53: bind: address already in use`), no `[FATAL]` level. Operators and the
 * differential suite grep this exact text (docs/logs.md).
 */
export function startupFailure(msg: string): never {
  process.stderr.write(`${msg}\n`);
  process.exit(1);
}

/** `[FATAL] msg` and exit 1 (a plugin's fatal condition, as CoreDNS's clog.Fatal: loop). */
export function fatal(msg: string): never {
  writeLine('FATAL', msg);
  process.exit(1);
}

/** A logger whose lines read `[LEVEL] <prefix>message`; prefix is built once. */
export function logger(pluginName?: string): Logger {
  const prefix = pluginName ? `plugin/${pluginName}: ` : '';
  return {
    info: (m) => writeLine('INFO', prefix + m),
    warning: (m) => writeLine('WARNING', prefix + m),
    error: (m) => writeLine('ERROR', prefix + m),
    debug: (m) => writeLine('DEBUG', prefix + m),
    raw: (level, line) => writeLine(level, line),
  };
}

export const coreLog = logger();
