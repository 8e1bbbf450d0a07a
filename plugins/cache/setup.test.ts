import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/corefile/types.js';
import { CacheHandler } from './handler.js';
import { cache } from './index.js';
import { effectiveCapacity, parseCache } from './setup.js';
import { configError, dispenserFor, setupContext } from '../../test/helpers/setup.js';

const parse = (text: string) => parseCache(dispenserFor(text, 'cache'));

function parseErr(text: string): ConfigError {
  return configError(() => parse(text), text);
}

describe('cache setup: accepted', () => {
  it('defaults', () => {
    expect(parse('cache')).toEqual({
      zones: [],
      success: { capacity: 10000, maxTtl: 3600, minTtl: 5 },
      denial: { capacity: 10000, maxTtl: 1800, minTtl: 5 },
      prefetch: null,
      serveStale: null,
      preferPositive: false,
      servfailMs: 5000,
      disableSuccess: [],
      disableDenial: [],
      keepTtl: false,
    });
  });

  it('TTL sets both maxima; zones are normalised', () => {
    const c = parse('cache 30 Example.ORG 10.0.0.0/24');
    expect(c.success.maxTtl).toBe(30);
    expect(c.denial.maxTtl).toBe(30);
    expect(c.zones).toEqual(['example.org.', '0.0.10.in-addr.arpa.']);
  });

  it('a non-numeric first argument is a zone', () => {
    expect(parse('cache example.org').zones).toEqual(['example.org.']);
  });

  it('every property', () => {
    const c = parse(`cache 300 {
      success 5000 600 10
      denial 2000 60
      prefetch 10 2m 20%
      serve_stale 30m verify 1s 5s 1m
      serve_stale_policy prefer_positive
      servfail 10s
      disable success cluster.local
      disable denial
      keepttl
    }`);
    expect(c).toEqual({
      zones: [],
      success: { capacity: 5000, maxTtl: 600, minTtl: 10 },
      denial: { capacity: 2000, maxTtl: 60, minTtl: 5 },
      prefetch: { amount: 10, durationMs: 120_000, percentage: 20 },
      serveStale: { durationMs: 1_800_000, mode: 'verify', timeoutMs: 1000, responseTtl: 5, recheckMs: 60_000 },
      preferPositive: true,
      servfailMs: 10_000,
      disableSuccess: ['cluster.local.'],
      disableDenial: ['.'],
      keepTtl: true,
    });
  });

  it('serve_stale defaults and immediate mode', () => {
    expect(parse('cache {\n serve_stale\n}').serveStale).toEqual({
      durationMs: 3_600_000,
      mode: 'immediate',
      responseTtl: 0,
      recheckMs: 0,
      timeoutMs: 0,
    });
    expect(parse('cache {\n serve_stale 1h immediate 3s\n}').serveStale).toMatchObject({
      mode: 'immediate',
      responseTtl: 3,
    });
    expect(parse('cache {\n prefetch 1\n}').prefetch).toEqual({ amount: 1, durationMs: 60_000, percentage: 10 });
    expect(parse('cache {\n servfail 0\n}').servfailMs).toBe(0);
  });

  it('capacity is rounded to 256 shards of at least 4 entries', () => {
    expect(effectiveCapacity(10000)).toBe(9984);
    expect(effectiveCapacity(1)).toBe(1024);
  });

  it('setup uses the block keys when no zones are given', async () => {
    const ctx = setupContext({ zones: ['cluster.local.', 'in-addr.arpa.'] });
    const f = await cache.setup(dispenserFor('cache 30', 'cache'), ctx);
    const h = f!(null, ctx.block) as CacheHandler;
    expect(h.zones).toEqual(['cluster.local.', 'in-addr.arpa.']);
  });
});

describe('cache setup: rejected', () => {
  const cases: [string, string, number][] = [
    ['cache 0', 'cache TTL can not be zero or negative: 0', 1],
    ['cache -10', 'cache TTL can not be zero or negative: -10', 1],
    ['cache {\n success\n}', "Wrong argument count or unexpected line ending after 'success'", 2],
    ['cache {\n success abc\n}', 'strconv.Atoi: parsing "abc": invalid syntax', 2],
    ['cache {\n success 10 0\n}', 'cache TTL can not be zero or negative: 0', 2],
    ['cache {\n denial 10 10 -1\n}', 'cache min TTL can not be negative: -1', 2],
    ['cache {\n prefetch\n}', "Wrong argument count or unexpected line ending after 'prefetch'", 2],
    ['cache {\n prefetch -1\n}', 'prefetch amount should be positive: -1', 2],
    ['cache {\n prefetch 1 1m 20\n}', "last character of percentage should be `%`, but is: '0'", 2],
    ['cache {\n prefetch 1 1m 95%\n}', 'percentage should fall in range [10, 90]: 95', 2],
    ['cache {\n prefetch 1 10\n}', 'time: missing unit in duration "10"', 2], // Go's text, as CoreDNS 1.15.0 prints it
    ['cache {\n serve_stale -1h\n}', 'invalid negative duration for serve_stale', 2],
    ['cache {\n serve_stale 1h later\n}', 'invalid value for serve_stale refresh mode: later', 2],
    ['cache {\n serve_stale 1h immediate 0s 10m\n}', 'serve_stale failure recheck cannot exceed 5 minutes', 2], // CoreDNS 1.15.0's text
    [
      'cache {\n serve_stale 1h immediate 5\n}',
      'invalid serve_stale response TTL: time: missing unit in duration "5"',
      2,
    ],
    ['cache {\n serve_stale 1h immediate 1s 1s 1s\n}', "Wrong argument count or unexpected line ending after '1s'", 2],
    [
      'cache {\n serve_stale_policy prefer_positive\n serve_stale_policy prefer_positive\n serve_stale\n}',
      'serve_stale_policy can only be specified once',
      3,
    ],
    ['cache {\n servfail 6m\n}', 'caching SERVFAIL responses over 5 minutes is not permitted', 2],
    ['cache {\n servfail -1s\n}', 'invalid negative ttl for servfail', 2],
    ['cache {\n servfail\n}', "Wrong argument count or unexpected line ending after 'servfail'", 2],
    ['cache {\n disable\n}', "Wrong argument count or unexpected line ending after 'disable'", 2],
    ['cache {\n disable everything\n}', 'cache type for disable must be "success" or "denial"', 2],
    ['cache {\n keepttl 1\n}', "Wrong argument count or unexpected line ending after '1'", 2],
    ['cache {\n serve_stale_policy prefer_positive\n}', 'serve_stale_policy requires serve_stale', 3],
    ['cache {\n frobnicate\n}', "Wrong argument count or unexpected line ending after 'frobnicate'", 2],
  ];
  for (const [text, message, line] of cases) {
    it(`${text.replace(/\n/g, ' ')} → ${message}`, () => {
      const e = parseErr(text);
      expect(e.message).toBe(message);
      expect(e.line).toBe(line);
    });
  }
});
