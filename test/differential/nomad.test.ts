/**
 * Differential: the nomad plugin against CoreDNS 1.15.0 — both servers ask one stand-in Nomad agent
 * (test/helpers/nomad.ts: the two endpoints the plugin reads, with the JSON shapes of Nomad's API
 * documentation; a real agent could not be built here, plugins/nomad/README.md) through the
 * plugin's `address`. A, AAAA and SRV over IPv4, IPv6 and mixed registrations, namespaces, a type
 * it does not serve, an address it cannot read, no registration, an agent error, names without
 * SERVICE.NAMESPACE, a zone given without its dot, and the requests both sent.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeNomad } from '../helpers/nomad.js';
import {
  assertResult,
  generate,
  missingBinaries,
  newResult,
  runQueries,
  startPair,
  totalCompared,
  type Pair,
  type Variant,
} from './harness.js';

const NAMES = [
  'redis.default.service.nomad',
  'web.default.service.nomad',
  'v6.default.service.nomad',
  'redis.prod.service.nomad',
  'bad.default.service.nomad',
  'nosuch.default.service.nomad',
  'boom.default.service.nomad',
  'service.nomad',
  'default.service.nomad',
  'deep.redis.default.service.nomad',
  'redis.default.other.nomad',
];
const TYPES = ['A', 'AAAA', 'SRV', 'TXT', 'MX', 'SOA', 'ANY'];
const VARIANTS: readonly Variant[] = [
  { proto: 'udp' },
  { proto: 'udp', edns: 1232, do: true },
  { proto: 'tcp', edns: 4096, mixed: true },
];
const PLUGINS = ['nomad'];

describe('differential: nomad', () => {
  const missing = missingBinaries();
  let nomadAgent: FakeNomad;
  let pair: Pair;

  it('has CoreDNS 1.15.0 and a build to compare', () => {
    expect(missing).toBeNull();
  });

  beforeAll(async () => {
    if (missing) return;
    nomadAgent = await FakeNomad.start();
    nomadAgent.services.set('redis', [
      { ServiceName: 'redis', Namespace: 'default', Address: '192.0.2.10', Port: 25395 },
      { ServiceName: 'redis', Namespace: 'default', Address: '192.0.2.11', Port: 20888 },
      { ServiceName: 'redis', Namespace: 'default', Address: '2001:db8::10', Port: 26292 },
      { ServiceName: 'redis', Namespace: 'prod', Address: '198.51.100.7', Port: 6379 },
    ]);
    nomadAgent.services.set('web', [
      { ServiceName: 'web', Namespace: 'default', Address: '::ffff:192.0.2.80', Port: 80 },
    ]);
    nomadAgent.services.set('v6', [{ ServiceName: 'v6', Namespace: 'default', Address: '2001:db8::6', Port: 8443 }]);
    nomadAgent.services.set('bad', [
      { ServiceName: 'bad', Namespace: 'default', Address: '192.0.2.1', Port: 1 },
      { ServiceName: 'bad', Namespace: 'default', Address: 'redis.internal', Port: 2 },
    ]);
    nomadAgent.failing.add('boom');
    pair = await startPair(
      {
        corefile: `service.nomad:{{DNS}} {
  nomad {
    address ${nomadAgent.url}
    token s3cret
    ttl 10
  }
}
other.nomad:{{DNS}} {
  nomad other.nomad
}
`,
      },
      { name: 'redis.default.service.nomad', type: 'A' },
    );
  }, 120_000);

  afterAll(async () => {
    await pair?.stop();
    await nomadAgent?.close();
    const t = totalCompared();
    process.stdout.write(`differential nomad: ${t.compared} replies compared over ${t.cases} cases\n`);
  });

  it('answers every name and type as CoreDNS, asking the agent the same way', async () => {
    const result = newResult('nomad');
    const queries = generate(NAMES, TYPES, VARIANTS, 46);
    await runQueries(pair, result, queries, PLUGINS, { concurrency: 4 });
    assertResult(result, queries.length);
    // Both logged the agent's error in the Go client's words.
    const warn = '[WARNING] plugin/nomad: Unexpected response code: 500 (rpc error: No cluster leader)';
    expect(pair.ref.output).toContain(warn);
    expect(pair.cand.output).toContain(warn);
    // Each sent the same requests: the token, the namespace of the name.
    const sent = new Set(nomadAgent.requests.map((r) => `${r.path}${r.query} ${r.token}`));
    expect(sent).toContain('/v1/service/redis?namespace=prod s3cret');
    expect(sent).toContain('/v1/agent/self s3cret');
  }, 180_000);
});
