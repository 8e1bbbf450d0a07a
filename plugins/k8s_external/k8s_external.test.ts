/**
 * k8s_external: setup errors (CoreDNS 1.15.0's wording, with file:line), the startup error without
 * the kubernetes plugin, and answers over real sockets from a sandbox API server through the
 * kubernetes plugin's index (LoadBalancer ingress IPs and hostnames, externalIPs, headless
 * endpoints, SRV, PTR, apex SOA/NS, the `dns` subdomain, fallthrough, serial on update).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Dispenser } from '../../src/corefile/dispenser.js';
import { lex } from '../../src/corefile/lexer.js';
import { ConfigError, ConfigErrorList } from '../../src/corefile/types.js';
import { Flag } from '../../src/dns/constants.js';
import { rcode, tcpQuery, udpQuery } from '../../test/helpers/dns.js';
import { rrLines } from '../../test/helpers/records.js';
import { startServer, type TestServer } from '../../test/helpers/server.js';
import { startSandbox, type Sandbox } from '../../sandbox/server.js';
import { networkInterfaces } from 'node:os';
import { parseExternal } from './setup.js';
import { waitFor } from '../../test/helpers/wait.js';

function parse(text: string) {
  return parseExternal(new Dispenser(lex(text, 'Corefile'), 'k8s_external'), ['example.com.']);
}

function errorOf(text: string): string {
  try {
    parse(text);
  } catch (e) {
    if (e instanceof ConfigErrorList) return e.errors.map((x) => x.describe()).join('\n');
    if (e instanceof ConfigError) return e.describe();
    throw e;
  }
  return '';
}

describe('k8s_external setup', () => {
  it('defaults and options', () => {
    expect(parse('k8s_external')).toEqual({
      zones: ['example.com.'],
      apex: 'dns',
      ttl: 5,
      headless: false,
      fallthrough: null,
    });
    expect(
      parse(
        'k8s_external Example.ORG 10.0.0.0/24 {\n apex testdns\n ttl 30 40\n headless\n fallthrough ip6.arpa foo.com\n}',
      ),
    ).toEqual({
      zones: ['example.org.', '0.0.10.in-addr.arpa.'],
      apex: 'testdns',
      ttl: 30,
      headless: true,
      fallthrough: ['ip6.arpa.', 'foo.com.'],
    });
    expect(parse('k8s_external example.org {\n fallthrough\n}').fallthrough).toEqual(['.']);
  });

  it('rejects bad options with CoreDNS wording and file:line', () => {
    expect(errorOf('k8s_external example.org {\n  ttl x\n}')).toBe(
      'plugin/k8s_external: Corefile:2 - Error during parsing: strconv.Atoi: parsing "x": invalid syntax',
    );
    expect(errorOf('k8s_external example.org {\n  ttl 5000\n}')).toBe(
      'plugin/k8s_external: Corefile:2 - Error during parsing: ttl must be in range [0, 3600]: 5000',
    );
    expect(errorOf('k8s_external example.org {\n  ttl -1\n}')).toBe(
      'plugin/k8s_external: Corefile:2 - Error during parsing: ttl must be in range [0, 3600]: -1',
    );
    expect(errorOf('k8s_external example.org {\n  ttl\n}')).toBe(
      "plugin/k8s_external: Corefile:2 - Error during parsing: Wrong argument count or unexpected line ending after 'ttl'",
    );
    expect(errorOf('k8s_external example.org {\n\n  apex\n}')).toBe(
      "plugin/k8s_external: Corefile:3 - Error during parsing: Wrong argument count or unexpected line ending after 'apex'",
    );
    expect(errorOf('k8s_external example.org {\n  bogus 1\n}')).toBe(
      "plugin/k8s_external: Corefile:2 - Error during parsing: unknown property 'bogus'",
    );
    expect(errorOf('k8s_external example.org {\n  headless yes\n}')).toBe(
      "plugin/k8s_external: Corefile:2 - Error during parsing: unknown property 'yes'",
    );
  });

  it('without the kubernetes plugin in its block the server does not start (as CoreDNS)', async () => {
    await expect(startServer('. {\n  k8s_external example.org\n  whoami\n}\n')).rejects.toThrow(
      'plugin/k8s_external: kubernetes plugin not loaded',
    );
  });
});

const NS = (name: string) => ({ apiVersion: 'v1', kind: 'Namespace', metadata: { name } });
const OBJECTS: unknown[] = [
  NS('default'),
  NS('ns1'),
  {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: 'lb', namespace: 'ns1' },
    spec: {
      type: 'LoadBalancer',
      clusterIP: '10.96.1.1',
      externalIPs: ['192.0.2.10'],
      ports: [
        { name: 'http', port: 80, protocol: 'TCP' },
        { name: 'dns', port: 53, protocol: 'UDP' },
      ],
    },
    status: { loadBalancer: { ingress: [{ ip: '198.51.100.1' }, { ip: '2001:db8::1' }] } },
  },
  {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: 'lbhost', namespace: 'ns1' },
    spec: { type: 'LoadBalancer', clusterIP: '10.96.1.2', ports: [{ name: 'https', port: 443, protocol: 'TCP' }] },
    status: { loadBalancer: { ingress: [{ hostname: 'lb.example.net' }] } },
  },
  {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: 'internal', namespace: 'ns1' },
    spec: { clusterIP: '10.96.1.3', ports: [{ name: 'http', port: 80, protocol: 'TCP' }] },
  },
  {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: 'hl', namespace: 'ns1' },
    spec: { clusterIP: 'None', ports: [{ name: 'http', port: 8080, protocol: 'TCP' }] },
  },
  {
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: { name: 'hl-1', namespace: 'ns1', labels: { 'kubernetes.io/service-name': 'hl' } },
    addressType: 'IPv4',
    ports: [{ name: 'http', port: 8080, protocol: 'TCP' }],
    endpoints: [
      { addresses: ['10.244.1.5'], hostname: 'web-0', conditions: { ready: true } },
      { addresses: ['10.244.1.6'], conditions: { ready: true } },
    ],
  },
];

describe('k8s_external answers', () => {
  let sb: Sandbox;
  let s: TestServer;
  let hs: TestServer;
  beforeAll(async () => {
    sb = await startSandbox({ objects: OBJECTS, log: () => undefined });
    const block = (opts: string) =>
      `. {\n  hosts {\n    203.0.113.9 lb.example.net\n    fallthrough\n  }\n  kubernetes cluster.local {\n    endpoint ${sb.url}\n  }\n  k8s_external example.org 100.51.198.in-addr.arpa {\n${opts}  }\n  whoami\n}\n`;
    s = await startServer(block('    ttl 7\n'));
    hs = await startServer(block('    headless\n    apex ext\n    fallthrough\n'));
  }, 60_000);
  afterAll(async () => {
    await s?.stop();
    await hs?.stop();
    await sb?.close();
  });

  const q = (srv: TestServer, name: string, type: string) => udpQuery(srv.port, name, type);

  it('A and AAAA for externalIPs and load-balancer ingress IPs, owner as asked', async () => {
    const a = await q(s, 'LB.ns1.example.org', 'A');
    expect(rcode(a)).toBe(0);
    expect(((a.flags ?? 0) & Flag.AA) !== 0).toBe(true);
    expect(rrLines(a.answers)).toEqual([
      'LB.ns1.example.org. 7 IN A 192.0.2.10',
      'LB.ns1.example.org. 7 IN A 198.51.100.1',
    ]);
    const aaaa = await tcpQuery(s.port, 'lb.ns1.example.org', 'AAAA');
    expect(rrLines(aaaa.answers)).toEqual(['lb.ns1.example.org. 7 IN AAAA 2001:db8::1']);
  });

  it('a load-balancer hostname is a CNAME followed through the server', async () => {
    const a = await q(s, 'lbhost.ns1.example.org', 'A');
    expect(rrLines(a.answers)).toEqual([
      'lbhost.ns1.example.org. 5 IN CNAME lb.example.net.',
      'lb.example.net. 3600 IN A 203.0.113.9',
    ]);
  });

  it('SRV with weights and the targets in the additional section', async () => {
    const m = await q(s, '_http._tcp.lb.ns1.example.org', 'SRV');
    expect(rrLines(m.answers)).toEqual(['_http._tcp.lb.ns1.example.org. 5 IN SRV 0 33 80 lb.ns1.example.org.']);
    expect(rrLines(m.additionals).sort()).toEqual([
      'lb.ns1.example.org. 7 IN A 192.0.2.10',
      'lb.ns1.example.org. 7 IN A 198.51.100.1',
      'lb.ns1.example.org. 7 IN AAAA 2001:db8::1',
    ]);
    const all = await q(s, 'lb.ns1.example.org', 'SRV');
    expect(rrLines(all.answers)).toEqual([
      'lb.ns1.example.org. 5 IN SRV 0 16 80 lb.ns1.example.org.',
      'lb.ns1.example.org. 5 IN SRV 0 16 53 lb.ns1.example.org.',
    ]);
  });

  it('PTR for an external IP in a reverse zone of the plugin', async () => {
    const m = await q(s, '1.100.51.198.in-addr.arpa', 'PTR');
    expect(rrLines(m.answers)).toEqual(['1.100.51.198.in-addr.arpa. 7 IN PTR lb.ns1.example.org.']);
    const nx = await q(s, '2.100.51.198.in-addr.arpa', 'PTR');
    expect(rcode(nx)).toBe(3);
    expect(rrLines(nx.authorities)[0]).toMatch(
      /^100\.51\.198\.in-addr\.arpa\. 7 IN SOA ns1\.dns\.100\.51\.198\.in-addr\.arpa\. hostmaster\.dns\.100\.51\.198\.in-addr\.arpa\. 0 7200 1800 86400 7$/,
    );
  });

  it('NXDOMAIN and NODATA with the zone SOA', async () => {
    const internal = await q(s, 'internal.ns1.example.org', 'A');
    expect(rcode(internal)).toBe(3);
    expect(rrLines(internal.authorities)).toEqual([
      'example.org. 7 IN SOA ns1.dns.example.org. hostmaster.dns.example.org. 0 7200 1800 86400 7',
    ]);
    expect(rcode(await q(s, 'lb.nosuchns.example.org', 'A'))).toBe(3);
    expect(rcode(await q(s, 'a.b.c.lb.ns1.example.org', 'A'))).toBe(3);
    const ns = await q(s, 'ns1.example.org', 'A');
    expect([rcode(ns), ns.answers.length, ns.authorities.length]).toEqual([0, 0, 1]);
    const txt = await q(s, 'lb.ns1.example.org', 'TXT');
    expect([rcode(txt), txt.answers.length, txt.authorities.length]).toEqual([0, 0, 1]);
    // Without `headless`, an endpoint-like name still gives the service's external addresses.
    expect(rrLines((await q(s, 'x.lb.ns1.example.org', 'A')).answers)).toHaveLength(2);
    // A headless service has no external address.
    expect(rcode(await q(s, 'hl.ns1.example.org', 'A'))).toBe(3);
  });

  it("the apex: SOA, NS with the server's own addresses, the dns subdomain", async () => {
    const soa = await q(s, 'example.org', 'SOA');
    expect(rrLines(soa.answers)).toEqual([
      'example.org. 7 IN SOA ns1.dns.example.org. hostmaster.dns.example.org. 0 7200 1800 86400 7',
    ]);
    // Outside a cluster the name server's addresses are this host's non-loopback ones.
    const own = [
      ...new Set(
        Object.values(networkInterfaces())
          .flatMap((l) => l ?? [])
          .filter((a) => !a.internal)
          .map((a) => a.address.split('%')[0]!),
      ),
    ];
    const ns = await q(s, 'Example.org', 'NS');
    // Names compare case-insensitively; the encoder compresses them against the question's spelling.
    expect(rrLines(ns.answers).map((r) => r.toLowerCase())).toEqual(['example.org. 7 in ns ns1.dns.example.org.']);
    expect(
      rrLines(ns.additionals)
        .map((r) => r.split(' ').pop())
        .sort(),
    ).toEqual([...own].sort());
    for (const r of rrLines(ns.additionals)) expect(r.toLowerCase().startsWith('ns1.dns.example.org. 7 ')).toBe(true);
    const nsA = await q(s, 'ns1.dns.example.org', 'A');
    expect(rrLines(nsA.answers).map((r) => r.split(' ').pop())).toEqual(own.filter((ip) => ip.includes('.')));
    const dns = await q(s, 'dns.example.org', 'A');
    expect([rcode(dns), dns.answers.length]).toEqual([0, 0]);
    expect(rcode(await q(s, 'ns2.dns.example.org', 'A'))).toBe(3);
    expect(rcode(await q(s, 'x.ns1.dns.example.org', 'A'))).toBe(3);
    const mx = await q(s, 'example.org', 'MX');
    expect([rcode(mx), mx.answers.length, rrLines(mx.authorities).length]).toEqual([0, 0, 1]);
  });

  it('headless: endpoint addresses and names, apex label, fallthrough', async () => {
    const a = await q(hs, 'hl.ns1.example.org', 'A');
    expect(rrLines(a.answers).sort()).toEqual([
      'hl.ns1.example.org. 5 IN A 10.244.1.5',
      'hl.ns1.example.org. 5 IN A 10.244.1.6',
    ]);
    expect(rrLines((await q(hs, 'web-0.hl.ns1.example.org', 'A')).answers)).toEqual([
      'web-0.hl.ns1.example.org. 5 IN A 10.244.1.5',
    ]);
    const srv = await q(hs, '_http._tcp.hl.ns1.example.org', 'SRV');
    expect(rrLines(srv.answers).sort()).toEqual([
      '_http._tcp.hl.ns1.example.org. 5 IN SRV 0 50 8080 10-244-1-6.hl.ns1.example.org.',
      '_http._tcp.hl.ns1.example.org. 5 IN SRV 0 50 8080 web-0.hl.ns1.example.org.',
    ]);
    const soa = await q(hs, 'example.org', 'SOA');
    expect(rrLines(soa.answers)).toEqual([
      'example.org. 5 IN SOA ns1.ext.example.org. hostmaster.ext.example.org. 0 7200 1800 86400 5',
    ]);
    // fallthrough: an NXDOMAIN name goes to whoami (no SOA, an address record in the additional section).
    const ft = await q(hs, 'internal.ns1.example.org', 'A');
    expect([rcode(ft), ft.authorities.length, ft.additionals.some((r) => r.type === 'A')]).toEqual([0, 0, true]);
    // NODATA does not fall through.
    const nodata = await q(hs, 'ns1.example.org', 'A');
    expect([rcode(nodata), nodata.authorities.length]).toEqual([0, 1]);
  });

  it("the serial moves when a service's external addresses change on update, and answers follow", async () => {
    sb.apply({
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'lb', namespace: 'ns1' },
      spec: { type: 'LoadBalancer', clusterIP: '10.96.1.1', ports: [{ name: 'http', port: 80, protocol: 'TCP' }] },
      status: { loadBalancer: { ingress: [{ ip: '198.51.100.2' }] } },
    });
    let m = await q(s, 'lb.ns1.example.org', 'A');
    await waitFor('the updated external address', async () => {
      m = await q(s, 'lb.ns1.example.org', 'A');
      return rrLines(m.answers).join() === 'lb.ns1.example.org. 7 IN A 198.51.100.2';
    });
    expect(rrLines(m.answers)).toEqual(['lb.ns1.example.org. 7 IN A 198.51.100.2']);
    const soa = await q(s, 'example.org', 'SOA');
    const serial = Number(rrLines(soa.answers)[0]!.split(' ')[6]);
    expect(Math.abs(serial - Date.now() / 1000)).toBeLessThan(120);
  });
});
