import { describe, expect, it } from 'vitest';
import { Flag, Rcode, rcodeName } from '../../src/dns/constants.js';
import { replyTo } from '../../src/dns/message.js';
import type { Handler } from '../../src/plugin.js';
import type { Query } from '../../src/query.js';
import { makeQuery } from '../../test/helpers/dns.js';
import { addressAt } from './addresses.js';
import { endpointColumns } from './convert.js';
import { KubernetesHandler } from './handler.js';
import { Store } from './store.js';
import { baseConfig, fixtureStore, replyOf, soaSerial } from './testutil.js';
import { rrLines } from '../../test/helpers/records.js';
import { VECTORS, type Vector } from './vectors.js';

/** A next plugin that answers every query with one PTR record (for the fallthrough row). */
const answeringNext: Handler = {
  name: 'next',
  serve(q: Query) {
    const m = replyTo(q.request, 0, false);
    m.answers.push({ name: q.name.replace(/\.$/, ''), type: 'PTR', class: 'IN', ttl: 60, data: 'from-next.example' });
    q.write(m, 'next');
    return 0;
  },
};

function handlerFor(v: Vector, store: Store): KubernetesHandler {
  return new KubernetesHandler(baseConfig(v.cfg), store, () => !v.unsynced, v.next ? answeringNext : null, null);
}

function storeFor(v: Vector): Store {
  const store = fixtureStore();
  if (v.noEndpoints) for (const k of [...store.slices.keys()]) store.remove('endpointslices', k);
  return store;
}

async function check(v: Vector, h: KubernetesHandler, name = v.q): Promise<void> {
  const q = makeQuery(name, v.t, { id: 4242, rd: true });
  const rc = await h.serve(q);
  expect(rcodeName(rc), `row ${v.n} returned rcode`).toBe(v.rcode);
  const m = replyOf(q);
  if (v.noWrite) {
    expect(m, `row ${v.n} must not write`).toBeNull();
    return;
  }
  expect(m, `row ${v.n} wrote a reply`).not.toBeNull();
  const reply = m!;
  expect(reply.id).toBe(4242);
  expect(rcodeName((reply.flags ?? 0) & 0xf)).toBe(v.rcode);
  expect(((reply.flags ?? 0) & Flag.AA) !== 0, `row ${v.n} AA`).toBe(v.aa ?? true);
  expect((reply.flags ?? 0) & Flag.RA).toBe(0);
  expect((reply.flags ?? 0) & Flag.RD).toBe(Flag.RD);
  expect(reply.questions[0]!.name + '.').toBe(name);
  const ans = rrLines(reply.answers, { maskSerial: true });
  if (v.ordered) expect(ans).toEqual(v.ans ?? []);
  else expect([...ans].sort()).toEqual([...(v.ans ?? [])].sort());
  expect(rrLines(reply.additionals, { maskSerial: true }).sort()).toEqual([...(v.extra ?? [])].sort());
  const wantNs = v.ns === undefined ? [] : (v.ns ?? []);
  expect(rrLines(reply.authorities, { maskSerial: true })).toEqual(wantNs);
}

describe('docs/records.md §11 vectors through the handler', () => {
  for (const v of VECTORS) {
    it(`#${v.n} ${v.q} ${v.t} → ${v.rcode}${v.corefile ? ` [${v.corefile}]` : ''}`, async () => {
      const h = handlerFor(v, storeFor(v));
      await check(v, h); // computed
      await check(v, h); // served from the answer cache
    });
  }

  it('covers at least 60 vectors', () => {
    expect(VECTORS.length).toBeGreaterThanOrEqual(72);
  });
});

describe('letter case, serial and cache behaviour', () => {
  it('echoes the question case in owners and the SOA zone, also from a cached entry', async () => {
    const h = new KubernetesHandler(baseConfig(), fixtureStore(), () => true, null, null);
    for (const name of ['missing.testns.svc.cluster.local.', 'Missing.TestNS.svc.CLUSTER.local.']) {
      const q = makeQuery(name, 'A');
      expect(await h.serve(q)).toBe(Rcode.NXDOMAIN);
      const m = replyOf(q)!;
      expect(m.questions[0]!.name + '.').toBe(name);
      const zone = name.slice(name.length - 'cluster.local.'.length);
      expect(rrLines(m.authorities, { maskSerial: true })).toEqual([
        `${zone} 5 IN SOA ns.dns.${zone} hostmaster.${zone} <serial> 7200 1800 86400 5`,
      ]);
    }
  });

  it('SRV targets carry the zone as spelled in the query', async () => {
    const h = new KubernetesHandler(baseConfig(), fixtureStore(), () => true, null, null);
    const q = makeQuery('_HtTp._TcP.sVc1.TeStNs.SvC.cLuStEr.LoCaL.', 'SRV');
    expect(await h.serve(q)).toBe(Rcode.NOERROR);
    const m = replyOf(q)!;
    expect(rrLines(m.answers)).toEqual([
      '_HtTp._TcP.sVc1.TeStNs.SvC.cLuStEr.LoCaL. 5 IN SRV 0 100 80 svc1.testns.svc.cLuStEr.LoCaL.',
    ]);
  });

  it('NS targets and glue carry the zone as spelled in the query', async () => {
    const h = new KubernetesHandler(baseConfig(), fixtureStore(), () => true, null, null);
    for (const zone of ['cluster.local.', 'Cluster.LOCAL.']) {
      const q = makeQuery(zone, 'NS');
      await h.serve(q);
      const m = replyOf(q)!;
      expect(rrLines(m.answers)).toEqual([`${zone} 5 IN NS kube-dns.kube-system.svc.${zone}`]);
      expect(rrLines(m.additionals)).toEqual([`kube-dns.kube-system.svc.${zone} 5 IN A 10.96.0.10`]);
    }
  });

  it('serial is the time of the last change and is patched into cached replies', async () => {
    const store = fixtureStore();
    const h = new KubernetesHandler(baseConfig(), store, () => true, null, null);
    const ask = async (): Promise<number | undefined> => {
      const q = makeQuery('cluster.local.', 'SOA');
      await h.serve(q);
      return soaSerial(replyOf(q)!);
    };
    expect(await ask()).toBe(1_700_000_000);
    store.now = () => 1_700_000_123_000;
    store.remove('services', 'testns/svc2');
    expect(await ask()).toBe(1_700_000_123);
  });

  it('drops only the affected cached answers when a service changes', async () => {
    const store = fixtureStore();
    const h = new KubernetesHandler(baseConfig(), store, () => true, null, null);
    await h.serve(makeQuery('svc1.testns.svc.cluster.local.', 'A'));
    await h.serve(makeQuery('svc2.testns.svc.cluster.local.', 'A'));
    await h.serve(makeQuery('newsvc.testns.svc.cluster.local.', 'A'));
    expect(h.cache.size).toBe(3);
    store.upsert('services', {
      name: 'newsvc',
      namespace: 'testns',
      resourceVersion: '9999',
      type: 'ClusterIP',
      clusterIPs: ['10.96.0.99'],
      headless: false,
      externalName: '',
      ports: [{ name: 'http', port: 80, protocol: 'TCP' }],
      externalIPs: [],
    });
    expect(h.cache.size).toBe(2);
    const q = makeQuery('newsvc.testns.svc.cluster.local.', 'A');
    expect(await h.serve(q)).toBe(Rcode.NOERROR);
    expect(rrLines(replyOf(q)!.answers)).toEqual(['newsvc.testns.svc.cluster.local. 5 IN A 10.96.0.99']);
  });

  it('recomputes answers in use right after a change (the next query is a cache hit)', async () => {
    const store = fixtureStore();
    const h = new KubernetesHandler(baseConfig(), store, () => true, null, null);
    const name = 'hl.testns.svc.cluster.local.';
    await h.serve(makeQuery(name, 'A'));
    await h.serve(makeQuery(name, 'A')); // a hit: marks the answer as in use
    await h.serve(makeQuery('skew.testns.svc.cluster.local.', 'A')); // computed once, never hit
    const old = store.slices.get('testns/hl-v4')!;
    store.upsert('endpointslices', {
      ...old,
      resourceVersion: 'z9',
      ...endpointColumns([{ address: addressAt(old.addresses, 0), hostname: old.hostnames?.[0] }]),
    });
    store.remove('endpointslices', 'testns/skew-a');
    expect(h.cache.get(1, name)).toBeUndefined();
    await new Promise((r) => setImmediate(r));
    const e = h.cache.get(1, name);
    expect(e).toBeDefined();
    expect(h.cache.get(1, 'skew.testns.svc.cluster.local.')).toBeUndefined();
    const q = makeQuery(name, 'A');
    await h.serve(q);
    expect(q.reply!.wire().subarray(q.req.questionEnd)).toEqual(
      Buffer.from(e!.wire, 'latin1').subarray(q.req.questionEnd),
    );
    expect(rrLines(replyOf(q)!.answers).sort()).toEqual([`${name} 5 IN A 10.244.1.20`]);
    h.close();
  });

  it('follows endpoint changes for headless services', async () => {
    const store = fixtureStore();
    const h = new KubernetesHandler(baseConfig(), store, () => true, null, null);
    const q1 = makeQuery('hlempty.testns.svc.cluster.local.', 'A');
    expect(await h.serve(q1)).toBe(Rcode.NXDOMAIN);
    const old = store.slices.get('testns/hlempty-x')!;
    store.upsert('endpointslices', { ...old, resourceVersion: 'x2', ...endpointColumns([{ address: '10.244.1.40' }]) });
    const q2 = makeQuery('hlempty.testns.svc.cluster.local.', 'A');
    expect(await h.serve(q2)).toBe(Rcode.NOERROR);
    expect(rrLines(replyOf(q2)!.answers)).toEqual(['hlempty.testns.svc.cluster.local. 5 IN A 10.244.1.40']);
  });

  it('namespace exposure follows namespace events', async () => {
    const store = fixtureStore();
    const h = new KubernetesHandler(baseConfig(), store, () => true, null, null);
    expect(await h.serve(makeQuery('svc1.testns.svc.cluster.local.', 'A'))).toBe(Rcode.NOERROR);
    store.remove('namespaces', 'testns');
    expect(await h.serve(makeQuery('svc1.testns.svc.cluster.local.', 'A'))).toBe(Rcode.NXDOMAIN);
  });
});

describe('other record rules', () => {
  const h = new KubernetesHandler(baseConfig(), fixtureStore(), () => true, null, null);
  const cases: [string, string, string, string[]][] = [
    ['in-addr.arpa.', 'PTR', 'NOERROR', []],
    ['1.0.96.in-addr.arpa.', 'PTR', 'NXDOMAIN', []],
    ['11.0.96.10.in-addr.arpa.', 'A', 'NXDOMAIN', []],
    ['svc1.testns.svc.cluster.local.', 'PTR', 'NOERROR', []],
    ['example.org.cluster.local.', 'PTR', 'NXDOMAIN', []],
    [
      '10.1.244.10.in-addr.arpa.',
      'PTR',
      'NOERROR',
      ['10.1.244.10.in-addr.arpa. 5 IN PTR 10-244-1-10.svc1.testns.svc.cluster.local.'],
    ],
    [
      '21.1.244.10.in-addr.arpa.',
      'PTR',
      'NOERROR',
      ['21.1.244.10.in-addr.arpa. 5 IN PTR 10-244-1-21.hl.testns.svc.cluster.local.'],
    ],
    [
      '3.1.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.6.9.0.0.0.1.0.0.0.0.d.f.ip6.arpa.',
      'PTR',
      'NOERROR',
      [
        '3.1.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.6.9.0.0.0.1.0.0.0.0.d.f.ip6.arpa. 5 IN PTR dual.testns.svc.cluster.local.',
      ],
    ],
    [
      '_https._tcp.svc2.testns.svc.cluster.local.',
      'SRV',
      'NOERROR',
      ['_https._tcp.svc2.testns.svc.cluster.local. 5 IN SRV 0 100 443 svc2.testns.svc.cluster.local.'],
    ],
    ['_dns._tcp.svc1.testns.svc.cluster.local.', 'SRV', 'NXDOMAIN', []],
    [
      'noname.testns.svc.cluster.local.',
      'SRV',
      'NOERROR',
      ['noname.testns.svc.cluster.local. 5 IN SRV 0 100 8080 noname.testns.svc.cluster.local.'],
    ],
    [
      'web-0.hl.testns.svc.cluster.local.',
      'SRV',
      'NOERROR',
      ['web-0.hl.testns.svc.cluster.local. 5 IN SRV 0 100 8080 web-0.hl.testns.svc.cluster.local.'],
    ],
    [
      '10-244-1-10.svc1.testns.svc.cluster.local.',
      'SRV',
      'NOERROR',
      ['10-244-1-10.svc1.testns.svc.cluster.local. 5 IN SRV 0 100 8080 10-244-1-10.svc1.testns.svc.cluster.local.'],
    ],
    ['_http._tcp.ext.testns.svc.cluster.local.', 'SRV', 'NXDOMAIN', []],
    ['x.ext.testns.svc.cluster.local.', 'A', 'NXDOMAIN', []],
    ['bogus.svc1.testns.svc.cluster.local.', 'A', 'NXDOMAIN', []],
    ['web-1.hl.testns.svc.cluster.local.', 'A', 'NXDOMAIN', []],
    ['extint.testns.svc.cluster.local.', 'AAAA', 'NOERROR', []],
    ['ext.testns.svc.cluster.local.', 'TXT', 'NOERROR', []],
    ['ext.testns.svc.cluster.local.', 'MX', 'NOERROR', []],
    ['svc.cluster.local.', 'TXT', 'NXDOMAIN', []],
    ['testns.svc.cluster.local.', 'TXT', 'NXDOMAIN', []],
    ['svc.cluster.local.', 'NS', 'NOERROR', []],
    ['foo.svc.cluster.local.', 'NS', 'NXDOMAIN', []],
    ['dns.cluster.local.', 'A', 'NXDOMAIN', []],
    ['ns.dns.cluster.local.', 'TXT', 'NXDOMAIN', []],
    ['ns.dns.cluster.local.', 'MX', 'NOERROR', []],
    ['ns.dns.CLUSTER.LOCAL.', 'A', 'NOERROR', ['ns.dns.CLUSTER.LOCAL. 5 IN A 10.96.0.10']],
    ['any.testns.svc.cluster.local.', 'A', 'NXDOMAIN', []],
    ['10-244-2-7.testns.pod.cluster.local.', 'AAAA', 'NOERROR', []],
    ['1-2-3-4.testns.pod.cluster.local.', 'A', 'NOERROR', ['1-2-3-4.testns.pod.cluster.local. 5 IN A 1.2.3.4']],
    ['blah.testns.pod.cluster.local.', 'A', 'NXDOMAIN', []],
    ['010-244-2-7.testns.pod.cluster.local.', 'A', 'NXDOMAIN', []],
    ['1-2-3-4.nope.pod.cluster.local.', 'A', 'NXDOMAIN', []],
    ['testns.pod.cluster.local.', 'A', 'NOERROR', []],
    ['pod.cluster.local.', 'A', 'NOERROR', []],
    ['kube-system.svc.cluster.local.', 'A', 'NOERROR', []],
  ];
  for (const [name, type, rcode, ans] of cases) {
    it(`${name} ${type} → ${rcode}`, async () => {
      const q = makeQuery(name, type);
      expect(rcodeName(await h.serve(q))).toBe(rcode);
      const m = replyOf(q)!;
      expect(rrLines(m.answers)).toEqual(ans);
      if (ans.length === 0) expect(m.authorities.map((r) => r.type)).toEqual(['SOA']);
    });
  }

  it('endpoint_pod_names: AAAA by pod name, PTR to the pod name', async () => {
    const he = new KubernetesHandler(baseConfig({ endpointPodNames: true }), fixtureStore(), () => true, null, null);
    const q = makeQuery('web-1.hl.testns.svc.cluster.local.', 'AAAA');
    expect(await he.serve(q)).toBe(Rcode.NOERROR);
    expect(rrLines(replyOf(q)!.answers)).toEqual(['web-1.hl.testns.svc.cluster.local. 5 IN AAAA fd00:10:244::21']);
    const p = makeQuery('21.1.244.10.in-addr.arpa.', 'PTR');
    expect(await he.serve(p)).toBe(Rcode.NOERROR);
    expect(rrLines(replyOf(p)!.answers)).toEqual([
      '21.1.244.10.in-addr.arpa. 5 IN PTR web-1.hl.testns.svc.cluster.local.',
    ]);
  });

  it('serves the root zone when the block key is `.`', async () => {
    const hr = new KubernetesHandler(
      baseConfig({ zones: ['.'], primaryZone: '.' }),
      fixtureStore(),
      () => true,
      null,
      null,
    );
    const q = makeQuery('svc1.testns.svc.', 'A');
    expect(await hr.serve(q)).toBe(Rcode.NOERROR);
    expect(rrLines(replyOf(q)!.answers)).toEqual(['svc1.testns.svc. 5 IN A 10.96.0.11']);
    const s = makeQuery('_http._tcp.svc1.testns.svc.', 'SRV');
    await hr.serve(s);
    expect(rrLines(replyOf(s)!.answers)).toEqual(['_http._tcp.svc1.testns.svc. 5 IN SRV 0 100 80 svc1.testns.svc.']);
    const n = makeQuery('google.com.', 'A');
    expect(await hr.serve(n)).toBe(Rcode.NXDOMAIN);
    expect(rrLines(replyOf(n)!.authorities, { maskSerial: true })).toEqual([
      '. 5 IN SOA ns.dns. hostmaster. <serial> 7200 1800 86400 5',
    ]);
    const p = makeQuery('11.0.96.10.in-addr.arpa.', 'PTR');
    await hr.serve(p);
    expect(rrLines(replyOf(p)!.answers)).toEqual(['11.0.96.10.in-addr.arpa. 5 IN PTR svc1.testns.svc.']);
  });

  it('passes queries outside its zones to the next plugin', async () => {
    const q = makeQuery('example.org.', 'A');
    const hn = new KubernetesHandler(baseConfig(), fixtureStore(), () => true, answeringNext, null);
    await hn.serve(q);
    expect(q.reply?.plugin).toBe('next');
  });

  it('namespaces option filters PTR answers', async () => {
    const hn = new KubernetesHandler(
      baseConfig({ namespaces: new Set(['kube-system']) }),
      fixtureStore(),
      () => true,
      null,
      null,
    );
    expect(await hn.serve(makeQuery('11.0.96.10.in-addr.arpa.', 'PTR'))).toBe(Rcode.NXDOMAIN);
    expect(await hn.serve(makeQuery('10.0.96.10.in-addr.arpa.', 'PTR'))).toBe(Rcode.NOERROR);
  });

  it('reverse-zone name errors carry the reverse zone SOA as spelled', async () => {
    const q = makeQuery('1.2.3.4.5.IN-ADDR.arpa.', 'PTR');
    expect(await h.serve(q)).toBe(Rcode.NXDOMAIN);
    expect(rrLines(replyOf(q)!.authorities, { maskSerial: true })).toEqual([
      'IN-ADDR.arpa. 5 IN SOA ns.dns.IN-ADDR.arpa. hostmaster.IN-ADDR.arpa. <serial> 7200 1800 86400 5',
    ]);
  });

  it('ttl 0: records with TTL 0, SOA TTL 0', async () => {
    const h0 = new KubernetesHandler(baseConfig({ ttl: 0 }), fixtureStore(), () => true, null, null);
    const q = makeQuery('svc1.testns.svc.cluster.local.', 'AAAA');
    await h0.serve(q);
    expect(rrLines(replyOf(q)!.authorities, { maskSerial: true })).toEqual([
      'cluster.local. 0 IN SOA ns.dns.cluster.local. hostmaster.cluster.local. <serial> 7200 1800 86400 0',
    ]);
  });

  it('zonal: pin and prefer names of headless services (§8.3)', async () => {
    const store = fixtureStore();
    store.upsert('endpointslices', {
      name: 'hl-z',
      namespace: 'testns',
      resourceVersion: 'z1',
      service: 'hl',
      addressType: 'IPv4',
      ports: [{ name: 'http', port: 8080, protocol: 'TCP' }],
      ...endpointColumns([
        { address: '10.244.3.1', zone: 'Corp.Example.com' },
        { address: '10.244.3.2', zone: 'other' },
      ]),
      triggerTime: null,
    });
    const hz = new KubernetesHandler(baseConfig({ zonal: true }), store, () => true, null, null);
    const ask = async (name: string, type = 'A'): Promise<[number, string[], string[]]> => {
      const q = makeQuery(name, type);
      const rc = await hz.serve(q);
      const m = replyOf(q)!;
      return [rc, rrLines(m.answers), rrLines(m.additionals)];
    };
    const pin = 'corp.example.com.pin._zone.hl.testns.svc.cluster.local.';
    expect(await ask(pin)).toEqual([0, [`${pin} 5 IN A 10.244.3.1`], []]);
    expect(await ask(pin, 'SRV')).toEqual([
      0,
      [`${pin} 5 IN SRV 0 100 8080 10-244-3-1.hl.testns.svc.cluster.local.`],
      ['10-244-3-1.hl.testns.svc.cluster.local. 5 IN A 10.244.3.1'],
    ]);
    expect(await ask(pin, 'TXT')).toEqual([0, [], []]);
    const pinNone = 'nowhere.pin._zone.hl.testns.svc.cluster.local.';
    expect(await ask(pinNone)).toEqual([0, [], []]);
    expect(await ask(pinNone, 'TXT')).toEqual([0, [], []]);
    const prefNone = 'nowhere.prefer._zone.hl.testns.svc.cluster.local.';
    expect((await ask(prefNone))[1].length).toBe(5); // all ready IPv4 endpoints of hl
    expect((await ask('other.prefer._zone.hl.testns.svc.cluster.local.'))[1]).toEqual([
      'other.prefer._zone.hl.testns.svc.cluster.local. 5 IN A 10.244.3.2',
    ]);
    expect((await ask('a.pin._zone.svc1.testns.svc.cluster.local.'))[0]).toBe(3); // ClusterIP
    expect((await ask('a.pin._zone.ext.testns.svc.cluster.local.'))[0]).toBe(3); // ExternalName
    expect((await ask('a.near._zone.hl.testns.svc.cluster.local.'))[0]).toBe(3); // unknown directive
    // without the option the names are too long
    expect(await h.serve(makeQuery(pin, 'A'))).toBe(3);
  });

  it('odd names never throw and get a well-formed reply', async () => {
    const raw = (labels: Buffer[], qtype: number): Buffer => {
      const parts: Buffer[] = [Buffer.from([0x12, 0x34, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0])];
      for (const l of labels) parts.push(Buffer.from([l.length]), l);
      parts.push(Buffer.from([0]), Buffer.from([qtype >> 8, qtype & 0xff, 0, 1]));
      return Buffer.concat(parts);
    };
    const { parseRequest } = await import('../../src/dns/wire.js');
    const { Query } = await import('../../src/query.js');
    const { TEST_TRANSPORT } = await import('../../test/helpers/dns.js');
    const zone = [Buffer.from('cluster'), Buffer.from('local')];
    const names: Buffer[][] = [
      [Buffer.from('a.b'), Buffer.from('testns'), Buffer.from('svc'), ...zone],
      [Buffer.from([0, 1, 0xff]), Buffer.from('svc'), ...zone],
      [Buffer.from('_'), Buffer.from('_tcp'), Buffer.from('svc1'), Buffer.from('testns'), Buffer.from('svc'), ...zone],
      [Buffer.from('x'.repeat(63)), Buffer.from('testns'), Buffer.from('pod'), ...zone],
      [Buffer.from('1-2-3-4-5'), Buffer.from('testns'), Buffer.from('pod'), ...zone],
      [Buffer.from('::'), Buffer.from('testns'), Buffer.from('pod'), ...zone],
      [Buffer.from('SVC1'), Buffer.from('TESTNS'), Buffer.from('SVC'), ...zone],
    ];
    for (const labels of names) {
      for (const qtype of [1, 28, 33, 12, 16, 5, 255, 65]) {
        const buf = raw(labels, qtype);
        const parsed = parseRequest(buf);
        if (parsed.kind !== 'query') throw new Error('test packet rejected');
        const q = new Query(buf, parsed.req, TEST_TRANSPORT);
        const rc = await h.serve(q);
        expect([0, 3]).toContain(rc);
        const m = replyOf(q)!;
        expect(m.id).toBe(0x1234);
        expect(m.questions.length).toBe(1);
      }
    }
  });

  it('pods verified: only pods of that namespace with that exact IP', async () => {
    const hv = new KubernetesHandler(baseConfig({ podMode: 'verified' }), fixtureStore(), () => true, null, null);
    const ok = makeQuery('10-244-2-7.testns.pod.cluster.local.', 'A');
    expect(await hv.serve(ok)).toBe(Rcode.NOERROR);
    expect(rrLines(replyOf(ok)!.answers)).toEqual(['10-244-2-7.testns.pod.cluster.local. 5 IN A 10.244.2.7']);
    expect(await hv.serve(makeQuery('testns.pod.cluster.local.', 'A'))).toBe(Rcode.NOERROR);
  });

  it('pods disabled: <ns>.pod.<zone> is NXDOMAIN, pod.<zone> NODATA', async () => {
    const hd = new KubernetesHandler(baseConfig({ podMode: 'disabled' }), fixtureStore(), () => true, null, null);
    expect(await hd.serve(makeQuery('testns.pod.cluster.local.', 'A'))).toBe(Rcode.NXDOMAIN);
    expect(await hd.serve(makeQuery('pod.cluster.local.', 'A'))).toBe(Rcode.NOERROR);
  });

  it('ns.dns without a slice containing the server IP falls back to the server IPs', async () => {
    const h2 = new KubernetesHandler(baseConfig({ localIPs: ['192.0.2.53'] }), fixtureStore(), () => true, null, null);
    const q = makeQuery('cluster.local.', 'NS');
    await h2.serve(q);
    const m = replyOf(q)!;
    expect(rrLines(m.answers)).toEqual(['cluster.local. 5 IN NS ns.dns.cluster.local.']);
    expect(rrLines(m.additionals)).toEqual(['ns.dns.cluster.local. 5 IN A 192.0.2.53']);
  });

  it('ExternalName outside the zone: CNAME followed by the lookup through the next plugin', async () => {
    const next: Handler = {
      name: 'forward',
      serve(q: Query) {
        const m = replyTo(q.request, 0, false);
        m.answers.push({ name: 'www.example.com', type: 'A', class: 'IN', ttl: 300, data: '93.184.216.34' });
        q.write(m, 'forward');
        return 0;
      },
    };
    const hx = new KubernetesHandler(baseConfig(), fixtureStore(), () => true, next, null);
    const q = makeQuery('ext.testns.svc.cluster.local.', 'A');
    expect(await hx.serve(q)).toBe(Rcode.NOERROR);
    expect(rrLines(replyOf(q)!.answers)).toEqual([
      'ext.testns.svc.cluster.local. 5 IN CNAME www.example.com.',
      'www.example.com. 300 IN A 93.184.216.34',
    ]);
    // A failing lookup drops the CNAME: NODATA.
    const failing: Handler = { name: 'forward', serve: () => Rcode.SERVFAIL };
    const hf = new KubernetesHandler(baseConfig(), fixtureStore(), () => true, failing, null);
    const q2 = makeQuery('ext.testns.svc.cluster.local.', 'A');
    expect(await hf.serve(q2)).toBe(Rcode.NOERROR);
    const m2 = replyOf(q2)!;
    expect(m2.answers).toEqual([]);
    expect(m2.authorities.map((r) => r.type)).toEqual(['SOA']);
  });

  it('autoPath gives the search path of a known pod client in verified mode only', () => {
    const hv = new KubernetesHandler(
      baseConfig({ podMode: 'verified', searchDomains: ['c.proj.internal.'] }),
      fixtureStore(),
      () => true,
      null,
      null,
    );
    const q = makeQuery('google.com.testns.svc.cluster.local.', 'A', { transport: { remoteAddress: '10.244.2.7' } });
    expect(hv.autoPath(q)).toEqual([
      'testns.svc.cluster.local.',
      'svc.cluster.local.',
      'cluster.local.',
      'c.proj.internal.',
      '',
    ]);
    expect(hv.autoPath(makeQuery('x.cluster.local.', 'A', { transport: { remoteAddress: '10.9.9.9' } }))).toBeNull();
    expect(h.autoPath(q)).toBeNull();
  });

  it('an empty store (nothing synced) gives SERVFAIL for name errors but answers NODATA', async () => {
    const hu = new KubernetesHandler(baseConfig(), new Store(), () => false, null, null);
    const q = makeQuery('svc.cluster.local.', 'A');
    expect(await hu.serve(q)).toBe(Rcode.NOERROR);
    expect(await hu.serve(makeQuery('svc1.testns.svc.cluster.local.', 'A'))).toBe(Rcode.SERVFAIL);
    const hf = new KubernetesHandler(baseConfig({ fallthrough: ['.'] }), new Store(), () => false, answeringNext, null);
    const q2 = makeQuery('svc1.testns.svc.cluster.local.', 'A');
    expect(await hf.serve(q2)).toBe(0);
    expect(q2.reply?.plugin).toBe('next');
  });
});
