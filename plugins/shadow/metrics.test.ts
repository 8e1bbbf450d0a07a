/** Without a `shadow` directive the plugin registers no metric family; with one, all of them. */
import { describe, expect, it } from 'vitest';
import { registry } from '../../src/metrics/registry.js';
import { startServer } from '../../test/helpers/server.js';

const families = (): string[] =>
  registry
    .getMetricsAsArray()
    .map((m) => m.name)
    .filter((n) => n.startsWith('clusterdns_shadow_'));

describe('shadow metrics', () => {
  it('are registered only once a block uses shadow', async () => {
    const plain = await startServer('. {\n  whoami\n}\n');
    await plain.stop();
    expect(families()).toEqual([]);
    const s = await startServer('. {\n  shadow 127.0.0.1:9 {\n    log_rate 0\n  }\n  whoami\n}\n');
    await s.stop();
    expect(families().sort()).toEqual([
      'clusterdns_shadow_compared_total',
      'clusterdns_shadow_differing_replies_total',
      'clusterdns_shadow_dropped_total',
      'clusterdns_shadow_mismatches_total',
      'clusterdns_shadow_outstanding',
      'clusterdns_shadow_queries_total',
      'clusterdns_shadow_reference_errors_total',
      'clusterdns_shadow_tolerated_total',
      'clusterdns_shadow_unexpected_replies_total',
    ]);
  });
});
