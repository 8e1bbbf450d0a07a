import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { ConfigError } from '../../src/corefile/types.js';
import { enableDebug, logger } from '../../src/log.js';
import type { Handler } from '../../src/plugin.js';
import { encodeQuery, makeQuery, rcode, udpExchange } from '../../test/helpers/dns.js';
import { decode } from '../../src/dns/message.js';
import { startServer } from '../../test/helpers/server.js';
import { FakeNext } from '../../test/helpers/upstream.js';
import { errors } from './index.js';
import { configError, dispenserFor, factoryOf, setupContext, type TestContext } from '../../test/helpers/setup.js';
import { captureLogs, type LogCapture } from '../../test/helpers/logs.js';

let lines: string[] = [];
let capture: LogCapture | null = null;

/** Capture log lines for the tests of the calling describe (restores the previous sink after each). */
function captureLogsEachTest(): void {
  beforeEach(() => {
    capture = captureLogs();
    lines = capture.lines;
  });
  afterEach(() => {
    capture?.restore();
    capture = null;
    vi.useRealTimers();
    enableDebug(false);
  });
}

/** Build the errors handler from Corefile text through the plugin's setup. */
function build(text: string, next: Handler | null): { h: Handler; ctx: TestContext } {
  // The server gives each plugin a logger named after it.
  const ctx: TestContext = { ...setupContext(), log: logger('errors') };
  const f = factoryOf(errors.setup(dispenserFor(text, 'errors'), ctx));
  return { h: f(next, ctx.block), ctx };
}

const failing = (msg = 'boom', rc = 2): FakeNext => new FakeNext((q) => q.fail(new Error(msg), rc));
const failingAsync = (msg: string, rc: number): FakeNext =>
  new FakeNext(async (q) => {
    await Promise.resolve();
    return q.fail(new Error(msg), rc);
  });
const ok = (): FakeNext => new FakeNext(() => 0);

function setupErr(text: string): ConfigError {
  return configError(() => errors.setup(dispenserFor(text, 'errors'), setupContext()), text);
}

describe('errors: runtime logging', () => {
  captureLogsEachTest();

  it('logs `[ERROR] plugin/errors: <rcode> <qname lower-case> <qtype>: <error>` on a chain error', async () => {
    const next = failing('read udp 10.244.0.5:43210->10.0.0.2:53: i/o timeout');
    const { h } = build('errors', next);
    const q = makeQuery('WWW.Example.ORG', 'A');
    expect(await h.serve(q)).toBe(2);
    expect(next.calls).toBe(1);
    expect(lines).toEqual([
      '[ERROR] plugin/errors: 2 www.example.org. A: read udp 10.244.0.5:43210->10.0.0.2:53: i/o timeout',
    ]);
  });

  it('uses the RCODE returned by the chain and the qtype mnemonic (async next)', async () => {
    const { h } = build('errors', failingAsync('refused by policy', 5));
    expect(await h.serve(makeQuery('a.b.', 'AAAA'))).toBe(5);
    expect(lines).toEqual(['[ERROR] plugin/errors: 5 a.b. AAAA: refused by policy']);
  });

  it('logs nothing on success (sync and async), and does not change the reply', async () => {
    const { h } = build('errors', ok());
    expect(await h.serve(makeQuery('example.org', 'A'))).toBe(0);
    const { h: h2 } = build(
      'errors',
      new FakeNext(async () => {
        await Promise.resolve();
        return 3;
      }),
    );
    expect(await h2.serve(makeQuery('nx.example.org', 'A'))).toBe(3);
    expect(lines).toEqual([]);
  });

  it('passes the query through unchanged (the reply written by next stays)', async () => {
    const next = new FakeNext((q) => {
      q.writeWire(Buffer.from(encodeQuery('example.org', 'A', { id: q.id })), 'fake');
      return 0;
    });
    const { h } = build('errors', next);
    const q = makeQuery('example.org', 'A');
    await h.serve(q);
    expect(next.seen[0]).toBe(q);
    expect(q.reply).not.toBeNull();
  });

  it('without a next plugin returns SERVFAIL and logs it', async () => {
    const { h } = build('errors', null);
    expect(await h.serve(makeQuery('example.org', 'A'))).toBe(2);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^\[ERROR\] plugin\/errors: 2 example\.org\. A: /);
  });

  it('`stdout` argument is accepted and logs the same way', async () => {
    const { h } = build('errors stdout', failing('x'));
    await h.serve(makeQuery('example.org', 'TXT'));
    expect(lines).toEqual(['[ERROR] plugin/errors: 2 example.org. TXT: x']);
  });

  it('stacktrace property appends the stack to the line', async () => {
    const { h } = build('errors {\n stacktrace\n}', failing('with stack'));
    await h.serve(makeQuery('example.org', 'A'));
    expect(lines).toHaveLength(1);
    expect(lines[0]!.startsWith('[ERROR] plugin/errors: 2 example.org. A: with stack\n')).toBe(true);
  });
});

describe('errors: setup', () => {
  captureLogsEachTest();

  it('accepts no arguments, stdout, stacktrace, consolidate forms', () => {
    for (const text of [
      'errors',
      'errors stdout',
      'errors {\n stacktrace\n}',
      'errors {\n consolidate 30s ^read\n}',
      'errors {\n consolidate 5m "i/o timeout" warning\n}',
      'errors {\n consolidate 1m x info show_first\n}',
      'errors {\n consolidate 1m x show_first\n}',
      'errors {\n consolidate 1m x debug\n consolidate 1h30m y error\n}',
      'errors stdout {\n stacktrace\n consolidate 1m x\n}',
    ]) {
      expect(typeof factoryOf(errors.setup(dispenserFor(text, 'errors'), setupContext())), text).toBe('function');
    }
  });

  it('any argument but stdout → invalid log file: X', () => {
    expect(setupErr('errors /var/log/errors.log').message).toContain('invalid log file: /var/log/errors.log');
    expect(setupErr('errors stderr').message).toContain('invalid log file: stderr');
  });

  it('more than one argument is rejected', () => {
    expect(setupErr('errors stdout stdout')).toBeInstanceOf(ConfigError);
  });

  it('unknown property → Unknown field X', () => {
    expect(setupErr('errors {\n bogus\n}').message).toContain('Unknown field bogus');
  });

  it('stacktrace takes no argument', () => {
    expect(setupErr('errors {\n stacktrace yes\n}')).toBeInstanceOf(ConfigError);
  });

  it('consolidate: wrong argument counts', () => {
    setupErr('errors {\n consolidate\n}');
    setupErr('errors {\n consolidate 1m\n}');
    setupErr('errors {\n consolidate 1m x warning show_first extra\n}');
  });

  it('consolidate: bad durations', () => {
    setupErr('errors {\n consolidate 30 x\n}');
    setupErr('errors {\n consolidate abc x\n}');
    setupErr('errors {\n consolidate 5 minutes\n}');
  });

  it('consolidate: invalid regexp', () => {
    setupErr('errors {\n consolidate 1m "(unclosed"\n}');
  });

  it('consolidate: regexp longer than 10000 characters', () => {
    expect(setupErr(`errors {\n consolidate 1m ${'a'.repeat(10001)}\n}`).message).toContain('10001');
    expect(
      typeof factoryOf(
        errors.setup(dispenserFor(`errors {\n consolidate 1m ${'a'.repeat(10000)}\n}`, 'errors'), setupContext()),
      ),
    ).toBe('function');
  });

  it('consolidate: unknown level, level after show_first, two levels, show_first twice', () => {
    expect(setupErr('errors {\n consolidate 1m x fatal\n}').message).toContain('fatal');
    // CoreDNS 1.15.0's texts; a repeated show_first is accepted there too.
    expect(setupErr('errors {\n consolidate 1m x fatal\n}').message).toBe('unknown option in consolidate: fatal');
    expect(setupErr('errors {\n consolidate 1m x show_first warning\n}').message).toBe(
      'log level must come before show_first in consolidate',
    );
    expect(setupErr('errors {\n consolidate 1m x warning error\n}').message).toBe(
      'multiple log levels specified in consolidate',
    );
    expect(
      typeof factoryOf(
        errors.setup(dispenserFor('errors {\n consolidate 1m x show_first show_first\n}', 'errors'), setupContext()),
      ),
    ).toBe('function');
  });

  it('errors carry the file and line', () => {
    const e = setupErr('errors {\n stacktrace\n bogus\n}');
    expect(e.file).toBe('Corefile');
    expect(e.line).toBe(3);
  });
});

describe('errors: consolidate', () => {
  captureLogsEachTest();

  it('N matching errors → one summary at ERROR after the period, nothing before', async () => {
    vi.useFakeTimers();
    const { h } = build('errors {\n consolidate 30s "i/o timeout$"\n}', failing('read udp: i/o timeout'));
    for (let i = 0; i < 3; i++) await h.serve(makeQuery(`n${i}.example.org`, 'A'));
    expect(lines).toEqual([]);
    vi.advanceTimersByTime(29_999);
    expect(lines).toEqual([]);
    vi.advanceTimersByTime(1);
    expect(lines).toEqual(["[ERROR] plugin/errors: 3 errors like 'i/o timeout$' occurred in last 30s"]);
    vi.advanceTimersByTime(120_000);
    expect(lines).toHaveLength(1);
  });

  it('non-matching errors are logged normally; duration printed Go-style (5m0s); level warning', async () => {
    vi.useFakeTimers();
    let n = 0;
    const next = new FakeNext((q) => q.fail(new Error(n++ % 2 === 0 ? 'timeout here' : 'other failure'), 2));
    const { h } = build('errors {\n consolidate 5m timeout warning\n}', next);
    for (let i = 0; i < 4; i++) await h.serve(makeQuery('x.example.org', 'A'));
    expect(lines).toEqual([
      '[ERROR] plugin/errors: 2 x.example.org. A: other failure',
      '[ERROR] plugin/errors: 2 x.example.org. A: other failure',
    ]);
    vi.advanceTimersByTime(300_000);
    expect(lines.slice(2)).toEqual(["[WARNING] plugin/errors: 2 errors like 'timeout' occurred in last 5m0s"]);
  });

  it('levels info and debug', async () => {
    vi.useFakeTimers();
    enableDebug(true);
    const { h } = build(
      'errors {\n consolidate 1s a info\n consolidate 2s b debug\n}',
      new FakeNext((q) => q.fail(new Error(q.lname.startsWith('a') ? 'a' : 'b'), 2)),
    );
    await h.serve(makeQuery('a.', 'A'));
    await h.serve(makeQuery('a.', 'A'));
    await h.serve(makeQuery('b.', 'A'));
    vi.advanceTimersByTime(2000);
    expect(lines).toEqual([
      "[INFO] plugin/errors: 2 errors like 'a' occurred in last 1s",
      "[DEBUG] plugin/errors: 1 errors like 'b' occurred in last 2s",
    ]);
  });

  it('first matching rule wins', async () => {
    vi.useFakeTimers();
    const { h } = build('errors {\n consolidate 10s time\n consolidate 10s timeout\n}', failing('timeout'));
    await h.serve(makeQuery('a.', 'A'));
    await h.serve(makeQuery('a.', 'A'));
    vi.advanceTimersByTime(10_000);
    expect(lines).toEqual(["[ERROR] plugin/errors: 2 errors like 'time' occurred in last 10s"]);
  });

  it('a new period starts with the next match after a summary', async () => {
    vi.useFakeTimers();
    const { h } = build('errors {\n consolidate 10s x\n}', failing('x'));
    await h.serve(makeQuery('a.', 'A'));
    vi.advanceTimersByTime(10_000);
    await h.serve(makeQuery('a.', 'A'));
    await h.serve(makeQuery('a.', 'A'));
    vi.advanceTimersByTime(10_000);
    expect(lines).toEqual([
      "[ERROR] plugin/errors: 1 errors like 'x' occurred in last 10s",
      "[ERROR] plugin/errors: 2 errors like 'x' occurred in last 10s",
    ]);
  });

  it('show_first logs the first error immediately at LEVEL, summary only if n > 1', async () => {
    vi.useFakeTimers();
    const { h } = build('errors {\n consolidate 1m boom warning show_first\n}', failing('boom'));
    await h.serve(makeQuery('First.example.org', 'A'));
    expect(lines).toEqual(['[WARNING] plugin/errors: 2 first.example.org. A: boom']);
    await h.serve(makeQuery('second.example.org', 'A'));
    await h.serve(makeQuery('third.example.org', 'A'));
    expect(lines).toHaveLength(1);
    vi.advanceTimersByTime(60_000);
    expect(lines.slice(1)).toEqual(["[WARNING] plugin/errors: 3 errors like 'boom' occurred in last 1m0s"]);
    // A period with a single error: shown first, no summary.
    await h.serve(makeQuery('alone.example.org', 'A'));
    vi.advanceTimersByTime(60_000);
    expect(lines.slice(2)).toEqual(['[WARNING] plugin/errors: 2 alone.example.org. A: boom']);
  });

  it('show_first without level uses ERROR', async () => {
    vi.useFakeTimers();
    const { h } = build('errors {\n consolidate 1m boom show_first\n}', failing('boom'));
    await h.serve(makeQuery('a.', 'A'));
    expect(lines).toEqual(['[ERROR] plugin/errors: 2 a. A: boom']);
  });

  it('pending summaries are flushed on shutdown', async () => {
    vi.useFakeTimers();
    const { h, ctx } = build('errors {\n consolidate 1h boom\n}', failing('boom'));
    await h.serve(makeQuery('a.', 'A'));
    await h.serve(makeQuery('b.', 'A'));
    expect(lines).toEqual([]);
    await ctx.stop();
    expect(lines).toEqual(["[ERROR] plugin/errors: 2 errors like 'boom' occurred in last 1h0m0s"]);
    // The timer was cancelled: nothing more when the period would have ended.
    vi.advanceTimersByTime(3_600_000);
    expect(lines).toHaveLength(1);
  });

  it('shutdown with nothing pending logs nothing', async () => {
    const { ctx } = build('errors {\n consolidate 1h boom\n}', failing('boom'));
    await ctx.stop();
    expect(lines).toEqual([]);
  });
});

describe('errors: end to end', () => {
  it('a second errors in a server block is a setup error', async () => {
    await expect(startServer('. {\n errors\n errors\n whoami\n}\n')).rejects.toThrow(
      /only be used once per Server Block/,
    );
  });

  it('logs the failure of a later plugin in the running server and keeps the reply', async () => {
    // `forward` to a port where nothing listens: the chain fails with SERVFAIL and an error.
    const srv = await startServer('. {\n errors\n forward . 127.0.0.1:9 {\n  expire 1s\n }\n}\n');
    try {
      let m;
      try {
        m = decode(await udpExchange(srv.port, encodeQuery('Fail.Example.org', 'A'), 15000));
      } catch (e) {
        throw new Error(`no reply: ${String(e)}`);
      }
      expect(rcode(m)).toBe(2);
      const errLines = srv.logs.filter((l) => l.startsWith('[ERROR] plugin/errors: '));
      expect(errLines, srv.logs.join('\n')).toHaveLength(1);
      expect(errLines[0]).toMatch(/^\[ERROR\] plugin\/errors: 2 fail\.example\.org\. A: ./);
    } finally {
      await srv.stop();
    }
  });

  it('logs nothing for a successful query', async () => {
    const srv = await startServer('. {\n errors\n whoami\n}\n');
    try {
      const m = decode(await udpExchange(srv.port, encodeQuery('example.org', 'A')));
      expect(rcode(m)).toBe(0);
      expect(srv.logs.filter((l) => l.includes('plugin/errors'))).toEqual([]);
    } finally {
      await srv.stop();
    }
  });
});
