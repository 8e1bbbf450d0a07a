/**
 * Server log lines in CoreDNS's shape: `[LEVEL] plugin/<name>: message` on stdout, no timestamp
 * (the container runtime adds one). Levels: INFO, WARNING, ERROR, DEBUG, FATAL.
 * Tests can capture lines with `setLogSink`.
 *
 * `-log-format json` (CoreDNS 1.15.0's flag): every line is instead one JSON object as CoreDNS's
 * slog handler writes it: `{"time":…,"level":…,"msg":…}`, then `"plugin"` for a plugin's line, then
 * any structured fields (the log plugin's query fields). Levels are DEBUG, INFO, WARN, ERROR,
 * FATAL; `time` is RFC 3339 with nanoseconds (trailing zeros dropped) in local time. Lines CoreDNS
 * prints through Go's standard logger with the level written into the text (`[INFO] Reloading`,
 * the signal lines) keep that text as `msg` at level INFO: `stdLog`.
 */
import { writeSync } from 'node:fs';
export type Level = 'INFO' | 'WARNING' | 'ERROR' | 'DEBUG' | 'FATAL';

export interface Logger {
  info(msg: string): void;
  warning(msg: string): void;
  error(msg: string): void;
  debug(msg: string): void;
  /** A line without plugin prefix, e.g. the log plugin's query lines: `[INFO] <line>`. */
  raw(level: Level, line: string): void;
}

/**
 * Where lines go. `aboutQuery` is true for a line about one query (the log plugin's query line, an
 * errors line): a query thread holds back its own start and reload lines, which the main thread
 * prints once, but never these (src/server/thread-entry.ts).
 */
export type Sink = (line: string, aboutQuery: boolean) => void;

export type LogFormat = 'text' | 'json';
/** A structured field value of a JSON line (key order is kept). */
export type Attr = string | number | boolean | null;

/** For waiting without spinning when stdout is full. */
const pause = new Int32Array(new SharedArrayBuffer(4));

/**
 * Write to the process's stdout now, from whichever thread: every thread's lines (banner, log
 * lines, query lines) reach fd 1 in the order they are written, and a line is out before the reply
 * it belongs to is sent (docs/multicore.md §6). `process.stdout` cannot promise that: in a worker
 * thread it is relayed by the main thread's event loop, and on a non-blocking pipe (as libuv opens
 * one) a write that does not fit is queued behind the thread's next lines. When the pipe is full
 * the thread waits for room, 1 ms at a time, as a Go program's blocking write waits. A closed
 * stdout drops the text.
 */
export function writeStdout(text: string): void {
  const buf = Buffer.from(text);
  let off = 0;
  while (off < buf.length) {
    try {
      off += writeSync(1, buf, off);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EAGAIN') return;
      Atomics.wait(pause, 0, 0, 1);
    }
  }
}

let sink: Sink = (line) => {
  writeStdout(`${line}\n`);
};
let debugEnabled = false;
let jsonFormat = false;

/** The `-log-format` values, and CoreDNS's error for any other (clog.Configure). */
export function checkLogFormat(format: string): LogFormat {
  if (format !== 'text' && format !== 'json')
    throw new Error(`unknown log format ${jsonString(format)}: expected text or json`);
  return format;
}

/** Select the process-wide line format (`-log-format`). */
export function setLogFormat(format: LogFormat): void {
  jsonFormat = format === 'json';
}

export function isJsonLog(): boolean {
  return jsonFormat;
}

/** Replace where log lines go (tests); returns the previous sink. */
export function setLogSink(s: Sink): Sink {
  const prev = sink;
  sink = s;
  return prev;
}

export function enableDebug(on: boolean): void {
  debugEnabled = on;
}

const JSON_LEVEL: Record<Level, string> = {
  INFO: 'INFO',
  WARNING: 'WARN',
  ERROR: 'ERROR',
  DEBUG: 'DEBUG',
  FATAL: 'FATAL',
};

function pad(n: number, width = 2): string {
  return String(n).padStart(width, '0');
}

/** Go's time.RFC3339Nano of now, in local time (`2026-11-24T04:51:55.23671Z`). */
export function rfc3339Nano(epochMs = performance.timeOrigin + performance.now()): string {
  const ms = Math.floor(epochMs);
  const d = new Date(ms);
  const nanos = Math.min(999_999_999, Math.round((epochMs - ms) * 1e6) + (ms % 1000) * 1e6);
  const frac = String(nanos).padStart(9, '0').replace(/0+$/, '');
  const off = -d.getTimezoneOffset();
  const zone =
    off === 0 ? 'Z' : `${off < 0 ? '-' : '+'}${pad(Math.floor(Math.abs(off) / 60))}:${pad(Math.abs(off) % 60)}`;
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}${frac ? `.${frac}` : ''}${zone}`;
}

/** A JSON string as Go's slog writes it (JSON.stringify, plus \u2028 and \u2029 escaped). */
function jsonString(s: string): string {
  return JSON.stringify(s).replace(/[\u2028\u2029]/g, (c) => `\\u${c.charCodeAt(0).toString(16)}`);
}

function jsonValue(v: Attr): string {
  if (typeof v === 'string') return jsonString(v);
  if (typeof v === 'number' && !Number.isFinite(v)) return jsonString(String(v));
  return JSON.stringify(v);
}

/** One JSON line as CoreDNS's slog handler writes it: time, level, msg, plugin, then `attrs`. */
export function jsonLine(
  level: Level,
  msg: string,
  plugin?: string,
  attrs?: Readonly<Record<string, Attr>>,
  time = rfc3339Nano(),
): string {
  let line = `{"time":"${time}","level":"${JSON_LEVEL[level]}","msg":${jsonString(msg)}`;
  if (plugin !== undefined) line += `,"plugin":${jsonString(plugin)}`;
  if (attrs) for (const k of Object.keys(attrs)) line += `,${jsonString(k)}:${jsonValue(attrs[k]!)}`;
  return `${line}}`;
}

/** Go's log.Print: one trailing newline of the message is the line's own. */
function trimNewline(s: string): string {
  return s.endsWith('\n') ? s.slice(0, -1) : s;
}

/** Set while a `queryLog` logger writes (lines are written synchronously). */
let aboutQuery = false;

const PLUGIN_PREFIX = /^plugin\/([^:\s]+): /;

/**
 * A line `text` at `level`; `text` may start with `plugin/<name>: `, which in json mode becomes the
 * `plugin` field (as CoreDNS's plugin loggers do).
 */
export function writeLine(level: Level, text: string): void {
  if (level === 'DEBUG' && !debugEnabled) return;
  if (jsonFormat) {
    const m = PLUGIN_PREFIX.exec(text);
    sink(m ? jsonLine(level, text.slice(m[0].length), m[1]) : jsonLine(level, text), aboutQuery);
    return;
  }
  sink(`[${level}] ${trimNewline(text)}`, aboutQuery);
}

/**
 * `log` for lines about one query (the errors plugin's): the same lines, marked for the sink as
 * about a query, so a query thread writes them even while it holds back its own reload lines.
 */
export function queryLog(log: Logger): Logger {
  const about =
    <A extends unknown[]>(write: (...a: A) => void) =>
    (...a: A): void => {
      aboutQuery = true;
      try {
        write(...a);
      } finally {
        aboutQuery = false;
      }
    };
  return {
    info: about(log.info),
    warning: about(log.warning),
    error: about(log.error),
    debug: about(log.debug),
    raw: about(log.raw),
  };
}

/**
 * A log plugin's query line with its structured fields: `[INFO] <msg>` in text mode, in json mode
 * `msg` with `"plugin":"log"` and `attrs` in order.
 */
export function writeQueryLine(msg: string, attrs: Readonly<Record<string, Attr>>): void {
  if (jsonFormat) sink(jsonLine('INFO', msg, 'log', attrs), true);
  else sink(`[INFO] ${msg}`, true);
}

/**
 * The start-up failure line and exit 1, as CoreDNS's `mustLogFatal` writes it: Go's standard
 * logger without flags, so the message alone on stderr (`Corefile:3 - Error during parsing: …`,
 * `listen tcp :53: bind: address already in use`), no `[FATAL]` level. Operators and the
 * differential suite grep this exact text (docs/logs.md).
 */
export function startupFailure(msg: string): never {
  // In json mode, as CoreDNS's clog.Fatal on stderr: a FATAL object.
  process.stderr.write(`${jsonFormat ? jsonLine('FATAL', msg) : msg}\n`);
  process.exit(1);
}

/** Go's standard logger with its default flags: `2026/11/24 04:51:47 msg`, local time. */
export function goStdLogLine(msg: string, d = new Date()): string {
  return `${d.getFullYear()}/${pad(d.getMonth() + 1)}/${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())} ${msg}`;
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

/** A logger that writes nothing. */
export const silentLog: Logger = { info() {}, warning() {}, error() {}, debug() {}, raw() {} };

/**
 * The logger of a plugin's background work (a zone file's reload, a directory scan, a hosts or
 * weight file's re-read, the Corefile check): `log` on the main thread, silent in a query thread
 * (`queryThread`, ProcessInfo.queryThread). Every thread repeats that work on its own copy of the
 * data (docs/multicore.md §7), but CoreDNS is one process and logs each event once: the main
 * thread's line is that one. Lines about a query (log, errors) are not background work and keep
 * the thread's own logger.
 */
export function backgroundLog(log: Logger, queryThread: boolean): Logger {
  return queryThread ? silentLog : log;
}

/**
 * Lines CoreDNS writes through Go's standard logger with the level in the text (Caddy's
 * `[INFO] Reloading`, `[INFO] SIGTERM: …`, `[ERROR] Restart failed: …`): the same `[LEVEL] msg` in
 * text mode; in json mode level INFO with `msg` = `[LEVEL] msg`, as CoreDNS writes them.
 */
function stdLine(level: Level, m: string): void {
  if (level === 'DEBUG' && !debugEnabled) return;
  if (jsonFormat) sink(jsonLine('INFO', `[${level}] ${m}`), false);
  else writeLine(level, m);
}

export const stdLog: Logger = {
  info: (m) => stdLine('INFO', m),
  warning: (m) => stdLine('WARNING', m),
  error: (m) => stdLine('ERROR', m),
  debug: (m) => stdLine('DEBUG', m),
  raw: (level, line) => stdLine(level, line),
};

/**
 * A line CoreDNS writes through Go's standard logger without any level in the text (Caddy's
 * `error on 'on-…' hook: …`): as it is in text mode, an INFO object in json mode.
 */
export function stdPlainLine(m: string): void {
  sink(jsonFormat ? jsonLine('INFO', m) : trimNewline(m), false);
}

/** An informational line without level tag (the banner: `.:53`, the version): in json mode an INFO object. */
export function bannerLine(text: string): string {
  return jsonFormat ? jsonLine('INFO', text) : text;
}
