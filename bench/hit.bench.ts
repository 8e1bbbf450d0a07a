/**
 * Hot-path benchmarks (`npx vitest bench bench/hit.bench.ts`): a cache hit on its own and behind
 * loadbalance (wire shuffle). A hit copies the stored bytes and patches id, flags, question
 * case and TTLs; nothing is decoded.
 */
import { bench, describe } from 'vitest';
import { replyTo } from '../src/dns/message.js';
import type { Handler } from '../src/plugin.js';
import { makeQuery } from '../test/helpers/dns.js';
import { dispenserFor, setupContext } from '../test/helpers/setup.js';
import { a, FakeNext } from '../test/helpers/upstream.js';
import { loadbalance } from '../plugins/loadbalance/index.js';
import { cache } from '../plugins/cache/index.js';

const next = new FakeNext((q) => {
  const m = replyTo(q.request);
  m.answers = [a(q.name, '192.0.2.1'), a(q.name, '192.0.2.2'), a(q.name, '192.0.2.3')];
  q.write(m, 'upstream');
  return 0;
});
const cacheCtx = setupContext();
const cached = (await cache.setup(dispenserFor('cache', 'cache'), cacheCtx))!(next, cacheCtx.block);
const lbCtx = setupContext();
const balanced: Handler = (await loadbalance.setup(dispenserFor('loadbalance', 'loadbalance'), lbCtx))!(
  cached,
  lbCtx.block,
);
const queries = Array.from({ length: 256 }, () => makeQuery('www.example.org', 'A'));
await cached.serve(queries[0]!);
let i = 0;

describe('cache hit', () => {
  bench('cache', () => {
    const q = queries[i++ & 255]!;
    q.reply = null;
    void cached.serve(q);
  });
  bench('loadbalance → cache', () => {
    const q = queries[i++ & 255]!;
    q.reply = null;
    void balanced.serve(q);
  });
});
