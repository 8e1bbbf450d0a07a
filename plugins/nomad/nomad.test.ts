/**
 * The nomad plugin on its own: setup errors worded as CoreDNS 1.15.0's, and a whole Corefile against
 * a stand-in Nomad agent (test/helpers/nomad.ts, the API's documented JSON shapes): A, AAAA, SRV
 * with additional addresses, NXDOMAIN with the made-up SOA, a type it does not serve, an agent
 * error, the request it sends (namespace, filter, token), several agents, the metrics.
 * The differential test against CoreDNS on the same agent is test/differential/nomad.test.ts.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { captureLogs } from '../../test/helpers/logs.js';
import { runCorefile } from '../../test/helpers/corefile.js';
import { FakeNomad } from '../../test/helpers/nomad.js';
import { rrLines } from '../../test/helpers/records.js';
import { configError, dispenserFor, setupContext } from '../../test/helpers/setup.js';
import { nomad } from './index.js';
import * as metrics from './metrics.js';

const cleanups: (() => void | Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

function setupError(text: string): string {
  return configError(() => nomad.setup(dispenserFor(text, 'nomad'), setupContext()), text).describe();
}

describe('nomad setup', () => {
  const E = 'plugin/nomad: Corefile:2 - Error during parsing: ';
  it.each([
    ['nomad {\n address\n}', `${E}at least one address is required`],
    ['nomad {\n filter\n}', `${E}exactly one filter is required`],
    ['nomad {\n filter a b\n}', `${E}exactly one filter is required`],
    ['nomad {\n token\n}', `${E}exactly one token is required`],
    ['nomad {\n ttl\n}', `${E}exactly one ttl value is required`],
    ['nomad {\n ttl 1m\n}', `${E}error parsing ttl: strconv.Atoi: parsing "1m": invalid syntax`],
    ['nomad {\n ttl 3601\n}', `${E}ttl must be in range [0, 3600]: 3601`],
    ['nomad {\n ttl -1\n}', `${E}ttl must be in range [0, 3600]: -1`],
    ['nomad {\n Bogus x\n}', `${E}unknown property 'bogus'`],
  ])('%s', (text, want) => {
    expect(setupError(text)).toBe(want);
  });

  it('accepts every documented option, in any letter case', () => {
    const r = nomad.setup(
      dispenserFor(
        'nomad service.nomad {\n ADDRESS http://127.0.0.1:1 http://127.0.0.1:2\n filter "Tags contains \\"db\\""\n token t\n TTL 0\n}',
        'nomad',
      ),
      setupContext(),
    );
    expect(typeof r).toBe('function');
  });
});

async function agent(): Promise<FakeNomad> {
  const a = await FakeNomad.start();
  cleanups.push(() => a.close());
  a.services.set('redis', [
    { ServiceName: 'redis', Namespace: 'default', Address: '192.0.2.10', Port: 25395 },
    { ServiceName: 'redis', Namespace: 'default', Address: '2001:db8::10', Port: 20888 },
    { ServiceName: 'redis', Namespace: 'prod', Address: '192.0.2.99', Port: 6379 },
  ]);
  a.services.set('bad', [{ ServiceName: 'bad', Namespace: 'default', Address: 'not-an-ip', Port: 1 }]);
  return a;
}

describe('nomad serving', () => {
  it('answers A, AAAA and SRV from the registrations, NXDOMAIN with its SOA otherwise', async () => {
    const a = await agent();
    const run = await runCorefile(
      `service.nomad {\n  nomad {\n    address ${a.url}\n    token s3cret\n    ttl 10\n  }\n}`,
    );
    cleanups.push(() => run.stop());
    expect(rrLines((await run.ask('Redis.default.service.nomad', 'A')).answers)).toEqual([
      'Redis.default.service.nomad. 10 IN A 192.0.2.10',
    ]);
    expect(rrLines((await run.ask('redis.default.service.nomad', 'AAAA')).answers)).toEqual([
      'redis.default.service.nomad. 10 IN AAAA 2001:db8::10',
    ]);
    const srv = await run.ask('redis.default.service.nomad', 'SRV');
    expect(rrLines(srv.answers)).toEqual([
      'redis.default.service.nomad. 10 IN SRV 10 10 25395 redis.default.service.nomad.',
      'redis.default.service.nomad. 10 IN SRV 10 10 20888 redis.default.service.nomad.',
    ]);
    expect(rrLines(srv.additionals).filter((l) => !l.includes('OPT'))).toEqual([
      'redis.default.service.nomad. 10 IN A 192.0.2.10',
      'redis.default.service.nomad. 10 IN AAAA 2001:db8::10',
    ]);
    expect(rrLines((await run.ask('redis.prod.service.nomad', 'A')).answers)).toEqual([
      'redis.prod.service.nomad. 10 IN A 192.0.2.99',
    ]);
    for (const [name, type] of [
      ['nosuch.default.service.nomad', 'A'],
      ['redis.default.service.nomad', 'TXT'],
      ['bad.default.service.nomad', 'A'],
    ] as const) {
      const r = await run.ask(name, type);
      expect(r.flags! & 0xf, `${name} ${type}`).toBe(3);
      expect(rrLines(r.answers)).toEqual([
        `${name}. 10 IN SOA ns1.${name}. hostmaster.service.nomad. 0 3600 600 86400 30`,
      ]);
    }
    expect(a.requests).toContainEqual({ path: '/v1/service/redis', query: '?namespace=default', token: 's3cret' });
  });

  it('passes on names without SERVICE.NAMESPACE, and answers an empty NOERROR when Nomad fails', async () => {
    const a = await agent();
    a.failing.add('boom');
    const logs = captureLogs(cleanups);
    const run = await runCorefile(
      `service.nomad {\n  nomad {\n    address ${a.url}\n    filter "Tags is empty"\n  }\n}`,
    );
    cleanups.push(() => run.stop());
    expect((await run.ask('x.service.nomad', 'A')).flags! & 0xf).toBe(2);
    const r = await run.ask('boom.default.service.nomad', 'A');
    expect(r.flags! & 0xf).toBe(0);
    expect(r.answers).toEqual([]);
    expect(logs.lines).toContain(
      '[WARNING] plugin/nomad: Unexpected response code: 500 (rpc error: No cluster leader)',
    );
    expect(a.requests.at(-1)).toEqual({
      path: '/v1/service/boom',
      query: `?filter=${encodeURIComponent('Tags is empty').replace(/%20/g, '+')}&namespace=default`,
      token: '',
    });
  });

  it('with several agents asks the first that answers /v1/agent/self, and counts the requests', async () => {
    const down = await agent();
    down.selfDown = true;
    const up = await agent();
    const run = await runCorefile(`service.nomad:53 {\n  nomad {\n    address ${down.url} ${up.url}\n  }\n}`);
    cleanups.push(() => run.stop());
    const count = async (m: typeof metrics.successRequests): Promise<number> =>
      (await m.get()).values.find((v) => v.labels.server === 'dns://:53' && v.labels.namespace === 'default')?.value ??
      0;
    const ok0 = await count(metrics.successRequests);
    const failed0 = await count(metrics.failedRequests);
    expect(rrLines((await run.ask('redis.default.service.nomad', 'A')).answers)).toHaveLength(1);
    await run.ask('nosuch.default.service.nomad', 'A');
    expect(up.requests.map((r) => r.path)).toContain('/v1/service/redis');
    expect(down.requests.map((r) => r.path)).not.toContain('/v1/service/redis');
    expect((await count(metrics.successRequests)) - ok0).toBe(1);
    expect((await count(metrics.failedRequests)) - failed0).toBe(1);
  });
});
