/**
 * The metric catalogue (docs/plugins.md) as one scrape of the prometheus plugin's /metrics shows
 * it: the DNS metrics prometheus records plus those health and reload fill, so this test
 * exercises three plugins together and lives in test/, not in a plugin folder.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { HealthServer } from '../../plugins/health/server.js';
import { prometheus } from '../../plugins/prometheus/index.js';
import { setVersionInfo } from '../../plugins/reload/metrics.js';
import { Rcode } from '../../src/dns/constants.js';
import { logger } from '../../src/log.js';
import type { BlockInfo, Handler } from '../../src/plugin.js';
import type { Query } from '../../src/query.js';
import { SharedResources } from '../../src/server/shared.js';
import { makeQuery } from '../helpers/dns.js';
import { httpRequest } from '../helpers/http.js';
import { freePort } from '../helpers/net.js';
import { dispenserFor, TestInstance } from '../helpers/setup.js';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

/** A next handler answering with `rcode` as wire bytes, written by `plugin`. */
function wireAnswer(rcode: number, plugin = 'whoami'): (q: Query) => number {
  return (q) => {
    const buf = Buffer.from(q.raw);
    buf.writeUInt16BE(((buf.readUInt16BE(2) | 0x8000 | rcode) & 0xfff0) | rcode, 2);
    q.writeWire(buf, plugin);
    return rcode;
  };
}

function handler(name: string, serve: Handler['serve']): Handler {
  return { name, serve };
}

async function setupPrometheus(
  text: string,
  block: Partial<BlockInfo>,
  shared = new SharedResources(),
): Promise<{ factory: (next: Handler | null) => Handler; inst: TestInstance; shared: SharedResources }> {
  const inst = new TestInstance({ shared });
  const ctx = inst.context('prometheus', block);
  const factory = await prometheus.setup(dispenserFor(text, 'prometheus'), ctx);
  if (!factory) throw new Error('prometheus must return a handler factory');
  return { factory: (next) => factory(next, ctx.block), inst, shared };
}

/** The metrics this work package owns or fills (docs/plugins.md metric catalogue), exactly. */
const DURATION_BUCKETS = Array.from({ length: 16 }, (_, k) => 0.00025 * 2 ** k);
const SIZE_BUCKETS = [0, 100, 200, 300, 400, 511, 1023, 2047, 4095, 8291, 16000, 32000, 48000, 64000];
const CATALOGUE: { name: string; type: string; labels: string[]; buckets?: number[] }[] = [
  { name: 'coredns_build_info', type: 'gauge', labels: ['version', 'revision', 'goversion'] },
  { name: 'coredns_panics_total', type: 'counter', labels: [] },
  { name: 'coredns_plugin_enabled', type: 'gauge', labels: ['server', 'zone', 'view', 'name'] },
  {
    name: 'coredns_dns_requests_total',
    type: 'counter',
    labels: ['server', 'zone', 'view', 'proto', 'family', 'type'],
  },
  {
    name: 'coredns_dns_request_duration_seconds',
    type: 'histogram',
    labels: ['server', 'zone', 'view'],
    buckets: DURATION_BUCKETS,
  },
  {
    name: 'coredns_dns_request_size_bytes',
    type: 'histogram',
    labels: ['server', 'zone', 'view', 'proto'],
    buckets: SIZE_BUCKETS,
  },
  {
    name: 'coredns_dns_response_size_bytes',
    type: 'histogram',
    labels: ['server', 'zone', 'view', 'proto'],
    buckets: SIZE_BUCKETS,
  },
  { name: 'coredns_dns_responses_total', type: 'counter', labels: ['server', 'zone', 'view', 'rcode', 'plugin'] },
  { name: 'coredns_dns_do_requests_total', type: 'counter', labels: ['server', 'zone', 'view'] },
  {
    name: 'coredns_health_request_duration_seconds',
    type: 'histogram',
    labels: [],
    buckets: [0.00025, 0.0025, 0.025, 0.25, 2.5],
  },
  { name: 'coredns_health_request_failures_total', type: 'counter', labels: [] },
  { name: 'coredns_reload_failed_total', type: 'counter', labels: [] },
  { name: 'coredns_reload_version_info', type: 'gauge', labels: ['hash', 'value'] },
];
const FORBIDDEN = [
  'coredns_dns_request_count_total',
  'coredns_dns_response_rcode_count_total',
  'coredns_dns_request_type_count_total',
  'coredns_dns_request_do_count_total',
  'coredns_panic_count_total',
];

/** Label names (in order) of a sample line `name{a="x",b="y"} v`. */
function labelNames(line: string): string[] {
  const m = /^[^{ ]+\{(.*)\} /.exec(line);
  if (!m) return [];
  return [...m[1]!.matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="(?:[^"\\]|\\.)*"/g)].map((x) => x[1]!);
}

describe('/metrics endpoint', () => {
  it('serves the registry in Prometheus text format with the catalogue names, labels and buckets', async () => {
    const port = await freePort();
    const { factory, inst } = await setupPrometheus(`prometheus 127.0.0.1:${port}`, {
      servers: ['dns://:53'],
      zones: ['.'],
      handlerPlugins: ['prometheus', 'whoami'],
    });
    cleanups.push(() => inst.release());
    await inst.run('startup');
    await inst.run('serving');
    // Produce a sample of every metric.
    const chain = factory(handler('whoami', wireAnswer(Rcode.NOERROR)));
    const q = makeQuery('example.org', 'A', { do: true });
    q.zone = '.';
    expect(chain.serve(q)).toBe(Rcode.NOERROR);
    setVersionInfo('ab'.repeat(64));
    const hs = new HealthServer(`127.0.0.1:${port}`, logger('health'));
    await hs.probeOnce(); // the metrics port answers 404 to /health: still a completed local request

    const r = await httpRequest(port, '/metrics');
    expect(r.status).toBe(200);
    expect(r.headers['content-type']).toBe('text/plain; version=0.0.4; charset=utf-8');
    const lines = r.body.split('\n');
    for (const m of CATALOGUE) {
      expect(lines, m.name).toContain(`# TYPE ${m.name} ${m.type}`);
      const sampleName = m.type === 'histogram' ? `${m.name}_bucket` : m.name;
      const samples = lines.filter((l) => l.startsWith(`${sampleName}{`) || l.startsWith(`${sampleName} `));
      expect(samples.length, m.name).toBeGreaterThan(0);
      for (const s of samples) {
        const names = labelNames(s);
        expect(
          names.filter((n) => n !== 'le'),
          s,
        ).toEqual(m.labels);
      }
      if (m.buckets) {
        // The `le` values of one series (the first label set seen), in exposition order.
        const series = (s: string): string => s.replace(/,?le="[^"]*"/, '').replace(/ \S+$/, '');
        const les = samples.filter((s) => series(s) === series(samples[0]!)).map((s) => /le="([^"]*)"/.exec(s)![1]!);
        expect(les, m.name).toEqual([...m.buckets.map((b) => String(Number(b.toPrecision(12)))), '+Inf']);
      }
    }
    expect(r.body).toContain(`coredns_build_info{version="`);
    expect(r.body).toContain(`goversion="${process.version}"} 1`);
    expect(r.body).toContain(`coredns_reload_version_info{hash="sha512",value="${'ab'.repeat(64)}"} 1`);
    expect(r.body).toContain('coredns_plugin_enabled{server="dns://:53",zone=".",view="",name="whoami"} 1');
    // prom-client's process and Node.js collectors.
    for (const name of ['process_cpu_seconds_total', 'process_resident_memory_bytes', 'nodejs_heap_size_used_bytes']) {
      expect(lines, name).toContain(`# TYPE ${name} ${name.endsWith('_total') ? 'counter' : 'gauge'}`);
    }
    for (const old of FORBIDDEN) expect(r.body).not.toContain(old);
  });
});
