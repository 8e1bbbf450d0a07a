import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  backgroundLog,
  checkLogFormat,
  jsonLine,
  logger,
  queryLog,
  rfc3339Nano,
  setLogFormat,
  setLogSink,
  stdLog,
  writeLine,
  writeQueryLine,
  type Sink,
} from './log.js';

describe('log lines', () => {
  const lines: string[] = [];
  let prev: Sink | undefined;
  beforeEach(() => {
    lines.length = 0;
    prev = setLogSink((l) => lines.push(l));
  });
  afterEach(() => {
    if (prev) setLogSink(prev);
    setLogFormat('text');
  });

  it("text (the default): `[LEVEL] plugin/name: msg`, one trailing newline dropped as Go's log.Print does", () => {
    logger('reload').info('Running configuration SHA512 = ab\n');
    stdLog.info('Reloading');
    writeQueryLine('127.0.0.1:1 - 2 "A IN a. udp 19 false 512" NOERROR qr 19 0.1s', { id: 2 });
    expect(lines).toEqual([
      '[INFO] plugin/reload: Running configuration SHA512 = ab',
      '[INFO] Reloading',
      '[INFO] 127.0.0.1:1 - 2 "A IN a. udp 19 false 512" NOERROR qr 19 0.1s',
    ]);
  });

  it('json: time, level, msg, plugin, then the fields, in that order; slog level names; the newline kept', () => {
    setLogFormat('json');
    logger('reload').info('Running configuration SHA512 = ab\n');
    logger('errors').warning('w');
    writeLine('ERROR', 'plugin/errors: 2 a. A: x');
    writeLine('FATAL', 'plugin/loop: Loop');
    stdLog.error('Restart failed: x');
    logger().info('.:53');
    writeQueryLine('m', { client_ip: '::1', client_port: 5, dnssec_ok: false, rcode: null, duration_seconds: 1e-7 });
    const parsed = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
    for (const p of parsed) expect(p['time']).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d*[1-9])?(Z|[+-]\d\d:\d\d)$/);
    const sansTime = lines.map((l) => l.replace(/^\{"time":"[^"]+",/, '{'));
    expect(sansTime).toEqual([
      '{"level":"INFO","msg":"Running configuration SHA512 = ab\\n","plugin":"reload"}',
      '{"level":"WARN","msg":"w","plugin":"errors"}',
      '{"level":"ERROR","msg":"2 a. A: x","plugin":"errors"}',
      '{"level":"FATAL","msg":"Loop","plugin":"loop"}',
      '{"level":"INFO","msg":"[ERROR] Restart failed: x"}',
      '{"level":"INFO","msg":".:53"}',
      '{"level":"INFO","msg":"m","plugin":"log","client_ip":"::1","client_port":5,"dnssec_ok":false,"rcode":null,"duration_seconds":1e-7}',
    ]);
  });

  it("escapes as Go's slog: quotes, control characters, U+2028/U+2029; <>& as they are", () => {
    const line = jsonLine('INFO', 'a"b\\c\n\t\u0001<>&\u2028\u2029é', undefined, undefined, 'T');
    expect(line).toBe('{"time":"T","level":"INFO","msg":"a\\"b\\\\c\\n\\t\\u0001<>&\\u2028\\u2029é"}');
    expect((JSON.parse(line) as { msg: string }).msg).toBe('a"b\\c\n\t\u0001<>&\u2028\u2029é');
  });

  it('RFC 3339 with nanoseconds, trailing zeros dropped', () => {
    expect(rfc3339Nano(Date.UTC(2026, 10, 24, 4, 51, 55, 236) + 0.5)).toMatch(
      /^2026-11-2\dT\d\d:\d\d:55\.2365(Z|[+-]\d\d:\d\d)$/,
    );
    expect(rfc3339Nano(Date.UTC(2026, 0, 2, 3, 4, 5))).toMatch(/:05(Z|[+-]\d\d:\d\d)$/);
  });

  it("accepts text and json only, with CoreDNS's message", () => {
    expect(checkLogFormat('json')).toBe('json');
    expect(() => checkLogFormat('JSON')).toThrow('unknown log format "JSON": expected text or json');
  });

  it('background work logs on the main thread and is silent in a query thread', () => {
    const log = logger('file');
    backgroundLog(log, false).info('main');
    const quiet = backgroundLog(log, true);
    quiet.info('thread');
    quiet.warning('thread');
    quiet.error('thread');
    quiet.debug('thread');
    quiet.raw('INFO', 'thread');
    expect(lines).toEqual(['[INFO] plugin/file: main']);
  });

  it('marks the lines about a query for the sink (the log and errors lines), and only those', () => {
    const seen: [string, boolean][] = [];
    const before = setLogSink((l, aboutQuery) => seen.push([l, aboutQuery]));
    try {
      const errorsLog = logger('errors');
      queryLog(errorsLog).error('2 example.org. A: refused');
      writeQueryLine('127.0.0.1:5353 - 1 "A IN example.org. udp 29 false 512" NOERROR', {});
      errorsLog.error('not about a query');
      stdLog.info('Reloading');
    } finally {
      setLogSink(before);
    }
    expect(seen).toEqual([
      ['[ERROR] plugin/errors: 2 example.org. A: refused', true],
      ['[INFO] 127.0.0.1:5353 - 1 "A IN example.org. udp 29 false 512" NOERROR', true],
      ['[ERROR] plugin/errors: not about a query', false],
      ['[INFO] Reloading', false],
    ]);
  });
});
