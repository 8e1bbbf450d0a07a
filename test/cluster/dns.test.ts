/**
 * Pods' own resolvers against clusterdns on a real node (scripts/cluster/up.sh): the chart's
 * Deployment behind the kube-dns Service at 10.96.0.10, kube-proxy's iptables rules in between,
 * and client pods whose /etc/resolv.conf kubelet wrote (search path, ndots:5).
 *
 * Services and pods live in namespace A; client pods (glibc and musl) run in A and in B, so each
 * name is looked up both through the own namespace's search domain and across namespaces. Every
 * expected value comes from the API (ClusterIPs, pod IPs), none is written down here.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor, anyError } from '../helpers/wait.js';
import { type ClusterEnv, clusterEnv, execIn, inNetns, kubectl } from './cluster.js';

const suffix = randomBytes(3).toString('hex');
const nsA = `dns-a-${suffix}`;
const nsB = `dns-b-${suffix}`;
let env: ClusterEnv;
let webIP = '';
let dbPodIP = '';
let clientIPs = new Map<string, string>();

function pod(ns: string, name: string, image: string, extra: { labels?: string; spec?: string } = {}): string {
  return `apiVersion: v1
kind: Pod
metadata:
  name: ${name}
  namespace: ${ns}
  labels: {${extra.labels ?? `role: client`}}
spec:
  terminationGracePeriodSeconds: 1
  ${extra.spec ?? ''}
  containers:
  - name: c
    image: ${image}
    imagePullPolicy: Never
`;
}

function manifests(): string {
  const glibc = env.IMAGE_CLIENT_GLIBC;
  const musl = env.IMAGE_CLIENT_MUSL;
  return [
    `apiVersion: v1\nkind: Namespace\nmetadata: {name: ${nsA}}`,
    `apiVersion: v1\nkind: Namespace\nmetadata: {name: ${nsB}}`,
    `apiVersion: v1
kind: Service
metadata: {name: web, namespace: ${nsA}}
spec:
  selector: {app: web}
  ports: [{name: http, port: 80, protocol: TCP}]`,
    `apiVersion: v1
kind: Service
metadata: {name: db, namespace: ${nsA}}
spec:
  clusterIP: None
  selector: {app: db}
  ports: [{name: pg, port: 5432, protocol: TCP}]`,
    `apiVersion: v1
kind: Service
metadata: {name: ext, namespace: ${nsA}}
spec:
  type: ExternalName
  externalName: web.${nsA}.svc.cluster.local`,
    pod(nsA, 'web-0', glibc, { labels: 'app: web' }),
    pod(nsA, 'db-0', glibc, { labels: 'app: db', spec: 'hostname: db-0\n  subdomain: db' }),
    pod(nsA, 'glibc', glibc),
    pod(nsA, 'musl', musl),
    pod(nsB, 'glibc', glibc),
    pod(nsB, 'musl', musl),
  ].join('\n---\n');
}

beforeAll(async () => {
  env = clusterEnv();
  await kubectl(env, ['apply', '-f', '-'], manifests());
  for (const ns of [nsA, nsB]) {
    await waitFor(
      `pods in ${ns} Ready`,
      async () => {
        await kubectl(env, ['-n', ns, 'wait', '--for=condition=Ready', 'pod', '--all', '--timeout=5s']);
        return true;
      },
      { timeoutMs: 240_000, everyMs: 1000, retry: anyError },
    );
  }
  webIP = (await kubectl(env, ['-n', nsA, 'get', 'svc', 'web', '-o', 'jsonpath={.spec.clusterIP}'])).trim();
  dbPodIP = (await kubectl(env, ['-n', nsA, 'get', 'pod', 'db-0', '-o', 'jsonpath={.status.podIP}'])).trim();
  clientIPs = new Map();
  for (const ns of [nsA, nsB])
    for (const c of ['glibc', 'musl'])
      clientIPs.set(
        `${ns}/${c}`,
        (await kubectl(env, ['-n', ns, 'get', 'pod', c, '-o', 'jsonpath={.status.podIP}'])).trim(),
      );
  // The headless Service's endpoints (the pod's hostname record) are published asynchronously.
  await waitFor(
    'the db endpoint in the API',
    async () =>
      (
        await kubectl(env, [
          '-n',
          nsA,
          'get',
          'endpointslices',
          '-l',
          'kubernetes.io/service-name=db',
          '-o',
          'jsonpath={..addresses}',
        ])
      ).includes(dbPodIP),
    { timeoutMs: 60_000, everyMs: 500, retry: anyError },
  );
}, 300_000);

afterAll(async () => {
  if (env) await kubectl(env, ['delete', 'namespace', nsA, nsB, '--wait=false']).catch(() => undefined);
});

/** `resolve hosts NAME` in a client pod: the addresses its C library returned (empty: not found). */
async function hosts(ns: string, client: string, name: string): Promise<string[]> {
  const r = await execIn(env, ns, client, ['resolve', 'hosts', name]);
  if (r.code === 2) return [];
  if (r.code !== 0) throw new Error(`resolve hosts ${name} in ${ns}/${client}: exit ${r.code}: ${r.stderr}${r.stdout}`);
  return [
    ...new Set(
      r.stdout
        .trim()
        .split('\n')
        .map((l) => l.split(' ')[0] ?? ''),
    ),
  ];
}

/** dig in a client pod, through the pod's /etc/resolv.conf: status and answer lines. */
async function dig(ns: string, client: string, args: string[]): Promise<{ status: string; answers: string[] }> {
  const r = await execIn(env, ns, client, ['dig', '+time=3', '+tries=2', '+noall', '+comments', '+answer', ...args]);
  if (r.code !== 0) throw new Error(`dig ${args.join(' ')} in ${ns}/${client}: exit ${r.code}: ${r.stdout}${r.stderr}`);
  const status = /status: (\w+)/.exec(r.stdout)?.[1] ?? 'none';
  const answers = r.stdout
    .split('\n')
    .filter((l) => l !== '' && !l.startsWith(';'))
    .map((l) =>
      l
        .split(/\s+/)
        .filter((_, i) => i !== 1)
        .join(' '),
    );
  return { status, answers };
}

const clients = [
  { ns: () => nsA, label: 'namespace A', client: 'glibc' },
  { ns: () => nsA, label: 'namespace A', client: 'musl' },
  { ns: () => nsB, label: 'namespace B', client: 'glibc' },
  { ns: () => nsB, label: 'namespace B', client: 'musl' },
];

describe.each(clients)('a $client pod in $label', ({ ns, client }) => {
  /** The Service name as an application in this pod writes it: short in A, name.namespace in B. */
  const local = (svc: string): string => (ns() === nsA ? svc : `${svc}.${nsA}`);

  it('has the resolv.conf kubelet writes for ClusterFirst pods', async () => {
    const r = await execIn(env, ns(), client, ['cat', '/etc/resolv.conf']);
    expect(r.stdout).toContain(`nameserver ${env.DNS_IP}`);
    expect(r.stdout).toContain(`search ${ns()}.svc.cluster.local svc.cluster.local cluster.local`);
    expect(r.stdout).toContain('options ndots:5');
  });

  it('resolves a ClusterIP Service by its search-path name and by its FQDN', async () => {
    expect(await hosts(ns(), client, local('web'))).toEqual([webIP]);
    expect(await hosts(ns(), client, `web.${nsA}.svc.cluster.local`)).toEqual([webIP]);
  });

  it('resolves a headless Service to its endpoint, and the pod by hostname.subdomain', async () => {
    expect(await hosts(ns(), client, local('db'))).toEqual([dbPodIP]);
    expect(await hosts(ns(), client, local('db-0.db'))).toEqual([dbPodIP]);
  });

  it('follows an ExternalName Service to its target', async () => {
    expect(await hosts(ns(), client, local('ext'))).toEqual([webIP]);
    const r = await dig(ns(), client, [`ext.${nsA}.svc.cluster.local.`, 'A']);
    expect(r.status).toBe('NOERROR');
    expect(r.answers).toContain(`ext.${nsA}.svc.cluster.local. IN CNAME web.${nsA}.svc.cluster.local.`);
    expect(r.answers).toContain(`web.${nsA}.svc.cluster.local. IN A ${webIP}`);
  });

  it('answers pod A records (pods insecure)', async () => {
    const ip = clientIPs.get(`${ns()}/${client}`) ?? '';
    expect(ip).not.toBe('');
    expect(await hosts(ns(), client, `${ip.replaceAll('.', '-')}.${ns()}.pod.cluster.local`)).toEqual([ip]);
  });

  it('answers PTR for a ClusterIP and for a headless endpoint', async () => {
    expect((await execIn(env, ns(), client, ['resolve', 'ptr', webIP])).stdout.trim()).toBe(
      `web.${nsA}.svc.cluster.local`,
    );
    expect((await execIn(env, ns(), client, ['resolve', 'ptr', dbPodIP])).stdout.trim()).toBe(
      `db-0.db.${nsA}.svc.cluster.local`,
    );
  });

  it('answers SRV for named ports through the search path', async () => {
    const web = await dig(ns(), client, ['+search', `_http._tcp.${local('web')}`, 'SRV']);
    expect(web.status).toBe('NOERROR');
    expect(web.answers).toEqual([
      `_http._tcp.web.${nsA}.svc.cluster.local. IN SRV 0 100 80 web.${nsA}.svc.cluster.local.`,
    ]);
    const db = await dig(ns(), client, ['+search', `_pg._tcp.${local('db')}`, 'SRV']);
    expect(db.answers).toEqual([
      `_pg._tcp.db.${nsA}.svc.cluster.local. IN SRV 0 100 5432 db-0.db.${nsA}.svc.cluster.local.`,
    ]);
  });

  it('says NXDOMAIN for a missing name, and the C library finds nothing', async () => {
    const r = await dig(ns(), client, [`missing.${nsA}.svc.cluster.local.`, 'A']);
    expect(r.status).toBe('NXDOMAIN');
    // Absolute: the search list would end in "missing." itself, which goes to the (unreachable)
    // upstream and fails by timeout rather than by NXDOMAIN.
    expect(await hosts(ns(), client, `missing.${nsA}.svc.cluster.local.`)).toEqual([]);
  });

  it('says NODATA (NOERROR, no answer) for AAAA of an IPv4 Service', async () => {
    const r = await dig(ns(), client, [`web.${nsA}.svc.cluster.local.`, 'AAAA']);
    expect(r.status).toBe('NOERROR');
    expect(r.answers).toEqual([]);
  });
});

describe.each(clients.filter((c) => c.client === 'glibc'))('getent in a glibc pod in $label', ({ ns }) => {
  it('applies the search list as getaddrinfo does', async () => {
    const name = ns() === nsA ? 'web' : `web.${nsA}`;
    const r = await execIn(env, ns(), 'glibc', ['getent', 'hosts', name]);
    expect(r.code).toBe(0);
    expect(r.stdout.trim().split(/\s+/).slice(0, 2)).toEqual([webIP, `web.${nsA}.svc.cluster.local`]);
  });
});

describe('the node', () => {
  it('reaches the kube-dns Service from its network namespace: dig @10.96.0.10', async () => {
    const r = await inNetns(env, [
      'dig',
      '+time=3',
      '+tries=2',
      '+short',
      `@${env.DNS_IP}`,
      `web.${nsA}.svc.cluster.local`,
      'A',
    ]);
    expect(r.code).toBe(0);
    expect(r.stdout.trim()).toBe(webIP);
  });
});
