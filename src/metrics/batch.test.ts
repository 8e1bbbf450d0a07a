import { describe, expect, it } from 'vitest';
import { client, type Prom } from './registry.js';
import { batchedHistograms, CounterCell, flushOnCollect, HistCell } from './batch.js';

const BUCKETS = [0, 100, 200, 511, 64000];

function pair(name: string): [Prom.Histogram<string>, Prom.Histogram<string>] {
  const mk = (n: string) =>
    new client.Histogram({ name: n, help: 'h', labelNames: ['server', 'zone'], buckets: BUCKETS, registers: [] });
  const batched = mk(name);
  flushOnCollect(batched);
  return [batched, mk(`${name}_ref`)];
}

async function values(h: Prom.Histogram<string>): Promise<string[]> {
  const d = await h.get();
  return d.values.map(
    (v) =>
      `${(v as { metricName?: string }).metricName?.replace(/^.*?_(bucket|sum|count)$/, '$1')} ${JSON.stringify(v.labels)} ${v.value}`,
  );
}

describe('batched cells', () => {
  it('uses the batched histogram path with the installed prom-client', () => {
    expect(batchedHistograms).toBe(true);
  });

  it('a histogram cell exposes exactly what direct observe() calls would', async () => {
    const [batched, ref] = pair('batch_test_hist');
    const labels = { server: 'dns://:53', zone: '.' };
    const cell = new HistCell(batched, labels);
    const observations = [0, 0, 50, 100, 100.5, 511, 512, 70000, 3];
    for (const v of observations) {
      cell.observe(v);
      ref.observe(labels, v);
    }
    expect(await values(batched)).toEqual(await values(ref));
    // Reading again flushes nothing twice.
    expect(await values(batched)).toEqual(await values(ref));
    // More observations after a read, and a second series.
    const other = new HistCell(batched, { server: 'dns://:53', zone: 'example.org.' });
    for (const v of [200, 201]) {
      cell.observe(v);
      ref.observe(labels, v);
      other.observe(v);
      ref.observe({ server: 'dns://:53', zone: 'example.org.' }, v);
    }
    expect(await values(batched)).toEqual(await values(ref));
  });

  it('survives a reset of the metric', async () => {
    const [batched, ref] = pair('batch_test_reset');
    const labels = { server: 'dns://:53', zone: '.' };
    const cell = new HistCell(batched, labels);
    cell.observe(5);
    await batched.get();
    batched.reset();
    cell.observe(150);
    ref.observe(labels, 150);
    expect(await values(batched)).toEqual(await values(ref));
  });

  it('a counter cell adds its pending increments on read', async () => {
    const c = new client.Counter({ name: 'batch_test_counter', help: 'c', labelNames: ['rcode'], registers: [] });
    flushOnCollect(c);
    const cell = new CounterCell(c, { rcode: 'NOERROR' });
    for (let i = 0; i < 5; i++) cell.inc();
    expect((await c.get()).values).toEqual([{ value: 5, labels: { rcode: 'NOERROR' } }]);
    cell.inc();
    c.reset();
    cell.inc();
    expect((await c.get()).values).toEqual([{ value: 2, labels: { rcode: 'NOERROR' } }]);
  });
});
