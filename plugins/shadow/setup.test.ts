import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/corefile/types.js';
import { configError, dispenserFor } from '../../test/helpers/setup.js';
import { startServer } from '../../test/helpers/server.js';
import { makeQuery } from '../../test/helpers/dns.js';
import { comparePlan, isIgnorable } from './compare.js';
import { Sampler } from './handler.js';
import { LogLimiter, makeHooks } from './index.js';
import { parseReference, parseShadow } from './setup.js';

const parse = (text: string) => parseShadow(dispenserFor(text, 'shadow'));

function parseErr(text: string): ConfigError {
  return configError(() => parse(text), text);
}

describe('shadow setup: accepted', () => {
  it('defaults', () => {
    expect(parse('shadow 10.96.0.10')).toEqual({
      references: [{ host: '10.96.0.10', port: 53, label: '10.96.0.10:53' }],
      fraction: 1,
      timeoutMs: 2000,
      ignore: new Set(),
      maxOutstanding: 100,
      logCount: 10,
      logWindowMs: 10_000,
    });
  });

  it('every property; several references, duplicates once', () => {
    const c = parse(`shadow 127.0.0.1:1053 dns://[::1]:1054 ::1 127.0.0.1:1053 {
      fraction 0.01
      timeout 500ms
      ignore ttl flags:AA edns:options
      ignore loadbalance-shuffle
      max_outstanding 20
      log_rate 5 1m
    }`);
    expect(c.references.map((r) => r.label)).toEqual(['127.0.0.1:1053', '[::1]:1054', '[::1]:53']);
    expect(c.fraction).toBe(0.01);
    expect(c.timeoutMs).toBe(500);
    expect([...c.ignore]).toEqual(['ttl', 'flags:AA', 'edns:options', 'loadbalance-shuffle']);
    expect(c.maxOutstanding).toBe(20);
    expect(c.logCount).toBe(5);
    expect(c.logWindowMs).toBe(60_000);
  });

  it('fraction bounds and log_rate 0', () => {
    expect(parse('shadow 127.0.0.1 {\n fraction 0\n}').fraction).toBe(0);
    expect(parse('shadow 127.0.0.1 {\n fraction 1\n}').fraction).toBe(1);
    expect(parse('shadow 127.0.0.1 {\n fraction .5\n}').fraction).toBe(0.5);
    expect(parse('shadow 127.0.0.1 {\n log_rate 0\n}').logCount).toBe(0);
  });

  it('reference address forms', () => {
    expect(parseReference('1.2.3.4')).toEqual({ host: '1.2.3.4', port: 53, label: '1.2.3.4:53' });
    expect(parseReference('[2001:db8::1]')?.label).toBe('[2001:db8::1]:53');
    expect(parseReference('coredns.kube-system.svc.cluster.local:1053')).toEqual({
      host: 'coredns.kube-system.svc.cluster.local',
      port: 1053,
      label: 'coredns.kube-system.svc.cluster.local:1053',
    });
    expect(parseReference('localhost')?.label).toBe('localhost:53');
    for (const bad of [
      '10.0.0.256',
      '1.2.3',
      '1.2.3.4:0',
      '1.2.3.4:65536',
      '[::1',
      '[::1]x',
      '[1.2.3.4]:53',
      '1.2.3.4:',
      'tls://1.2.3.4',
      'host!name',
      '-x.example',
      'a..b',
    ]) {
      expect(parseReference(bad), bad).toBeNull();
    }
  });
});

describe('shadow setup: rejected with file:line', () => {
  const cases: [string, string][] = [
    ['shadow', "Wrong argument count or unexpected line ending after 'shadow'"],
    ['shadow 10.0.0.256:53', "invalid reference address '10.0.0.256:53': want IP, IP:port or host:port"],
    ['shadow 127.0.0.1 {\n fraction 1.5\n}', "fraction must be a number between 0 and 1, got '1.5'"],
    ['shadow 127.0.0.1 {\n fraction -0.1\n}', "fraction must be a number between 0 and 1, got '-0.1'"],
    ['shadow 127.0.0.1 {\n fraction 10%\n}', "fraction must be a number between 0 and 1, got '10%'"],
    ['shadow 127.0.0.1 {\n fraction\n}', "Wrong argument count or unexpected line ending after 'fraction'"],
    ['shadow 127.0.0.1 {\n timeout 2\n}', "invalid timeout '2'"],
    ['shadow 127.0.0.1 {\n timeout 0s\n}', "timeout must be positive, got '0s'"],
    ['shadow 127.0.0.1 {\n ignore\n}', "Wrong argument count or unexpected line ending after 'ignore'"],
    ['shadow 127.0.0.1 {\n ignore ttl colour\n}', "unknown difference kind or rule 'colour'"],
    ['shadow 127.0.0.1 {\n ignore flags:XX\n}', "unknown difference kind or rule 'flags:XX'"],
    ['shadow 127.0.0.1 {\n max_outstanding 0\n}', "max_outstanding must be an integer between 1 and 10000, got '0'"],
    [
      'shadow 127.0.0.1 {\n max_outstanding many\n}',
      "max_outstanding must be an integer between 1 and 10000, got 'many'",
    ],
    ['shadow 127.0.0.1 {\n log_rate\n}', "Wrong argument count or unexpected line ending after 'log_rate'"],
    ['shadow 127.0.0.1 {\n log_rate 5 soon\n}', "invalid log_rate duration 'soon'"],
    ['shadow 127.0.0.1 {\n sample 0.1\n}', "unknown property 'sample'"],
  ];
  for (const [text, msg] of cases) {
    it(JSON.stringify(text), () => {
      const e = parseErr(text);
      expect(e.message).toBe(msg);
      expect(e.line).toBe(text.split('\n').length > 1 ? 2 : 1);
    });
  }

  it('a bad shadow stanza fails the start with file:line; twice in a block is an error', async () => {
    const startErr = async (text: string): Promise<string> => {
      try {
        const s = await startServer(text);
        await s.stop();
      } catch (e) {
        if (e instanceof ConfigError) return e.describe();
        throw e;
      }
      throw new Error('server started');
    };
    expect(await startErr('. {\n  whoami\n  shadow 127.0.0.1 {\n    fraction 2\n  }\n}\n')).toMatch(
      /^plugin\/shadow: .*Corefile:4 - Error during parsing: fraction must be a number between 0 and 1, got '2'$/,
    );
    expect(await startErr('. {\n  whoami\n  shadow 127.0.0.1\n  shadow 127.0.0.2\n}\n')).toMatch(
      /Corefile:4 - Error during parsing: this plugin can only be used once per Server Block$/,
    );
  });
});

describe('shadow: ignore list and sampling', () => {
  it('ignore accepts kinds, kind:field and tolerance rule ids', () => {
    expect(isIgnorable('ttl')).toBe(true);
    expect(isIgnorable('flags:RA')).toBe(true);
    expect(isIgnorable('edns:udpsize')).toBe(true);
    expect(isIgnorable('cache-ttl-aging')).toBe(true);
    expect(isIgnorable('answer:x')).toBe(false);
    const plan = comparePlan(new Set(['ttl', 'flags:AA', 'loadbalance-shuffle']), ['cache', 'kubernetes']);
    expect(plan.kinds).toEqual(['ttl']);
    expect(plan.context.plugins).toEqual(['cache', 'kubernetes', 'loadbalance']);
    expect(plan.rules.some((r) => r.id === 'ignore flags:AA' && r.match.fields?.[0] === 'AA')).toBe(true);
  });

  it('the sampler skips a geometric number of queries: mean (1-p)/p', () => {
    // A fixed linear-congruential sequence instead of Math.random: the test is deterministic.
    let x = 12345;
    const rnd = (): number => {
      x = (x * 1103515245 + 12345) % 2 ** 31;
      return x / 2 ** 31;
    };
    const s = new Sampler(0.01, rnd);
    let sum = 0;
    const n = 20_000;
    for (let i = 0; i < n; i++) sum += s.skip();
    expect(sum / n).toBeGreaterThan(90);
    expect(sum / n).toBeLessThan(108);
    expect(new Sampler(1).skip()).toBe(0);
    expect(new Sampler(0.5, () => 0).skip()).toBe(0);
  });

  it('an exception while judging a reply is logged, never thrown into the socket callback', () => {
    const lines: string[] = [];
    const log = {
      info: () => undefined,
      warning: () => undefined,
      error: (m: string) => lines.push(m),
      debug: () => undefined,
      raw: () => undefined,
    };
    const hooks = makeHooks(
      parse('shadow 127.0.0.1'),
      () => {
        throw new Error('no plan');
      },
      log,
    );
    const req = makeQuery('x.example', 'A').req;
    const ref = { host: '127.0.0.1', port: 53, label: '127.0.0.1:53' };
    expect(() =>
      hooks.reply({ reference: ref, req, query: Buffer.alloc(12), theirs: Buffer.alloc(12), ours: Buffer.alloc(12) }),
    ).not.toThrow();
    expect(lines[0]).toMatch(/^comparison failed: Error: no plan/);
  });

  it('the log limiter lets COUNT lines through per window and reports the rest', () => {
    let now = 0;
    const l = new LogLimiter(2, 1000, () => now);
    expect(l.take()).toBe('');
    expect(l.take()).toBe('');
    expect(l.take()).toBeNull();
    expect(l.take()).toBeNull();
    now = 1000;
    expect(l.take()).toBe('(2 more not logged) ');
    expect(new LogLimiter(0, 1000).take()).toBeNull();
  });
});
