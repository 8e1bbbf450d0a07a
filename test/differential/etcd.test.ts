/**
 * Differential: the etcd plugin against CoreDNS 1.15.0 — both servers read the same etcd (the
 * `.bin/etcd` the control-plane tests build) holding the keys external-dns's CoreDNS provider
 * writes (test/fixtures/etcd/externaldns.ts): A, AAAA, CNAME inside and outside the zone, TXT,
 * SRV and MX with their additional addresses, groups, wildcards (`*` and `any`), the zone apex and
 * its NS, PTR in a reverse zone, NXDOMAIN and NODATA, a value that does not decode (SERVFAIL),
 * fallthrough; then a key added, changed and deleted while both run (clusterdns sees it through
 * its watch, CoreDNS on its next read) and the answers compared again.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decode, rcodeOf } from '../../src/dns/message.js';
import { BROKEN_KEYS, EDGE_KEYS, EXTERNAL_DNS_KEYS } from '../fixtures/etcd/externaldns.js';
import { EtcdServer } from '../helpers/etcd.js';
import { rrLines } from '../helpers/records.js';
import { waitFor } from '../helpers/wait.js';
import {
  assertResult,
  encode,
  exchange,
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
  'skydns.test',
  'www.skydns.test',
  'v6.skydns.test',
  'alias.skydns.test',
  'ext.skydns.test',
  'txt.skydns.test',
  'svc._tcp._http.skydns.test',
  'mail.skydns.test',
  'grp.skydns.test',
  'sub.grp.skydns.test',
  '*.region2.skydns.test',
  'svc1.*.skydns.test',
  'svc1.any.skydns.test',
  'exact.skydns.test',
  'exact1.skydns.test',
  '6e4a3c8f.www.skydns.test',
  'ns1.ns.dns.skydns.test',
  'nosuch.skydns.test',
  'deeper.nosuch.skydns.test',
  '127.0.0.10.in-addr.arpa',
  '128.0.0.10.in-addr.arpa',
  'bad.broken.test',
  'broken.test',
  'nosuch.fall.test',
  'www.fall.test',
];
const TYPES = ['A', 'AAAA', 'TXT', 'SRV', 'MX', 'CNAME', 'PTR', 'NS', 'SOA', 'HINFO'];
const VARIANTS: readonly Variant[] = [
  { proto: 'udp' },
  { proto: 'tcp', edns: 4096, mixed: true },
  { proto: 'udp', mixed: true },
];
const PLUGINS = ['etcd', 'hosts', 'whoami'];

const EDGE_NAMES = [
  'noapex.test',
  'a.noapex.test',
  'b.noapex.test',
  'longtxt.noapex.test',
  'mapped.noapex.test',
  'dotted.noapex.test',
  'loop1.noapex.test',
  'self.noapex.test',
  'ns._udp._dns.noapex.test',
  'both.noapex.test',
  'named.noapex.test',
  'strict.test',
  'a.strict.test',
];

const FALL_KEYS: Readonly<Record<string, object>> = {
  '/skydns/test/fall/www/1': { host: '10.7.0.1' },
};

describe('differential: etcd', () => {
  const missing = missingBinaries();
  let etcd: EtcdServer;
  let pair: Pair;

  it('has CoreDNS 1.15.0 and a build to compare', () => {
    expect(missing).toBeNull();
  });

  beforeAll(async () => {
    if (missing) return;
    etcd = await EtcdServer.start();
    for (const [k, v] of Object.entries({ ...EXTERNAL_DNS_KEYS, ...FALL_KEYS, ...EDGE_KEYS }))
      await etcd.put(k, JSON.stringify(v));
    for (const [k, v] of Object.entries(BROKEN_KEYS)) await etcd.put(k, v);
    const endpoint = etcd.endpoint;
    pair = await startPair(
      {
        corefile: `skydns.test:{{DNS}} 10.in-addr.arpa:{{DNS}} {
  etcd {
    path /skydns
    endpoint ${endpoint}
  }
}
broken.test:{{DNS}} {
  etcd {
    endpoint ${endpoint}
  }
}
fall.test:{{DNS}} {
  etcd {
    endpoint ${endpoint}
    fallthrough
  }
  whoami
}
noapex.test:{{DNS}} {
  etcd {
    endpoint ${endpoint}
  }
}
strict.test:{{DNS}} {
  etcd {
    endpoint ${endpoint}
    no_apex_fallback
  }
}
other.test:{{DNS}} {
  hosts {
    10.9.9.9 target.other.test
  }
}
`,
      },
      { name: 'www.skydns.test', type: 'A' },
    );
    // clusterdns answers from its index once the first list is in.
    await waitFor('clusterdns to list etcd', async () => {
      const r = await exchange(pair.cand.dns, encode({ name: 'www.skydns.test', type: 'A', id: 1 }), 'udp');
      return r !== null && rcodeOf(decode(r)) === 0;
    });
  }, 120_000);

  afterAll(async () => {
    await pair?.stop();
    await etcd?.close();
    const t = totalCompared();
    process.stdout.write(`differential etcd: ${t.compared} replies compared over ${t.cases} cases\n`);
  });

  it('answers every record kind, wildcard, group, apex, NXDOMAIN and NODATA as CoreDNS', async () => {
    // Both read the fixture: the reference's answer is the fixture's, not an error both share.
    const ref = await exchange(pair.ref.dns, encode({ name: 'svc._tcp._http.skydns.test', type: 'SRV', id: 3 }), 'udp');
    expect(rrLines(decode(ref!).answers)).toEqual([
      'svc._tcp._http.skydns.test. 300 IN SRV 10 30 8080 a.svc._tcp._http.skydns.test.',
      'svc._tcp._http.skydns.test. 300 IN SRV 10 70 8080 b.svc._tcp._http.skydns.test.',
      'svc._tcp._http.skydns.test. 300 IN SRV 20 100 9090 www.skydns.test.',
    ]);
    const result = newResult('etcd-static');
    const queries = generate(NAMES, TYPES, VARIANTS, 27);
    await runQueries(pair, result, queries, PLUGINS, { concurrency: 8 });
    assertResult(result, queries.length);
  }, 180_000);

  it('answers the corner cases as CoreDNS: apex fallback, loops, long TXT, targetstrip', async () => {
    const result = newResult('etcd-edges');
    const queries = generate(EDGE_NAMES, TYPES, VARIANTS, 41);
    await runQueries(pair, result, queries, PLUGINS, { concurrency: 8 });
    assertResult(result, queries.length);
  }, 180_000);

  it('follows changes in etcd as CoreDNS reads them', async () => {
    const key = '/skydns/test/skydns/new/1';
    const ask = async (name: string): Promise<string[]> => {
      const r = await exchange(pair.cand.dns, encode({ name, type: 'A', id: 2 }), 'udp');
      return r ? rrLines(decode(r).answers) : [];
    };
    await etcd.put(key, JSON.stringify({ host: '10.6.0.1', ttl: 42 }));
    await etcd.put('/skydns/test/skydns/www/6e4a3c8f', JSON.stringify({ host: '10.0.0.9', ttl: 60, targetstrip: 1 }));
    await etcd.del('/skydns/test/skydns/v6/a1b2c3d4');
    await waitFor('clusterdns to see the new key', async () => (await ask('new.skydns.test')).length === 1);
    await waitFor('clusterdns to see the changed key', async () =>
      (await ask('www.skydns.test')).includes('www.skydns.test. 60 IN A 10.0.0.9'),
    );
    const result = newResult('etcd-changed');
    const queries = generate(
      ['new.skydns.test', 'www.skydns.test', 'v6.skydns.test', 'skydns.test'],
      TYPES,
      VARIANTS,
      5,
    );
    await runQueries(pair, result, queries, PLUGINS, { concurrency: 8 });
    assertResult(result, queries.length);
    expect(await ask('new.skydns.test')).toEqual(['new.skydns.test. 42 IN A 10.6.0.1']);
  }, 120_000);
});

describe('differential: etcd over TLS with a client certificate', () => {
  const missing = missingBinaries();
  let etcd: EtcdServer;
  let pair: Pair;

  beforeAll(async () => {
    if (missing) return;
    etcd = await EtcdServer.start({ tls: true });
    for (const [k, v] of Object.entries(EXTERNAL_DNS_KEYS)) await etcd.put(k, JSON.stringify(v));
    const t = etcd.clientTls!;
    pair = await startPair(
      {
        corefile: `skydns.test:{{DNS}} {
  etcd {
    endpoint ${etcd.endpoint}
    tls ${t.cert} ${t.key} ${t.ca}
  }
}
`,
      },
      { name: 'www.skydns.test', type: 'A' },
    );
    await waitFor('clusterdns to list etcd over TLS', async () => {
      const r = await exchange(pair.cand.dns, encode({ name: 'www.skydns.test', type: 'A', id: 1 }), 'udp');
      return r !== null && rcodeOf(decode(r)) === 0;
    });
  }, 120_000);

  afterAll(async () => {
    await pair?.stop();
    await etcd?.close();
  });

  it('answers as CoreDNS reading the same etcd over TLS', async () => {
    expect(missing).toBeNull();
    const result = newResult('etcd-tls');
    const queries = generate(
      ['www.skydns.test', 'alias.skydns.test', 'svc._tcp._http.skydns.test', 'skydns.test', 'nosuch.skydns.test'],
      ['A', 'SRV', 'NS', 'TXT'],
      VARIANTS,
      13,
    );
    await runQueries(pair, result, queries, PLUGINS, { concurrency: 8 });
    assertResult(result, queries.length);
  }, 120_000);
});
