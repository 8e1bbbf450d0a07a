/**
 * NodeLocal DNSCache on the real node (issue 26): the chart's `nodeLocalDNS` DaemonSet runs
 * `clusterdns node-cache` (the node-cache image: clusterdns's plus ip/nft/iptables) with
 * hostNetwork, holds 169.254.20.10 on its own interface and installs NOTRACK/ACCEPT rules for it.
 *
 * With `npm run cluster:up -- --node-local` the DaemonSet is there and kubelet's clusterDNS is
 * 169.254.20.10, so the client pods here are ClusterFirst pods. On the default cluster this file
 * turns the chart's nodeLocalDNS on itself (helm upgrade --reuse-values) and gives its client pods
 * the resolv.conf such a kubelet writes (`dnsPolicy: None`, nameserver 169.254.20.10, the same
 * search path and ndots:5): kubelet's clusterDNS is one setting for every pod of the node, and
 * the other files check pods that use kube-dns.
 *
 * Checked: the address and the nft table on the node; glibc and musl pods resolving every record
 * kind through 169.254.20.10 with the answers kube-dns gives (TTLs aside: the node's cache counts
 * them down); cache hits in the node cache's metrics; no conntrack entry for 169.254.20.10:53
 * while pods query it (NOTRACK), while the Service's queries are tracked; a DaemonSet upgrade
 * under 300 queries per second with 0 failed queries (the new pod binds with SO_REUSEPORT beside
 * the old one, which hands its sockets over and leaves rules and address in place:
 * docs/node-cache.md); the node-cache process's RSS; the time of a cache hit on the node against
 * the same query through the kube-dns Service (issue 26's target: p50 at most half; measured from a
 * pod with dnslat, reported, not asserted: a timed assertion would fail on a loaded machine for
 * reasons of its own); and removing the DaemonSet removes the
 * address, interface and rules from the node, with none ever in the machine's own namespace.
 * Numbers go to stdout and dist/cluster-node-local.json.
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { anyError, waitFor } from '../helpers/wait.js';
import { type ClusterEnv, REPO_ROOT, clusterEnv, execIn, inNetns, kubectl, run } from './cluster.js';
import { type Counts, LoadClients, countWindow } from './load.js';
import { type Latency, parseDnslat } from './latency.js';
import { type DigResult, digIn, resolveHosts } from './lookup.js';

const SYSTEM = 'kube-system';
const DS = 'daemonset/node-local-dns';
const TABLE = 'clusterdns-nodelocaldns';
const RATE = 300;
/** Queries per server for the latency comparison (each server asked in turn, one at a time). */
const LATENCY_ROUNDS = 2000;
const suffix = randomBytes(3).toString('hex');
const ns = `nl-${suffix}`;
let env: ClusterEnv;
let local = '';
let webIP = '';
let dbPodIP = '';
const numbers: Record<string, unknown> = {};

function helm(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return run(env.HELM, args, { timeoutMs: 180_000 });
}

/** Turn the chart's nodeLocalDNS on or off in the clusterdns release, keeping every other value. */
async function nodeLocal(enabled: boolean): Promise<void> {
  const at = env.IMAGE_NODE_CACHE.lastIndexOf(':');
  const r = await helm([
    'upgrade',
    'clusterdns',
    path.join(REPO_ROOT, 'charts/clusterdns'),
    '-n',
    SYSTEM,
    '--reuse-values',
    '--set',
    `nodeLocalDNS.enabled=${enabled}`,
    '--set',
    `nodeLocalDNS.image.repository=${env.IMAGE_NODE_CACHE.slice(0, at)}`,
    '--set',
    `nodeLocalDNS.image.tag=${env.IMAGE_NODE_CACHE.slice(at + 1)}`,
  ]);
  if (r.code !== 0) throw new Error(`helm upgrade (nodeLocalDNS.enabled=${enabled}): ${r.stderr}${r.stdout}`);
}

interface DsPod {
  readonly name: string;
  readonly ready: boolean;
  readonly terminating: boolean;
}
async function dsPods(): Promise<DsPod[]> {
  const out = await kubectl(env, [
    '-n',
    SYSTEM,
    'get',
    'pods',
    '-l',
    'k8s-app=node-local-dns',
    '-o',
    'jsonpath={range .items[*]}{.metadata.name} {.status.conditions[?(@.type=="Ready")].status} {.metadata.deletionTimestamp}{"\\n"}{end}',
  ]);
  return out
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => {
      const [name = '', ready = '', deletion = ''] = l.split(' ');
      return { name, ready: ready === 'True', terminating: deletion !== '' };
    });
}

/** The node-cache DaemonSet at one ready pod, none terminating, answering on 169.254.20.10. */
async function dsSettled(what: string): Promise<string> {
  let state = '';
  return waitFor(
    () => `node-local-dns settled after ${what}: one ready pod, none terminating (now: ${state})`,
    async () => {
      const ps = await dsPods();
      state = ps.map((p) => `${p.name}${p.ready ? '' : ' unready'}${p.terminating ? ' terminating' : ''}`).join(', ');
      if (ps.length !== 1 || !ps[0]?.ready || ps[0].terminating) return null;
      const r = await inNetns(env, [
        'dig',
        '+time=2',
        '+tries=1',
        '+short',
        `@${local}`,
        'kubernetes.default.svc.cluster.local',
      ]);
      return r.stdout.trim() === '10.96.0.1' ? ps[0].name : null;
    },
    { timeoutMs: 300_000, everyMs: 1000, retry: anyError },
  );
}

/** Conntrack entries in the node's namespace for PROTO to DST port 53. */
async function tracked(proto: 'udp' | 'tcp', dst: string): Promise<string[]> {
  const r = await inNetns(env, ['conntrack', '-L', '-p', proto, '--orig-dst', dst, '--orig-port-dst', '53']);
  if (r.code !== 0) throw new Error(`conntrack -L -p ${proto} --orig-dst ${dst}: exit ${r.code}: ${r.stderr}`);
  return r.stdout.split('\n').filter((l) => l.startsWith(proto));
}

/** Deletes the node's conntrack entries to `dst`:53 (UDP and TCP); none to delete is fine. */
async function forgetTracked(dst: string): Promise<void> {
  for (const proto of ['udp', 'tcp'] as const) {
    const r = await inNetns(env, ['conntrack', '-D', '-p', proto, '--orig-dst', dst, '--orig-port-dst', '53']);
    // conntrack exits 1 when it found nothing to delete ("0 flow entries have been deleted").
    if (r.code !== 0 && !/flow entries have been deleted/.test(r.stderr))
      throw new Error(`conntrack -D -p ${proto} --orig-dst ${dst}: exit ${r.code}: ${r.stderr}`);
  }
}

/** Sum of a metric's samples on the node cache's Corefile metrics (prometheus :9253). */
async function metricSum(name: string): Promise<number> {
  const r = await inNetns(env, ['curl', '-sf', '--max-time', '5', 'http://127.0.0.1:9253/metrics']);
  if (r.code !== 0) throw new Error(`curl http://127.0.0.1:9253/metrics in the node's namespace: exit ${r.code}`);
  let sum = 0;
  for (const l of r.stdout.split('\n'))
    if (l.startsWith(`${name}{`) || l.startsWith(`${name} `)) sum += Number(l.split(' ').pop());
  return sum;
}

/** The node-cache processes of the node (pid, VmRSS in KiB), found by their command line. */
async function nodeCacheProcesses(): Promise<{ pid: number; rssKiB: number }[]> {
  const r = await run('ip', ['netns', 'pids', env.NETNS]);
  const out: { pid: number; rssKiB: number }[] = [];
  for (const pid of r.stdout.split('\n').filter((l) => l !== '')) {
    let cmdline = '';
    let status = '';
    try {
      cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ');
      status = readFileSync(`/proc/${pid}/status`, 'utf8');
    } catch {
      continue; // gone meanwhile
    }
    if (!/\bnode-cache -localip\b/.test(cmdline)) continue;
    const rss = /^VmRSS:\s+(\d+) kB/m.exec(status);
    out.push({ pid: Number(pid), rssKiB: Number(rss?.[1] ?? 0) });
  }
  return out;
}

function clientPod(name: string, image: string): string {
  const dns = env.NODE_LOCAL
    ? ''
    : `  dnsPolicy: None
  dnsConfig:
    nameservers: [${local}]
    searches: [${ns}.svc.cluster.local, svc.cluster.local, cluster.local]
    options: [{name: ndots, value: "5"}]
`;
  return `apiVersion: v1
kind: Pod
metadata: {name: ${name}, namespace: ${ns}, labels: {role: client}}
spec:
  terminationGracePeriodSeconds: 1
${dns}  containers:
  - name: c
    image: ${image}
    imagePullPolicy: Never
`;
}

beforeAll(async () => {
  env = clusterEnv();
  local = env.NODE_LOCAL_IP;
  if (!env.NODE_LOCAL) await nodeLocal(true);
  await kubectl(env, ['-n', SYSTEM, 'rollout', 'status', DS, '--timeout=300s']);
  await dsSettled('the install');
  await kubectl(
    env,
    ['apply', '-f', '-'],
    [
      `apiVersion: v1\nkind: Namespace\nmetadata: {name: ${ns}}`,
      `apiVersion: v1\nkind: Service\nmetadata: {name: web, namespace: ${ns}}\nspec:\n  selector: {app: web}\n  ports: [{name: http, port: 80, protocol: TCP}]`,
      `apiVersion: v1\nkind: Service\nmetadata: {name: db, namespace: ${ns}}\nspec:\n  clusterIP: None\n  selector: {app: db}\n  ports: [{name: pg, port: 5432, protocol: TCP}]`,
      `apiVersion: v1\nkind: Service\nmetadata: {name: ext, namespace: ${ns}}\nspec:\n  type: ExternalName\n  externalName: web.${ns}.svc.cluster.local`,
      `apiVersion: v1\nkind: Pod\nmetadata: {name: db-0, namespace: ${ns}, labels: {app: db}}\nspec:\n  hostname: db-0\n  subdomain: db\n  terminationGracePeriodSeconds: 1\n  containers:\n  - {name: c, image: ${env.IMAGE_CLIENT_GLIBC}, imagePullPolicy: Never}`,
      clientPod('glibc', env.IMAGE_CLIENT_GLIBC),
      clientPod('musl', env.IMAGE_CLIENT_MUSL),
    ].join('\n---\n'),
  );
  await waitFor(
    `pods in ${ns} Ready`,
    async () => {
      await kubectl(env, ['-n', ns, 'wait', '--for=condition=Ready', 'pod', '--all', '--timeout=5s']);
      return true;
    },
    { timeoutMs: 240_000, everyMs: 1000, retry: anyError },
  );
  webIP = (await kubectl(env, ['-n', ns, 'get', 'svc', 'web', '-o', 'jsonpath={.spec.clusterIP}'])).trim();
  dbPodIP = (await kubectl(env, ['-n', ns, 'get', 'pod', 'db-0', '-o', 'jsonpath={.status.podIP}'])).trim();
  await waitFor(
    'the db endpoint in the API',
    async () =>
      (
        await kubectl(env, [
          '-n',
          ns,
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
}, 600_000);

afterAll(async () => {
  mkdirSync(path.join(REPO_ROOT, 'dist'), { recursive: true });
  writeFileSync(path.join(REPO_ROOT, 'dist/cluster-node-local.json'), `${JSON.stringify(numbers, null, 2)}\n`);
  process.stdout.write(`\nNodeLocal DNSCache on the real node: ${JSON.stringify(numbers)}\n`);
  if (!env) return;
  await kubectl(env, ['delete', 'namespace', ns, '--wait=false']).catch(() => undefined);
  // The cluster as this file found it: the DaemonSet back on with --node-local, off otherwise.
  if (env.NODE_LOCAL) await nodeLocal(true);
}, 300_000);

describe('NodeLocal DNSCache (clusterdns node-cache) on the real node', () => {
  it('holds 169.254.20.10 on its interface and its nft table on the node', async () => {
    const addr = await inNetns(env, ['ip', '-o', 'addr', 'show', 'to', `${local}/32`]);
    expect(addr.stdout, `ip addr show to ${local}/32`).toMatch(
      new RegExp(`^\\d+: nodelocaldns +inet ${local.replaceAll('.', '\\.')}/32`),
    );
    const table = await inNetns(env, ['nft', 'list', 'table', 'inet', TABLE]);
    expect(table.code, table.stderr).toBe(0);
    for (const proto of ['udp', 'tcp']) {
      expect(table.stdout).toContain(`ip daddr ${local} ${proto} dport 53 notrack`);
      expect(table.stdout).toContain(`ip saddr ${local} ${proto} sport 53 notrack`);
      expect(table.stdout).toContain(`ip daddr ${local} ${proto} dport 53 accept`);
    }
  });

  describe.each(['glibc', 'musl'])('a %s pod whose nameserver is 169.254.20.10', (client) => {
    const same = async (args: string[]): Promise<DigResult> => {
      const [viaNode, viaService] = await Promise.all([
        digIn(env, ns, client, args),
        digIn(env, ns, client, [`@${env.DNS_IP}`, ...args]),
      ]);
      expect(
        { status: viaNode.status, answers: [...viaNode.answers].sort() },
        `dig ${args.join(' ')} through ${local} and @${env.DNS_IP}`,
      ).toEqual({ status: viaService.status, answers: [...viaService.answers].sort() });
      return viaNode;
    };

    it('has kubelet’s resolv.conf with the node-local address', async () => {
      const r = await execIn(env, ns, client, ['cat', '/etc/resolv.conf']);
      expect(r.stdout).toContain(`nameserver ${local}`);
      expect(r.stdout).toContain(`search ${ns}.svc.cluster.local svc.cluster.local cluster.local`);
      expect(r.stdout).toContain('options ndots:5');
    });

    it('resolves every record kind through the node cache, as kube-dns answers', async () => {
      expect(await resolveHosts(env, ns, client, 'web')).toEqual([webIP]);
      expect(await resolveHosts(env, ns, client, 'db')).toEqual([dbPodIP]);
      expect(await resolveHosts(env, ns, client, 'db-0.db')).toEqual([dbPodIP]);
      expect(await resolveHosts(env, ns, client, 'ext')).toEqual([webIP]);
      const podIP = (await kubectl(env, ['-n', ns, 'get', 'pod', client, '-o', 'jsonpath={.status.podIP}'])).trim();
      const podName = `${podIP.replaceAll('.', '-')}.${ns}.pod.cluster.local`;
      expect(await resolveHosts(env, ns, client, podName)).toEqual([podIP]);
      expect((await execIn(env, ns, client, ['resolve', 'ptr', webIP])).stdout.trim()).toBe(
        `web.${ns}.svc.cluster.local`,
      );
      expect((await same([`web.${ns}.svc.cluster.local.`, 'A'])).answers).toEqual([
        `web.${ns}.svc.cluster.local. IN A ${webIP}`,
      ]);
      expect((await same([`ext.${ns}.svc.cluster.local.`, 'A'])).answers).toContain(
        `ext.${ns}.svc.cluster.local. IN CNAME web.${ns}.svc.cluster.local.`,
      );
      expect((await same(['-x', webIP])).answers).toHaveLength(1);
      expect((await same([`_http._tcp.web.${ns}.svc.cluster.local.`, 'SRV'])).answers).toEqual([
        `_http._tcp.web.${ns}.svc.cluster.local. IN SRV 0 100 80 web.${ns}.svc.cluster.local.`,
      ]);
      expect((await same([`_pg._tcp.db.${ns}.svc.cluster.local.`, 'SRV'])).answers).toEqual([
        `_pg._tcp.db.${ns}.svc.cluster.local. IN SRV 0 100 5432 db-0.db.${ns}.svc.cluster.local.`,
      ]);
      expect((await same([`missing.${ns}.svc.cluster.local.`, 'A'])).status).toBe('NXDOMAIN');
      const nodata = await same([`web.${ns}.svc.cluster.local.`, 'AAAA']);
      expect(nodata.status).toBe('NOERROR');
      expect(nodata.answers).toEqual([]);
    });

    it('answers a repeated lookup from its cache (coredns_cache_hits_total)', async () => {
      const name = `web.${ns}.svc.cluster.local.`;
      await digIn(env, ns, client, [name, 'A']);
      const before = await metricSum('coredns_cache_hits_total');
      const again = await digIn(env, ns, client, [name, 'A']);
      expect(again.answers).toEqual([`${name} IN A ${webIP}`]);
      const after = await metricSum('coredns_cache_hits_total');
      expect(after, 'coredns_cache_hits_total after a repeated lookup').toBeGreaterThan(before);
      numbers[`cacheHitsAfter_${client}`] = after;
    });
  });

  it('keeps 169.254.20.10:53 out of conntrack (NOTRACK) while the Service’s queries are tracked', async () => {
    // Entries from before the rules were in place (the pods' first lookups, while the DaemonSet was
    // still starting) live on for their timeout: remove them, then ask again.
    await forgetTracked(local);
    await digIn(env, ns, 'glibc', [`web.${ns}.svc.cluster.local.`, 'A']);
    await digIn(env, ns, 'glibc', [`@${env.DNS_IP}`, `web.${ns}.svc.cluster.local.`, 'A']);
    expect(await tracked('udp', local), `conntrack entries for udp ${local}:53`).toEqual([]);
    expect(await tracked('tcp', local), `conntrack entries for tcp ${local}:53`).toEqual([]);
    // The control: the same pod's query to the kube-dns Service is in the table.
    expect((await tracked('udp', env.DNS_IP)).length, `conntrack entries for udp ${env.DNS_IP}:53`).toBeGreaterThan(0);
  });

  it('answers a cache hit on the node: p50 and p99 against the same query through the Service, reported', async () => {
    // The same name from the same pod, asked of the node cache and of the kube-dns Service in turn
    // (the node cache is off that path: only 169.254.20.10 is its address here), one query at a
    // time, each from a new socket as stub resolvers send them; both caches are warm (dnslat's
    // first, unmeasured query, and `cache 30` in both Corefiles), so both answers are cache hits
    // and the difference is the path: the node's own address, NOTRACK, against kube-proxy's DNAT
    // to a pod. Issue 26's target is p50 on the node at most 0.5 × the Service's; reported, since
    // a timed assertion would fail on a loaded machine for reasons of its own.
    const name = 'kubernetes.default.svc.cluster.local.';
    const r = await execIn(env, ns, 'glibc', ['dnslat', String(LATENCY_ROUNDS), name, local, env.DNS_IP]);
    expect(r.code, `dnslat: ${r.stderr}`).toBe(0);
    const lat = parseDnslat(r.stdout);
    expect(
      lat.map((l) => l.server),
      r.stdout,
    ).toEqual([local, env.DNS_IP]);
    for (const l of lat) {
      expect(l.rounds, `${l.server}: rounds`).toBe(LATENCY_ROUNDS);
      expect(l.failed, `${l.server}: failed queries (${r.stdout})`).toBe(0);
      expect(l.answered, `${l.server}: answered`).toBe(LATENCY_ROUNDS);
    }
    const [node, service] = lat as [Latency, Latency];
    const ratio = (a?: number, b?: number): number | null =>
      a !== undefined && b !== undefined && b > 0 ? Math.round((a / b) * 100) / 100 : null;
    numbers.cacheHitLatency = {
      name,
      rounds: LATENCY_ROUNDS,
      nodeLocal: node,
      service,
      p50Ratio: ratio(node.p50Us, service.p50Us),
      p99Ratio: ratio(node.p99Us, service.p99Us),
    };
    process.stderr.write(
      `[node-local] cache hit ${name}: node ${local} p50 ${node.p50Us} µs p99 ${node.p99Us} µs; Service ${env.DNS_IP} p50 ${service.p50Us} µs p99 ${service.p99Us} µs; p50 ratio ${ratio(node.p50Us, service.p50Us)}\n`,
    );
  });

  it('is upgraded under 300 queries per second with 0 failed queries, none tracked', async () => {
    const load = new LoadClients(env, ns, 'load-nodelocal', local, RATE, 'kubernetes.default.svc.cluster.local');
    await load.start();
    const nowSec = (): number => Math.floor(Date.now() / 1000);
    const steadyFrom = nowSec();
    await load.settledThrough(nowSec() + 3, 120_000);
    const during = await tracked('udp', local);
    const oldPod = await dsSettled('the start');
    const from = nowSec();
    await kubectl(env, ['-n', SYSTEM, 'rollout', 'restart', DS]);
    await kubectl(env, ['-n', SYSTEM, 'rollout', 'status', DS, '--timeout=300s']);
    const newPod = await dsSettled('the upgrade');
    expect(newPod).not.toBe(oldPod);
    const to = nowSec() + 1;
    const logs = await load.settledThrough(to, 120_000);
    await load.stop();
    const steady: Counts = countWindow(logs, steadyFrom, from);
    const upgrade: Counts = countWindow(logs, from, to);
    numbers.upgrade = { steady, upgrade, conntrackEntriesDuringLoad: during.length };
    process.stderr.write(
      `[node-local] upgrade ${oldPod} → ${newPod}: ${upgrade.failed} failed / ${upgrade.sent} sent (${JSON.stringify(upgrade.reasons)}); steady before: ${steady.failed} / ${steady.sent}\n`,
    );
    expect(during, `conntrack entries for udp ${local}:53 under load`).toEqual([]);
    expect(steady.sent).toBeGreaterThan(0);
    expect(upgrade.sent).toBeGreaterThan(0);
    expect(upgrade.answered + upgrade.failed).toBe(upgrade.sent);
    expect(upgrade.failed, `the upgrade: ${JSON.stringify(upgrade)}`).toBe(0);
    expect(steady.failed, `before the upgrade: ${JSON.stringify(steady)}`).toBe(0);
    // The rules stayed: the new pod adopted them.
    expect((await inNetns(env, ['nft', 'list', 'table', 'inet', TABLE])).code).toBe(0);
  }, 900_000);

  it('reports the node-cache process’s RSS', async () => {
    const procs = await nodeCacheProcesses();
    expect(procs.length, 'node-cache processes on the node').toBe(1);
    const rssMiB = (procs[0]?.rssKiB ?? 0) / 1024;
    numbers.rssMiB = Math.round(rssMiB * 10) / 10;
    process.stderr.write(`[node-local] node-cache RSS ${rssMiB.toFixed(1)} MiB\n`);
    expect(rssMiB).toBeGreaterThan(0);
  });

  it('removing the DaemonSet removes its address, interface and rules from the node; the machine never had them', async () => {
    await nodeLocal(false);
    await waitFor('the node-local-dns pods gone', async () => (await dsPods()).length === 0, {
      timeoutMs: 300_000,
      everyMs: 1000,
      retry: anyError,
    });
    expect((await inNetns(env, ['ip', '-o', 'addr', 'show', 'to', `${local}/32`])).stdout).toBe('');
    expect((await inNetns(env, ['ip', 'link', 'show', 'nodelocaldns'])).code, 'the nodelocaldns link').not.toBe(0);
    expect((await inNetns(env, ['nft', 'list', 'tables'])).stdout).not.toContain(TABLE);
    // The machine's own namespace (this process's): never touched.
    expect((await run('ip', ['-o', 'addr', 'show', 'to', `${local}/32`])).stdout).toBe('');
    expect((await run('nft', ['list', 'tables'])).stdout).not.toContain(TABLE);
  }, 600_000);
});
