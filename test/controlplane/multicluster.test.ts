/**
 * The kubernetes plugin's `multicluster` option against a real control plane (test/helpers/
 * controlplane.ts): the mcs-api ServiceImport CRD installed from test/fixtures/mcs-api (sigs.k8s.io/
 * mcs-api v0.5.2, the version CoreDNS 1.15.0 builds with), imports and multicluster EndpointSlices
 * created through kubectl, and every answer of the clusterset.local zone compared with the real
 * CoreDNS 1.15.0 on the same API server, through the `coredns` identity bound to the chart's
 * ClusterRole rendered with `rbac.multicluster=true` (so the chart's serviceimports rule is what
 * lets both servers list the imports). An update of an import reaches both.
 *
 * When the control plane cannot start the suite fails with the reason; it is never skipped.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { REPO_ROOT, type ControlPlane, type Obj } from '../helpers/controlplane.js';
import { addresses, agree, query } from './dns.js';
import { Rcode } from '../../src/dns/constants.js';
import { controlPlaneSuite } from './suite.js';

const NS = 'mcs';
const MC = 'clusterset.local';
const CRD = join(REPO_ROOT, 'test/fixtures/mcs-api/multicluster.x-k8s.io_serviceimports.yaml');

/** `kubectl apply` of objects (through a file: ServiceImports are not in the helper's kind table). */
function apply(cp: ControlPlane, objs: readonly Obj[]): void {
  const dir = mkdtempSync(join(tmpdir(), 'clusterdns-cp-mcs-'));
  try {
    const file = join(dir, 'objects.json');
    writeFileSync(file, JSON.stringify({ apiVersion: 'v1', kind: 'List', items: objs }));
    const r = cp.kubectl(['apply', '-f', file]);
    if (r.status !== 0) throw new Error(`kubectl apply failed: ${r.stderr}`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const serviceImport = (name: string, spec: Obj): Obj => ({
  apiVersion: 'multicluster.x-k8s.io/v1alpha1',
  kind: 'ServiceImport',
  metadata: { name, namespace: NS },
  spec,
});

const slice = (name: string, service: string, cluster: string, endpoints: Obj[], ports: Obj[]): Obj => ({
  apiVersion: 'discovery.k8s.io/v1',
  kind: 'EndpointSlice',
  metadata: {
    name,
    namespace: NS,
    labels: {
      'multicluster.kubernetes.io/service-name': service,
      'multicluster.kubernetes.io/source-cluster': cluster,
    },
  },
  addressType: 'IPv4',
  ports,
  endpoints,
});

const pg = [{ name: 'pg', protocol: 'TCP', port: 5432 }];

const need = controlPlaneSuite({
  namespace: NS,
  controlPlane: { chartValues: ['rbac.multicluster=true'] },
  dns: { zones: `cluster.local ${MC} in-addr.arpa`, extra: [`multicluster ${MC}`] },
  populate: async (c) => {
    const crd = c.kubectl(['apply', '-f', CRD]);
    if (crd.status !== 0) throw new Error(`installing the ServiceImport CRD failed: ${crd.stderr}`);
    const est = c.kubectl([
      'wait',
      '--for=condition=Established',
      '--timeout=120s',
      'crd/serviceimports.multicluster.x-k8s.io',
    ]);
    if (est.status !== 0) throw new Error(`the ServiceImport CRD was not established: ${est.stderr}`);
    apply(c, [
      serviceImport('web', {
        type: 'ClusterSetIP',
        ips: ['10.42.0.10'],
        ports: [
          { name: 'http', protocol: 'TCP', port: 80 },
          { name: 'dns', protocol: 'UDP', port: 53 },
        ],
      }),
      serviceImport('db', { type: 'Headless', ports: pg }),
      serviceImport('noips', { type: 'ClusterSetIP', ports: pg }),
      slice('db-c1', 'db', 'c1', [{ addresses: ['10.1.0.20'], hostname: 'db-0' }, { addresses: ['10.1.0.21'] }], pg),
      slice(
        'db-c2',
        'db',
        'c2',
        [
          { addresses: ['10.2.0.20'], hostname: 'db-0', conditions: { ready: true } },
          { addresses: ['10.2.0.21'], hostname: 'db-1', conditions: { ready: false } },
        ],
        pg,
      ),
      slice('web-c1', 'web', 'c1', [{ addresses: ['10.1.0.5'], hostname: 'web-0' }], [{ name: 'http', port: 8080 }]),
    ]);
  },
});

const SVC = (s: string): string => `${s}.${NS}.svc.${MC}`;

describe('multicluster against a real control plane (mcs-api CRD installed)', () => {
  test('clusterset.local answers agree with CoreDNS 1.15.0', async () => {
    const { servers } = need();
    const names = [
      SVC('web'),
      `_http._tcp.${SVC('web')}`,
      `_dns._udp.${SVC('web')}`,
      `web-0.c1.${SVC('web')}`,
      SVC('db'),
      `_pg._tcp.${SVC('db')}`,
      `db-0.c1.${SVC('db')}`,
      `db-0.c2.${SVC('db')}`,
      `db-1.c2.${SVC('db')}`,
      `10-1-0-21.c1.${SVC('db')}`,
      `db-0.${SVC('db')}`,
      SVC('noips'),
      SVC('nosuch'),
      `${NS}.svc.${MC}`,
      MC,
    ];
    for (const name of names)
      for (const type of ['A', 'AAAA', 'SRV', 'TXT', 'SOA', 'NS']) await agree(servers, name, type);
    const web = await agree(servers, SVC('web'), 'A');
    expect(web.rcode).toBe(Rcode.NOERROR);
    expect(web.answer.join('\n')).toContain('10.42.0.10');
    const db = await agree(servers, SVC('db'), 'A');
    for (const ip of ['10.1.0.20', '10.1.0.21', '10.2.0.20']) expect(db.answer.join('\n')).toContain(ip);
    expect(db.answer.join('\n')).not.toContain('10.2.0.21');
    expect((await agree(servers, `db-1.c2.${SVC('db')}`, 'A')).rcode).toBe(Rcode.NXDOMAIN);
  }, 240_000);

  test('an updated import and a new slice reach both servers', async () => {
    const { cp, servers } = need();
    apply(cp, [
      serviceImport('web', {
        type: 'ClusterSetIP',
        ips: ['10.42.0.20'],
        ports: [{ name: 'https', protocol: 'TCP', port: 443 }],
      }),
      slice('db-c3', 'db', 'c3', [{ addresses: ['10.3.0.20'], hostname: 'db-0' }], pg),
    ]);
    const web = await agree(servers, SVC('web'), 'A', 60_000);
    expect(web.answer.join('\n')).toContain('10.42.0.20');
    const c3 = await agree(servers, `db-0.c3.${SVC('db')}`, 'A', 60_000);
    expect(c3.rcode).toBe(Rcode.NOERROR);
    for (const s of servers) expect(addresses(await query(s, `db-0.c3.${SVC('db')}`, 'A'))).toEqual(['10.3.0.20']);
    for (const type of ['SRV', 'SOA']) await agree(servers, `_https._tcp.${SVC('web')}`, type);
  }, 240_000);
});
