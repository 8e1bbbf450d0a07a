/**
 * The test vectors of docs/records.md §11 (fixture §2.1), as data. Answers and additional
 * records are compared as sets (except where `ordered`), in the form `rrLines`
 * (test/helpers/records.ts) prints them with the SOA serial masked.
 * `soa` is the expected authority (defaults: `SOA` of cluster.local with TTL 5 whenever the answer
 * is empty and the RCODE is NOERROR/NXDOMAIN/SERVFAIL written by the plugin).
 */
import type { HandlerConfig } from './handler.js';

export interface Vector {
  n: string;
  /** Config delta (handler config) and its Corefile form. */
  cfg?: Partial<HandlerConfig>;
  corefile?: string;
  q: string;
  t: string;
  rcode: 'NOERROR' | 'NXDOMAIN' | 'SERVFAIL' | 'REFUSED';
  ans?: string[];
  extra?: string[];
  /** Expected authority; null = none. */
  ns?: string[] | null;
  /** Answer order matters. */
  ordered?: boolean;
  /** AA bit (default true). */
  aa?: boolean;
  /** The handler writes nothing (server-written reply). */
  noWrite?: boolean;
  /** Run with unsynced watches. */
  unsynced?: boolean;
  /** Only over TCP (AXFR). */
  tcp?: boolean;
  /** No EndpointSlices (the `noendpoints` option). */
  noEndpoints?: boolean;
  /** Needs a next plugin that answers (fallthrough row). */
  next?: boolean;
}

export const SOA = 'cluster.local. 5 IN SOA ns.dns.cluster.local. hostmaster.cluster.local. <serial> 7200 1800 86400 5';
export const RSOA = 'in-addr.arpa. 5 IN SOA ns.dns.in-addr.arpa. hostmaster.in-addr.arpa. <serial> 7200 1800 86400 5';

const T = 'testns.svc.cluster.local.';

export const VECTORS: Vector[] = [
  { n: '1', q: `svc1.${T}`, t: 'A', rcode: 'NOERROR', ans: [`svc1.${T} 5 IN A 10.96.0.11`] },
  { n: '2', q: `svc1.${T}`, t: 'AAAA', rcode: 'NOERROR', ns: [SOA] },
  { n: '3', q: `dual.${T}`, t: 'A', rcode: 'NOERROR', ans: [`dual.${T} 5 IN A 10.96.0.13`] },
  { n: '4', q: `dual.${T}`, t: 'AAAA', rcode: 'NOERROR', ans: [`dual.${T} 5 IN AAAA fd00:10:96::13`] },
  { n: '5', q: `v6only.${T}`, t: 'A', rcode: 'NOERROR', ns: [SOA] },
  { n: '6', q: `svc2.${T}`, t: 'A', rcode: 'NOERROR', ans: [`svc2.${T} 5 IN A 10.96.0.12`] },
  {
    n: '7',
    cfg: { ignoreEmptyService: true },
    corefile: 'ignore empty_service',
    q: `svc2.${T}`,
    t: 'A',
    rcode: 'NXDOMAIN',
    ns: [SOA],
  },
  { n: '8', q: `missing.${T}`, t: 'A', rcode: 'NXDOMAIN', ns: [SOA] },
  { n: '9', q: 'svc1.nope.svc.cluster.local.', t: 'A', rcode: 'NXDOMAIN', ns: [SOA] },
  { n: '10', q: T, t: 'A', rcode: 'NOERROR', ns: [SOA] },
  { n: '11', q: 'empty-ns.svc.cluster.local.', t: 'A', rcode: 'NOERROR', ns: [SOA] },
  { n: '12', q: 'svc.cluster.local.', t: 'A', rcode: 'NOERROR', ns: [SOA] },
  { n: '13', q: 'foo.cluster.local.', t: 'A', rcode: 'NXDOMAIN', ns: [SOA] },
  {
    n: '14',
    q: `hl.${T}`,
    t: 'A',
    rcode: 'NOERROR',
    ans: [`hl.${T} 5 IN A 10.244.1.20`, `hl.${T} 5 IN A 10.244.1.21`, `hl.${T} 5 IN A 10.244.1.23`],
  },
  { n: '15', q: `hl.${T}`, t: 'AAAA', rcode: 'NOERROR', ans: [`hl.${T} 5 IN AAAA fd00:10:244::21`] },
  { n: '16', q: `hlempty.${T}`, t: 'A', rcode: 'NXDOMAIN', ns: [SOA] },
  { n: '17', q: `hlempty.${T}`, t: 'TXT', rcode: 'NXDOMAIN', ns: [SOA] },
  { n: '18', q: `hlnp.${T}`, t: 'A', rcode: 'NOERROR', ans: [`hlnp.${T} 5 IN A 10.244.1.30`] },
  { n: '19', q: `hlnp.${T}`, t: 'SRV', rcode: 'NOERROR', ns: [SOA] },
  { n: '20', q: `web-0.hl.${T}`, t: 'A', rcode: 'NOERROR', ans: [`web-0.hl.${T} 5 IN A 10.244.1.20`] },
  { n: '21', q: `10-244-1-21.hl.${T}`, t: 'A', rcode: 'NOERROR', ans: [`10-244-1-21.hl.${T} 5 IN A 10.244.1.21`] },
  { n: '22', q: `10-244-1-22.hl.${T}`, t: 'A', rcode: 'NXDOMAIN', ns: [SOA] },
  {
    n: '23',
    cfg: { endpointPodNames: true },
    corefile: 'endpoint_pod_names',
    q: `web-1.hl.${T}`,
    t: 'A',
    rcode: 'NOERROR',
    ans: [`web-1.hl.${T} 5 IN A 10.244.1.21`],
  },
  {
    n: '24',
    cfg: { endpointPodNames: true },
    corefile: 'endpoint_pod_names',
    q: `10-244-1-21.hl.${T}`,
    t: 'A',
    rcode: 'NXDOMAIN',
    ns: [SOA],
  },
  {
    n: '25',
    q: `fd00-10-244--21.hl.${T}`,
    t: 'AAAA',
    rcode: 'NOERROR',
    ans: [`fd00-10-244--21.hl.${T} 5 IN AAAA fd00:10:244::21`],
  },
  { n: '26', q: `10-244-1-10.svc1.${T}`, t: 'A', rcode: 'NOERROR', ans: [`10-244-1-10.svc1.${T} 5 IN A 10.244.1.10`] },
  {
    n: '27',
    q: `_http._tcp.svc1.${T}`,
    t: 'SRV',
    rcode: 'NOERROR',
    ans: [`_http._tcp.svc1.${T} 5 IN SRV 0 100 80 svc1.${T}`],
    extra: [`svc1.${T} 5 IN A 10.96.0.11`],
  },
  {
    n: '28',
    q: `svc2.${T}`,
    t: 'SRV',
    rcode: 'NOERROR',
    ans: [`svc2.${T} 5 IN SRV 0 50 80 svc2.${T}`, `svc2.${T} 5 IN SRV 0 50 443 svc2.${T}`],
    extra: [`svc2.${T} 5 IN A 10.96.0.12`],
  },
  {
    n: '29',
    q: `dual.${T}`,
    t: 'SRV',
    rcode: 'NOERROR',
    ans: [`dual.${T} 5 IN SRV 0 50 80 dual.${T}`],
    extra: [`dual.${T} 5 IN A 10.96.0.13`, `dual.${T} 5 IN AAAA fd00:10:96::13`],
  },
  {
    n: '30',
    q: `_http._tcp.hl.${T}`,
    t: 'SRV',
    rcode: 'NOERROR',
    ans: ['web-0', '10-244-1-21', '10-244-1-23', 'fd00-10-244--21'].map(
      (t) => `_http._tcp.hl.${T} 5 IN SRV 0 25 8080 ${t}.hl.${T}`,
    ),
    extra: [
      `web-0.hl.${T} 5 IN A 10.244.1.20`,
      `10-244-1-21.hl.${T} 5 IN A 10.244.1.21`,
      `10-244-1-23.hl.${T} 5 IN A 10.244.1.23`,
      `fd00-10-244--21.hl.${T} 5 IN AAAA fd00:10:244::21`,
    ],
  },
  {
    n: '31',
    q: `_http._tcp.skew.${T}`,
    t: 'SRV',
    rcode: 'NOERROR',
    ans: [`_http._tcp.skew.${T} 5 IN SRV 0 50 8080 10-244-1-60.skew.${T}`],
    extra: [`10-244-1-60.skew.${T} 5 IN A 10.244.1.60`],
  },
  { n: '32', q: `_http._udp.svc1.${T}`, t: 'SRV', rcode: 'NXDOMAIN', ns: [SOA] },
  { n: '33', q: `_tcp.svc1.${T}`, t: 'SRV', rcode: 'NXDOMAIN', ns: [SOA] },
  {
    n: '34',
    q: `http.tcp.svc1.${T}`,
    t: 'SRV',
    rcode: 'NOERROR',
    ans: [`http.tcp.svc1.${T} 5 IN SRV 0 100 80 svc1.${T}`],
    extra: [`svc1.${T} 5 IN A 10.96.0.11`],
  },
  { n: '35', q: `_http._tcp.svc1.${T}`, t: 'A', rcode: 'NOERROR', ans: [`_http._tcp.svc1.${T} 5 IN A 10.96.0.11`] },
  { n: '36', q: `a.b.c.svc1.${T}`, t: 'A', rcode: 'NXDOMAIN', ns: [SOA] },
  { n: '37', q: `ext.${T}`, t: 'CNAME', rcode: 'NOERROR', ans: [`ext.${T} 5 IN CNAME www.example.com.`] },
  {
    n: '38',
    q: `extint.${T}`,
    t: 'A',
    rcode: 'NOERROR',
    ordered: true,
    ans: [`extint.${T} 5 IN CNAME svc1.${T}`, `svc1.${T} 5 IN A 10.96.0.11`],
  },
  { n: '39', q: `extip.${T}`, t: 'A', rcode: 'NXDOMAIN', ns: [SOA] },
  { n: '40', q: `ext.${T}`, t: 'SRV', rcode: 'NOERROR', ns: [SOA] },
  {
    n: '41',
    q: '10-244-2-7.testns.pod.cluster.local.',
    t: 'A',
    rcode: 'NOERROR',
    ans: ['10-244-2-7.testns.pod.cluster.local. 5 IN A 10.244.2.7'],
  },
  {
    n: '42',
    cfg: { podMode: 'disabled' },
    corefile: 'pods disabled',
    q: '10-244-2-7.testns.pod.cluster.local.',
    t: 'A',
    rcode: 'NXDOMAIN',
    ns: [SOA],
  },
  {
    n: '43',
    cfg: { podMode: 'verified' },
    corefile: 'pods verified',
    q: '10-244-2-7.default.pod.cluster.local.',
    t: 'A',
    rcode: 'NXDOMAIN',
    ns: [SOA],
  },
  {
    n: '44',
    cfg: { podMode: 'verified' },
    corefile: 'pods verified',
    q: '1-2-3-4.testns.pod.cluster.local.',
    t: 'A',
    rcode: 'NXDOMAIN',
    ns: [SOA],
  },
  {
    n: '45',
    q: 'fd00-10-244--7.testns.pod.cluster.local.',
    t: 'AAAA',
    rcode: 'NOERROR',
    ans: ['fd00-10-244--7.testns.pod.cluster.local. 5 IN AAAA fd00:10:244::7'],
  },
  {
    n: '46',
    q: '11.0.96.10.in-addr.arpa.',
    t: 'PTR',
    rcode: 'NOERROR',
    ans: [`11.0.96.10.in-addr.arpa. 5 IN PTR svc1.${T}`],
  },
  {
    n: '47',
    q: '20.1.244.10.in-addr.arpa.',
    t: 'PTR',
    rcode: 'NOERROR',
    ans: [`20.1.244.10.in-addr.arpa. 5 IN PTR web-0.hl.${T}`],
  },
  { n: '48', q: '99.99.0.10.in-addr.arpa.', t: 'PTR', rcode: 'NXDOMAIN', ns: [RSOA] },
  {
    n: '49',
    cfg: { fallthrough: ['in-addr.arpa.', 'ip6.arpa.'] },
    corefile: 'fallthrough in-addr.arpa ip6.arpa',
    next: true,
    q: '99.99.0.10.in-addr.arpa.',
    t: 'PTR',
    rcode: 'NOERROR',
    aa: false,
    ans: ['99.99.0.10.in-addr.arpa. 60 IN PTR from-next.example.'],
    ns: null,
  },
  { n: '50', q: 'cluster.local.', t: 'SOA', rcode: 'NOERROR', ans: [SOA], ns: null },
  {
    n: '51',
    q: 'cluster.local.',
    t: 'NS',
    rcode: 'NOERROR',
    ans: ['cluster.local. 5 IN NS kube-dns.kube-system.svc.cluster.local.'],
    extra: ['kube-dns.kube-system.svc.cluster.local. 5 IN A 10.96.0.10'],
  },
  { n: '52', q: 'ns.dns.cluster.local.', t: 'A', rcode: 'NOERROR', ans: ['ns.dns.cluster.local. 5 IN A 10.96.0.10'] },
  { n: '53', q: 'cluster.local.', t: 'A', rcode: 'NOERROR', ns: [SOA] },
  { n: '54', q: 'cluster.local.', t: 'TXT', rcode: 'NXDOMAIN', ns: [SOA] },
  {
    n: '55',
    q: 'dns-version.cluster.local.',
    t: 'TXT',
    rcode: 'NOERROR',
    ans: ['dns-version.cluster.local. 28800 IN TXT "1.1.0"'],
  },
  { n: '56', q: 'dns-version.cluster.local.', t: 'A', rcode: 'NXDOMAIN', ns: [SOA] },
  { n: '57', q: `svc1.${T}`, t: 'TXT', rcode: 'NOERROR', ns: [SOA] },
  { n: '58', q: `svc1.${T}`, t: 'SOA', rcode: 'NOERROR', ns: [SOA] },
  { n: '59', q: 'nothing.cluster.local.', t: 'SOA', rcode: 'NOERROR', ns: [SOA] },
  { n: '60', q: `svc1.${T}`, t: 'ANY', rcode: 'NOERROR', ns: [SOA] },
  {
    n: '61',
    q: 'SvC1.TeStNs.SvC.cLuStEr.LoCaL.',
    t: 'A',
    rcode: 'NOERROR',
    ans: ['SvC1.TeStNs.SvC.cLuStEr.LoCaL. 5 IN A 10.96.0.11'],
  },
  {
    n: '62',
    q: 'not-a-service.testns.svc.ClUsTeR.lOcAl.',
    t: 'A',
    rcode: 'NXDOMAIN',
    ns: ['ClUsTeR.lOcAl. 5 IN SOA ns.dns.ClUsTeR.lOcAl. hostmaster.ClUsTeR.lOcAl. <serial> 7200 1800 86400 5'],
  },
  { n: '63', q: `*.testns.svc.cluster.local.`, t: 'A', rcode: 'NXDOMAIN', ns: [SOA] },
  {
    n: '64',
    cfg: { namespaces: new Set(['testns']) },
    corefile: 'namespaces testns',
    q: 'kube-dns.kube-system.svc.cluster.local.',
    t: 'A',
    rcode: 'NXDOMAIN',
    ns: [SOA],
  },
  {
    n: '65a',
    cfg: { ttl: 30 },
    corefile: 'ttl 30',
    q: `svc1.${T}`,
    t: 'A',
    rcode: 'NOERROR',
    ans: [`svc1.${T} 30 IN A 10.96.0.11`],
  },
  {
    n: '65b',
    cfg: { ttl: 30 },
    corefile: 'ttl 30',
    q: `svc1.${T}`,
    t: 'AAAA',
    rcode: 'NOERROR',
    ns: ['cluster.local. 30 IN SOA ns.dns.cluster.local. hostmaster.cluster.local. <serial> 7200 1800 86400 30'],
  },
  {
    n: '66',
    cfg: { ttl: 600 },
    corefile: 'ttl 600',
    q: `missing.${T}`,
    t: 'A',
    rcode: 'NXDOMAIN',
    ns: ['cluster.local. 300 IN SOA ns.dns.cluster.local. hostmaster.cluster.local. <serial> 7200 1800 86400 600'],
  },
  { n: '67', q: 'cluster.local.', t: 'AXFR', rcode: 'REFUSED', aa: false, noWrite: true, tcp: true, ns: null },
  { n: '68', unsynced: true, q: `missing.${T}`, t: 'A', rcode: 'SERVFAIL', ns: [SOA] },
  { n: '69', q: 'example.com.', t: 'A', rcode: 'SERVFAIL', aa: false, noWrite: true, ns: null },
  { n: '70', noEndpoints: true, corefile: 'noendpoints', q: `hl.${T}`, t: 'A', rcode: 'NXDOMAIN', ns: [SOA] },
  {
    n: '71',
    q: `_pg._tcp.manual.${T}`,
    t: 'SRV',
    rcode: 'NOERROR',
    ans: [`_pg._tcp.manual.${T} 5 IN SRV 0 100 5432 manual.${T}`],
    extra: [`manual.${T} 5 IN A 10.96.0.17`],
  },
  { n: '72', q: `manual.${T}`, t: 'A', rcode: 'NOERROR', ans: [`manual.${T} 5 IN A 10.96.0.17`] },
];
