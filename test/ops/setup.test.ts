import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/corefile/types.js';
import { parseHealth } from '../../plugins/health/setup.js';
import { parseReady } from '../../plugins/ready/setup.js';
import { parsePrometheus } from '../../plugins/prometheus/setup.js';
import { parseReload, pickPeriod } from '../../plugins/reload/setup.js';
import { dispenserFor } from './fakes.js';

function errorOf(fn: () => unknown): ConfigError {
  try {
    fn();
  } catch (e) {
    if (e instanceof ConfigError) return e;
    throw e;
  }
  throw new Error('no error');
}

describe('health setup', () => {
  const ok: [string, string, number][] = [
    ['health', ':8080', 0],
    ['health :8091', ':8091', 0],
    ['health localhost:8091', 'localhost:8091', 0],
    ['health 0.0.0.0:8080', '0.0.0.0:8080', 0],
    ['health [::1]:8080', '[::1]:8080', 0],
    ['health {\n lameduck 5s\n}', ':8080', 5000],
    ['health :8080 {\n lameduck 1m30s\n}', ':8080', 90_000],
    ['health {\n lameduck 500ms\n}', ':8080', 500],
    ['health :8081\nhealth :8082', ':8082', 0], // repeated: the last address wins
    ['health :8081 {\n lameduck 2s\n}\nhealth', ':8081', 2000], // a bare repeat keeps the address
    ['health {\n}', ':8080', 0],
  ];
  for (const [text, address, lameduckMs] of ok) {
    it(`accepts ${JSON.stringify(text)}`, () => {
      expect(parseHealth(dispenserFor(text, 'health'))).toEqual({ address, lameduckMs });
    });
  }
  const bad: [string, string][] = [
    ['health 8080', 'address 8080: missing port in address'],
    ['health localhost', 'address localhost: missing port in address'],
    ['health ::1:8080', 'address ::1:8080: too many colons in address'],
    ['health [::1]', 'address [::1]: missing port in address'],
    ['health :8080 :8081', "Wrong argument count or unexpected line ending after ':8081'"],
    ['health {\n lameduck\n}', "Wrong argument count or unexpected line ending after 'lameduck'"],
    ['health {\n lameduck 1s 2s\n}', "Wrong argument count or unexpected line ending after '2s'"],
    ['health {\n lameduck 5\n}', `unable to parse lameduck duration value: '5' : time: missing unit in duration "5"`],
    ['health {\n lameduck 5x\n}', `unable to parse lameduck duration value: '5x' : time: unknown unit "x" in duration "5x"`],
    ['health {\n lameduck abc\n}', `unable to parse lameduck duration value: 'abc' : time: invalid duration "abc"`],
    ['health {\n unknown 1\n}', "unknown property 'unknown'"],
  ];
  for (const [text, message] of bad) {
    it(`rejects ${JSON.stringify(text)}`, () => {
      const e = errorOf(() => parseHealth(dispenserFor(text, 'health')));
      expect(e.message).toBe(message);
      expect(e.plugin).toBe('health');
      expect(e.file).toBe('Corefile');
    });
  }
  it('reports the line of the bad property', () => {
    expect(errorOf(() => parseHealth(dispenserFor('health {\n\n bogus\n}', 'health'))).line).toBe(3);
  });
});

describe('ready setup', () => {
  const ok: [string, string, string][] = [
    ['ready', ':8181', 'until-ready'],
    ['ready :9191', ':9191', 'until-ready'],
    ['ready 127.0.0.1:8181', '127.0.0.1:8181', 'until-ready'],
    ['ready {\n monitor continuously\n}', ':8181', 'continuously'],
    ['ready :8181 {\n monitor until-ready\n}', ':8181', 'until-ready'],
  ];
  for (const [text, address, monitor] of ok) {
    it(`accepts ${JSON.stringify(text)}`, () => {
      expect(parseReady(dispenserFor(text, 'ready'))).toEqual({ address, monitor });
    });
  }
  const bad: [string, string][] = [
    ['ready 8181', 'address 8181: missing port in address'],
    ['ready :1 :2', "Wrong argument count or unexpected line ending after ':2'"],
    ['ready {\n monitor sometimes\n}', "monitor type 'sometimes' not supported"],
    ['ready {\n monitor\n}', "Wrong argument count or unexpected line ending after 'monitor'"],
    ['ready {\n monitor a b\n}', "Wrong argument count or unexpected line ending after 'b'"],
    ['ready {\n what\n}', "unknown property 'what'"],
    ['ready\nready', 'this plugin can only be used once per Server Block'],
  ];
  for (const [text, message] of bad) {
    it(`rejects ${JSON.stringify(text)}`, () => {
      const e = errorOf(() => parseReady(dispenserFor(text, 'ready')));
      expect(e.message).toBe(message);
      expect(e.plugin).toBe('ready');
    });
  }
});

describe('prometheus setup', () => {
  const ok: [string, string, boolean, string][] = [
    ['prometheus', 'localhost:9153', false, ''],
    ['prometheus :9153', ':9153', false, ''],
    ['prometheus 0.0.0.0:9153', '0.0.0.0:9153', false, ''],
    ['prometheus {\n runtime_metrics\n}', 'localhost:9153', true, ''],
    ['prometheus :9253 {\n tls /etc/web.yml\n runtime_metrics\n}', ':9253', true, '/etc/web.yml'],
  ];
  for (const [text, address, runtimeMetrics, tlsConfigPath] of ok) {
    it(`accepts ${JSON.stringify(text)}`, () => {
      expect(parsePrometheus(dispenserFor(text, 'prometheus'))).toEqual({ address, runtimeMetrics, tlsConfigPath });
    });
  }
  const bad: [string, string][] = [
    ['prometheus 9153', 'address 9153: missing port in address'],
    ['prometheus localhost', 'address localhost: missing port in address'],
    ['prometheus :1 :2', "Wrong argument count or unexpected line ending after ':2'"],
    ['prometheus {\n bogus\n}', 'unknown option: bogus'],
    ['prometheus {\n tls a.yml\n tls b.yml\n}', 'tls block already specified'],
    ['prometheus {\n tls\n}', "Wrong argument count or unexpected line ending after 'tls'"], // CoreDNS: c.ArgErr()
    ['prometheus {\n tls a b\n}', "Wrong argument count or unexpected line ending after 'b'"],
    ['prometheus {\n runtime_metrics yes\n}', "Wrong argument count or unexpected line ending after 'yes'"],
    ['prometheus\nprometheus :9154', 'this plugin can only be used once per Server Block'],
  ];
  for (const [text, message] of bad) {
    it(`rejects ${JSON.stringify(text)}`, () => {
      const e = errorOf(() => parsePrometheus(dispenserFor(text, 'prometheus')));
      expect(e.message).toBe(message);
      expect(e.plugin).toBe('prometheus');
    });
  }
});

describe('reload setup', () => {
  const ok: [string, number, number][] = [
    ['reload', 30_000, 15_000],
    ['reload 10s', 10_000, 5_000], // jitter reduced to interval/2
    ['reload 2s', 2_000, 1_000],
    ['reload 1m 10s', 60_000, 10_000],
    ['reload 10s 0', 10_000, 0],
    ['reload 10s 0s', 10_000, 0],
    ['reload 5s 1s', 5_000, 1_000],
    ['reload 10s 30s', 10_000, 5_000],
    ['reload 1m\nreload 2s', 60_000, 15_000], // only the first occurrence is read
  ];
  for (const [text, intervalMs, jitterMs] of ok) {
    it(`accepts ${JSON.stringify(text)}`, () => {
      expect(parseReload(dispenserFor(text, 'reload'))).toEqual({ intervalMs, jitterMs });
    });
  }
  const bad: [string, string][] = [
    ['reload 1s', 'interval value must be greater or equal to 2s'],
    ['reload 1999ms', 'interval value must be greater or equal to 2s'],
    ['reload 0', 'interval value must be greater or equal to 2s'],
    ['reload 10s 500ms', 'jitter value must be 0 or greater or equal to 1s'],
    ['reload 10s -1s', 'jitter value must be 0 or greater or equal to 1s'],
    ['reload 10', 'time: missing unit in duration "10"'],
    ['reload ten', 'time: invalid duration "ten"'],
    ['reload 10s 5q', 'time: unknown unit "q" in duration "5q"'],
    ['reload 10s 5s 1s', "Wrong argument count or unexpected line ending after '1s'"],
  ];
  for (const [text, message] of bad) {
    it(`rejects ${JSON.stringify(text)}`, () => {
      const e = errorOf(() => parseReload(dispenserFor(text, 'reload')));
      expect(e.message).toBe(message);
      expect(e.plugin).toBe('reload');
    });
  }

  it('period is INTERVAL + U with U in [-JITTER/2, +JITTER/2)', () => {
    const cfg = { intervalMs: 30_000, jitterMs: 15_000 };
    expect(pickPeriod(cfg, () => 0)).toBe(22_500);
    expect(pickPeriod(cfg, () => 0.5)).toBe(30_000);
    expect(pickPeriod(cfg, () => 0.99999999)).toBe(37_499);
    expect(pickPeriod({ intervalMs: 10_000, jitterMs: 0 }, () => 0.7)).toBe(10_000);
  });
});
