/**
 * Pods' own resolvers against clusterdns on a real node (scripts/cluster/up.sh): the chart's
 * Deployment behind the kube-dns Service at 10.96.0.10, kube-proxy's iptables rules in between,
 * and client pods whose /etc/resolv.conf kubelet wrote (search path, ndots:5).
 *
 * Services and pods live in namespace A; client pods (glibc and musl) run in A and in B, so each
 * name is looked up both through the own namespace's search domain and across namespaces. Every
 * expected value comes from the API (ClusterIPs, pod IPs), none is written down here.
 *
 * Beside each client runs its reference twin (`glibc-ref`, `musl-ref`): the same image in the same
 * namespace, its resolv.conf the same search path and options but the nameserver of the real
 * CoreDNS 1.15.0 (release coredns-ref, 10.96.0.11, same chart and Corefile; `dnsPolicy: None`,
 * since kubelet writes one clusterDNS for every pod). Every lookup is made from both and the
 * answers compared: the C library's result, and for dig the rcode, the header flags, the answer
 * and authority sections. Normalised, because they legitimately differ between two servers: the
 * TTLs (each server's `cache 30` counts down from when it cached the record, so two servers
 * asked a second apart give different remaining TTLs; both stay within the Corefile's 30 s), the
 * SOA serial (the kubernetes plugin's is the time of its last observed change, which each server
 * sees at its own moment) and the order of records (`loadbalance` shuffles them).
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor, anyError } from '../helpers/wait.js';
import { type ClusterEnv, clusterEnv, execIn, inNetns, kubectl } from './cluster.js';
import { type DigResult, digIn, resolveHosts } from './lookup.js';

const suffix = randomBytes(3).toString('hex');
const nsA = `dns-a-${suffix}`;
const nsB = `dns-b-${suffix}`;
let env: ClusterEnv;
let webIP = '';
let dbPodIP = '';
let clientIPs = new Map<string, string>();

/** The spec lines of a reference client: kubelet's resolv.conf, with CoreDNS's Service as nameserver. */
function refDNS(ns: string): string {
  return [
    'dnsPolicy: None',
    'dnsConfig:',
    `  nameservers: [${env.COREDNS_IP}]`,
    `  searches: [${ns}.svc.cluster.local, svc.cluster.local, cluster.local]`,
    '  options: [{name: ndots, value: "5"}]',
  ].join('\n  ');
}

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
    ...[nsA, nsB].flatMap((ns) => [
      pod(ns, 'glibc-ref', glibc, { spec: refDNS(ns) }),
      pod(ns, 'musl-ref', musl, { spec: refDNS(ns) }),
    ]),
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

/** The C library's addresses for a name in a client pod (lookup.ts). */
const hosts = (ns: string, client: string, name: string): Promise<string[]> => resolveHosts(env, ns, client, name);
/** dig in a client pod through its resolv.conf (lookup.ts). */
const dig = (ns: string, client: string, args: string[]): Promise<DigResult> => digIn(env, ns, client, args);

/** The reference twin of a client pod: same image and namespace, CoreDNS 1.15.0 as nameserver. */
const ref = (client: string): string => `${client}-ref`;

/** dig from a client and from its reference twin: both results, for the same assertions. */
async function digBoth(ns: string, client: string, args: string[]): Promise<DigResult> {
  const [ours, theirs] = await Promise.all([dig(ns, client, args), dig(ns, ref(client), args)]);
  expect(
    { ...ours, answers: [...ours.answers].sort(), authority: [...ours.authority].sort() },
    `dig ${args.join(' ')} from ${ns}/${client} (clusterdns) and ${ref(client)} (CoreDNS 1.15.0)`,
  ).toEqual({ ...theirs, answers: [...theirs.answers].sort(), authority: [...theirs.authority].sort() });
  return ours;
}

/** `resolve hosts NAME` from a client and its reference twin: equal sets, clusterdns's returned. */
async function hostsBoth(ns: string, client: string, name: string): Promise<string[]> {
  const [ours, theirs] = await Promise.all([hosts(ns, client, name), hosts(ns, ref(client), name)]);
  expect([...ours].sort(), `resolve hosts ${name} from ${ns}/${client} and ${ref(client)}`).toEqual([...theirs].sort());
  return ours;
}

/** `resolve ptr ADDR` from a client and its reference twin: the same name, clusterdns's returned. */
async function ptrBoth(ns: string, client: string, addr: string): Promise<string> {
  const [ours, theirs] = await Promise.all(
    [client, ref(client)].map(async (c) => (await execIn(env, ns, c, ['resolve', 'ptr', addr])).stdout.trim()),
  );
  expect(ours, `resolve ptr ${addr} from ${ns}/${client} and ${ref(client)}`).toBe(theirs);
  return ours ?? '';
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

  it('has the resolv.conf kubelet writes for ClusterFirst pods (its twin: the same, CoreDNS as nameserver)', async () => {
    const r = await execIn(env, ns(), client, ['cat', '/etc/resolv.conf']);
    expect(r.stdout).toContain(`nameserver ${env.POD_DNS_IP}`);
    expect(r.stdout).toContain(`search ${ns()}.svc.cluster.local svc.cluster.local cluster.local`);
    expect(r.stdout).toContain('options ndots:5');
    const twin = await execIn(env, ns(), ref(client), ['cat', '/etc/resolv.conf']);
    expect(twin.stdout).toContain(`nameserver ${env.COREDNS_IP}`);
    expect(twin.stdout).toContain(`search ${ns()}.svc.cluster.local svc.cluster.local cluster.local`);
    expect(twin.stdout).toContain('options ndots:5');
  });

  it('resolves a ClusterIP Service by its search-path name and by its FQDN', async () => {
    expect(await hostsBoth(ns(), client, local('web'))).toEqual([webIP]);
    expect(await hostsBoth(ns(), client, `web.${nsA}.svc.cluster.local`)).toEqual([webIP]);
    const r = await digBoth(ns(), client, [`web.${nsA}.svc.cluster.local.`, 'A']);
    expect(r.answers).toEqual([`web.${nsA}.svc.cluster.local. IN A ${webIP}`]);
  });

  it('resolves a headless Service to its endpoint, and the pod by hostname.subdomain', async () => {
    expect(await hostsBoth(ns(), client, local('db'))).toEqual([dbPodIP]);
    expect(await hostsBoth(ns(), client, local('db-0.db'))).toEqual([dbPodIP]);
    expect((await digBoth(ns(), client, [`db.${nsA}.svc.cluster.local.`, 'A'])).answers).toEqual([
      `db.${nsA}.svc.cluster.local. IN A ${dbPodIP}`,
    ]);
    expect((await digBoth(ns(), client, [`db-0.db.${nsA}.svc.cluster.local.`, 'A'])).answers).toEqual([
      `db-0.db.${nsA}.svc.cluster.local. IN A ${dbPodIP}`,
    ]);
  });

  it('follows an ExternalName Service to its target', async () => {
    expect(await hostsBoth(ns(), client, local('ext'))).toEqual([webIP]);
    const r = await digBoth(ns(), client, [`ext.${nsA}.svc.cluster.local.`, 'A']);
    expect(r.status).toBe('NOERROR');
    expect(r.answers).toContain(`ext.${nsA}.svc.cluster.local. IN CNAME web.${nsA}.svc.cluster.local.`);
    expect(r.answers).toContain(`web.${nsA}.svc.cluster.local. IN A ${webIP}`);
  });

  it('answers pod A records (pods insecure)', async () => {
    const ip = clientIPs.get(`${ns()}/${client}`) ?? '';
    expect(ip).not.toBe('');
    const name = `${ip.replaceAll('.', '-')}.${ns()}.pod.cluster.local`;
    expect(await hostsBoth(ns(), client, name)).toEqual([ip]);
    expect((await digBoth(ns(), client, [`${name}.`, 'A'])).answers).toEqual([`${name}. IN A ${ip}`]);
  });

  it('answers PTR for a ClusterIP and for a headless endpoint', async () => {
    expect(await ptrBoth(ns(), client, webIP)).toBe(`web.${nsA}.svc.cluster.local`);
    expect(await ptrBoth(ns(), client, dbPodIP)).toBe(`db-0.db.${nsA}.svc.cluster.local`);
    const arpa = `${webIP.split('.').reverse().join('.')}.in-addr.arpa.`;
    expect((await digBoth(ns(), client, ['-x', webIP])).answers).toEqual([
      `${arpa} IN PTR web.${nsA}.svc.cluster.local.`,
    ]);
  });

  it('answers SRV for named ports through the search path', async () => {
    const web = await digBoth(ns(), client, ['+search', `_http._tcp.${local('web')}`, 'SRV']);
    expect(web.status).toBe('NOERROR');
    expect(web.answers).toEqual([
      `_http._tcp.web.${nsA}.svc.cluster.local. IN SRV 0 100 80 web.${nsA}.svc.cluster.local.`,
    ]);
    const db = await digBoth(ns(), client, ['+search', `_pg._tcp.${local('db')}`, 'SRV']);
    expect(db.answers).toEqual([
      `_pg._tcp.db.${nsA}.svc.cluster.local. IN SRV 0 100 5432 db-0.db.${nsA}.svc.cluster.local.`,
    ]);
  });

  it('says NXDOMAIN for a missing name, and the C library finds nothing', async () => {
    const r = await digBoth(ns(), client, [`missing.${nsA}.svc.cluster.local.`, 'A']);
    expect(r.status).toBe('NXDOMAIN');
    expect(r.authority).toEqual([
      'cluster.local. IN SOA ns.dns.cluster.local. hostmaster.cluster.local. SERIAL 7200 1800 86400 30',
    ]);
    // Absolute: the search list would end in "missing." itself, which goes to the (unreachable)
    // upstream and fails by timeout rather than by NXDOMAIN.
    expect(await hostsBoth(ns(), client, `missing.${nsA}.svc.cluster.local.`)).toEqual([]);
  });

  it('says NODATA (NOERROR, no answer) for AAAA of an IPv4 Service', async () => {
    const r = await digBoth(ns(), client, [`web.${nsA}.svc.cluster.local.`, 'AAAA']);
    expect(r.status).toBe('NOERROR');
    expect(r.answers).toEqual([]);
    expect(r.authority).toHaveLength(1);
  });
});

describe.each(clients.filter((c) => c.client === 'glibc'))('getent in a glibc pod in $label', ({ ns }) => {
  it('applies the search list as getaddrinfo does', async () => {
    const name = ns() === nsA ? 'web' : `web.${nsA}`;
    const r = await execIn(env, ns(), 'glibc', ['getent', 'hosts', name]);
    expect(r.code).toBe(0);
    expect(r.stdout.trim().split(/\s+/).slice(0, 2)).toEqual([webIP, `web.${nsA}.svc.cluster.local`]);
    const twin = await execIn(env, ns(), ref('glibc'), ['getent', 'hosts', name]);
    expect(twin.stdout, 'getent from the twin (CoreDNS 1.15.0)').toBe(r.stdout);
  });
});

describe('the node', () => {
  it('reaches the kube-dns Service from its network namespace: dig @10.96.0.10, as CoreDNS at 10.96.0.11 answers', async () => {
    const ask = (server: string) =>
      inNetns(env, ['dig', '+time=3', '+tries=2', '+short', `@${server}`, `web.${nsA}.svc.cluster.local`, 'A']);
    const [r, twin] = await Promise.all([ask(env.DNS_IP), ask(env.COREDNS_IP)]);
    expect(r.code).toBe(0);
    expect(r.stdout.trim()).toBe(webIP);
    expect(twin.stdout).toBe(r.stdout);
  });
});
