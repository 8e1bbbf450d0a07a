/**
 * `npm run bench:scale`: a synthetic cluster of 10,000 services and 150,000 pods with their
 * EndpointSlices in the sandbox API server; clusterdns with the kubernetes plugin against it.
 * Reports: time until /ready (from process start and from the first API request), RSS after sync
 * (and over an empty-cluster baseline, per object), QPS for service A queries, and the delay
 * between a watch event and the first answer that reflects it, under a churn of endpoint changes.
 *
 * Usage: npm run bench:scale [-- --services 10000 --pods 150000 --churn 100 --churn-seconds 10 --workers 1]
 *
 * `--control-plane`: instead of the sandbox, a real etcd + kube-apiserver + kube-controller-manager
 * (test/helpers/controlplane.ts; build with scripts/control-plane/build.sh), populated through the
 * API (default 10,000 services and 30,000 pods, `--concurrency 32` requests in flight; the
 * EndpointSlices are written by the real controller) and read by clusterdns with the chart's
 * RBAC through a kubeconfig. Reports how long population took, ready time and RSS (no churn).
 */
import * as dgram from 'node:dgram';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startSandbox, type Sandbox } from '../sandbox/server.js';
import { ControlPlane } from '../test/helpers/controlplane.js';
import {
  encodeSimpleQuery,
  machineDescription,
  SERVER_NODE_ARGS,
  percentile,
  pssMiB,
  rssMiB,
  runLoad,
  startNode,
  writeResults,
  type Proc,
} from './lib.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

function arg(name: string, def: number): number {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : def;
}

const CONTROL_PLANE = process.argv.includes('--control-plane');
const SERVICES = arg('services', 10_000);
const PODS = arg('pods', CONTROL_PLANE ? 30_000 : 150_000);
const CONCURRENCY = arg('concurrency', 32);
const CHURN = arg('churn', 100);
const CHURN_SECONDS = arg('churn-seconds', 10);
/** `-workers N`: RSS is then the sum over the primary and its workers (each keeps its own index). */
const WORKERS = arg('workers', 1);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
let nextPort = 30000 + Math.floor(Math.random() * 20000);

async function startServer(
  url: string,
  source = `endpoint ${url}`,
): Promise<{ proc: Proc; port: number; readyPort: number; t0: number }> {
  const port = nextPort++;
  const readyPort = nextPort++;
  const dir = mkdtempSync(join(tmpdir(), 'clusterdns-scale-'));
  const corefile = `cluster.local:${port} in-addr.arpa:${port} {\n  ready 127.0.0.1:${readyPort}\n  kubernetes cluster.local in-addr.arpa {\n    ${source}\n    startup_timeout 120s\n  }\n}\n`;
  writeFileSync(join(dir, 'Corefile'), corefile);
  const t0 = performance.now();
  const args = ['-conf', join(dir, 'Corefile'), '-dns.port', String(port)];
  if (WORKERS > 1) args.push('-workers', String(WORKERS));
  const proc = await startNode(
    join(root, 'bin/clusterdns'),
    args,
    /^clusterdns-\d/,
    WORKERS > 1 ? null : 0,
    {},
    SERVER_NODE_ARGS,
  );
  return { proc, port, readyPort, t0 };
}

async function waitReady(readyPort: number): Promise<number> {
  for (;;) {
    try {
      const r = await fetch(`http://127.0.0.1:${readyPort}/ready`);
      if (r.status === 200) return performance.now();
    } catch {
      /* not listening yet */
    }
    await sleep(10);
  }
}

function query(sock: dgram.Socket, port: number, name: string, id: number): Promise<Buffer> {
  const buf = encodeSimpleQuery(name, 1, id);
  return new Promise((resolvePromise) => {
    const onMsg = (m: Buffer) => {
      if (m.readUInt16BE(0) !== id) return;
      sock.off('message', onMsg);
      resolvePromise(m);
    };
    sock.on('message', onMsg);
    sock.send(buf, port, '127.0.0.1');
  });
}

function hasAddress(reply: Buffer, ip: string): boolean {
  const bytes = Buffer.from(ip.split('.').map(Number));
  return reply.includes(bytes);
}

interface Slice {
  metadata: { name: string; namespace: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  endpoints?: { addresses: string[] }[];
  [k: string]: unknown;
}

async function measureChurn(sandbox: Sandbox, port: number): Promise<number[]> {
  const res = await fetch(`${sandbox.url}/apis/discovery.k8s.io/v1/endpointslices?limit=2000`);
  const list = (await res.json()) as { items: Slice[] };
  const svcRes = await fetch(`${sandbox.url}/api/v1/services?limit=5000`);
  const svcs = (await svcRes.json()) as {
    items: { metadata: { name: string; namespace: string }; spec: { clusterIP?: string } }[];
  };
  const headless = new Set(
    svcs.items.filter((s) => s.spec.clusterIP === 'None').map((s) => `${s.metadata.namespace}/${s.metadata.name}`),
  );
  const slices = list.items.filter(
    (s) =>
      headless.has(`${s.metadata.namespace}/${s.metadata.labels?.['kubernetes.io/service-name']}`) &&
      (s.endpoints?.length ?? 0) > 0,
  );
  if (slices.length === 0) throw new Error('no headless EndpointSlices in the synthetic cluster');
  const sock = dgram.createSocket('udp4');
  await new Promise<void>((r) => sock.bind(0, '127.0.0.1', () => r()));
  const latencies: number[] = [];
  let id = 1;
  const checks: Promise<void>[] = [];
  const total = CHURN * CHURN_SECONDS;
  const gap = 1000 / CHURN;
  const start = performance.now();
  for (let i = 0; i < total; i++) {
    const due = start + i * gap;
    const wait = due - performance.now();
    if (wait > 0) await sleep(wait);
    const s = slices[i % slices.length]!;
    const ip = `10.${200 + ((i >> 16) & 31)}.${(i >> 8) & 255}.${i & 255}`;
    // List items carry no kind (as from the real API); apply() needs it.
    const changed: Slice = { ...structuredClone(s), kind: 'EndpointSlice', apiVersion: 'discovery.k8s.io/v1' };
    changed.endpoints![0]!.addresses = [ip];
    changed.metadata.annotations = {
      ...changed.metadata.annotations,
      'endpoints.kubernetes.io/last-change-trigger-time': new Date().toISOString(),
    };
    const svc = s.metadata.labels!['kubernetes.io/service-name']!;
    const name = `${svc}.${s.metadata.namespace}.svc.cluster.local`;
    const t = performance.now();
    sandbox.apply(changed);
    slices[i % slices.length] = changed;
    // Sample every fifth change: poll the name until the new address shows up.
    if (i % 5 === 0) {
      checks.push(
        (async () => {
          for (let tries = 0; tries < 100_000; tries++) {
            const reply = await query(sock, port, name, (id = (id + 1) & 0xffff));
            if (hasAddress(reply, ip)) {
              latencies.push(performance.now() - t);
              return;
            }
          }
        })(),
      );
    }
  }
  await Promise.all(checks);
  sock.close();
  return latencies.sort((a, b) => a - b);
}

async function main(): Promise<void> {
  process.stdout.write(`generating ${SERVICES} services, ${PODS} pods...\n`);
  const empty = await startSandbox({ objects: [] });
  const base = await startServer(empty.url);
  await waitReady(base.readyPort);
  await sleep(1000);
  const baseline = rssMiB(base.proc.pid).current;
  await base.proc.stop();
  await empty.close();

  const sandbox = await startSandbox({
    synthetic: { services: SERVICES, pods: PODS, namespaces: 50 },
    historyLimit: 100_000,
  });
  // Watch for the first API request from before the process starts (it blocks its own start-up
  // until synced, so the request happens before startServer returns).
  const before = sandbox.requests.length;
  const firstRequest = (async () => {
    while (sandbox.requests.length === before) await sleep(1);
    return performance.now();
  })();
  const server = await startServer(sandbox.url);
  const tReady = await waitReady(server.readyPort);
  const tApi = await firstRequest;
  await sleep(2000);
  const rss = rssMiB(server.proc.pid);
  const pss = pssMiB(server.proc.pid);
  const objects = SERVICES + PODS + (await countSlices(sandbox.url));

  const svcRes = await fetch(`${sandbox.url}/api/v1/services?limit=20000`);
  const svcs = ((await svcRes.json()) as { items: { metadata: { name: string; namespace: string } }[] }).items;
  const queries = svcs.map((s) => `${s.metadata.name}.${s.metadata.namespace}.svc.cluster.local A`);
  await runLoad({ port: server.port, queries, proto: 'udp', durationS: 1 });
  const load = await runLoad({ port: server.port, queries, proto: 'udp', durationS: 5 });

  process.stdout.write(
    `ready after ${((tReady - server.t0) / 1000).toFixed(2)}s from start, ${((tReady - tApi) / 1000).toFixed(2)}s from the first API request; RSS ${rss.current.toFixed(1)} MiB (baseline ${baseline.toFixed(1)}); ${Math.round(load.qps)} service A qps\n`,
  );
  process.stdout.write(`measuring watch event -> answer under ${CHURN} changes/s for ${CHURN_SECONDS}s...\n`);
  const lat = await measureChurn(sandbox, server.port);
  const rssAfter = rssMiB(server.proc.pid);
  await server.proc.stop();
  await sandbox.close();

  const result = {
    machine: machineDescription(),
    workers: WORKERS,
    services: SERVICES,
    pods: PODS,
    objects,
    readySecondsFromStart: Number(((tReady - server.t0) / 1000).toFixed(2)),
    readySecondsFromFirstApiRequest: Number(((tReady - tApi) / 1000).toFixed(2)),
    baselineRssMiB: Number(baseline.toFixed(1)),
    rssAfterSyncMiB: Number(rss.current.toFixed(1)),
    rssAfterChurnMiB: Number(rssAfter.current.toFixed(1)),
    /** With workers, RSS counts shared pages once per process; PSS counts them once. */
    pssAfterSyncMiB: Number(pss.toFixed(1)),
    peakRssMiB: Number(rssAfter.peak.toFixed(1)),
    bytesPerObject: Math.round(((rss.current - baseline) * 1024 * 1024) / objects),
    corednsSizingRuleMiB: Math.round((PODS + SERVICES) / 1000 + 54),
    serviceAQps: Math.round(load.qps),
    eventToAnswerMs: {
      samples: lat.length,
      p50: Number(percentile(lat, 50).toFixed(2)),
      p99: Number(percentile(lat, 99).toFixed(2)),
      max: Number((lat[lat.length - 1] ?? NaN).toFixed(2)),
    },
  };
  const stamp = new Date().toISOString().replace(/[:.]/g, '-');
  process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
  writeResults({ [`scale-${stamp}.json`]: `${JSON.stringify(result, null, 2)}\n` });
}

async function countSlices(url: string): Promise<number> {
  let n = 0;
  let cont = '';
  for (;;) {
    const r = await fetch(
      `${url}/apis/discovery.k8s.io/v1/endpointslices?limit=5000${cont ? `&continue=${encodeURIComponent(cont)}` : ''}`,
    );
    const body = (await r.json()) as { items: unknown[]; metadata: { continue?: string } };
    n += body.items.length;
    if (!body.metadata.continue) return n;
    cont = body.metadata.continue;
  }
}

/** Run `fn` over `items` with at most `limit` in flight. */
async function pool<T>(items: readonly T[], limit: number, fn: (item: T) => Promise<unknown>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (next < items.length) await fn(items[next++]!);
    }),
  );
}

/** EndpointSlices and their ready endpoints in the real API server (paged list). */
async function countEndpoints(cp: ControlPlane): Promise<{ slices: number; endpoints: number }> {
  let slices = 0;
  let endpoints = 0;
  let cont = '';
  for (;;) {
    const r = await cp.must<{
      items: { endpoints?: { conditions?: { ready?: boolean } }[] | null }[];
      metadata: { continue?: string };
    }>(
      'GET',
      `/apis/discovery.k8s.io/v1/endpointslices?limit=2000${cont ? `&continue=${encodeURIComponent(cont)}` : ''}`,
    );
    slices += r.items.length;
    for (const s of r.items) endpoints += (s.endpoints ?? []).filter((e) => e.conditions?.ready === true).length;
    if (!r.metadata.continue) return { slices, endpoints };
    cont = r.metadata.continue;
  }
}

/** cp.create/patch, retried while the API server is overloaded (429, 5xx, timeouts); a create
 * that answers 409 AlreadyExists after a retry had succeeded. */
async function retrying(what: string, fn: () => Promise<unknown>): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await fn();
      return;
    } catch (e) {
      const msg = (e as Error).message;
      if (attempt > 1 && /HTTP 409/.test(msg)) return;
      if (attempt >= 20 || !/HTTP (429|5\d\d)|timed out|ECONNRESET|socket hang up/.test(msg))
        throw new Error(`${what}: ${msg}`);
      await sleep(200 * attempt);
    }
  }
}

async function mainControlPlane(): Promise<void> {
  const NAMESPACES = 50;
  const NODES = 10;
  process.stdout.write(`starting the control plane (test/helpers/controlplane.ts)...\n`);
  const cp = await ControlPlane.start({
    apiServerArgs: ['--max-requests-inflight=1000', '--max-mutating-requests-inflight=500'],
    // client-go's default 20 qps would make the EndpointSlice controller take minutes.
    controllerManagerArgs: ['--kube-api-qps=1000', '--kube-api-burst=2000', '--concurrent-service-endpoint-syncs=20'],
  });
  // Ctrl-C: stop the control plane by PID before exiting.
  for (const sig of ['SIGINT', 'SIGTERM'] as const)
    process.once(sig, () => void cp.stop().finally(() => process.exit(130)));
  try {
    const source = `kubeconfig ${cp.corednsKubeconfig}`;
    const base = await startServer(cp.server, source);
    await waitReady(base.readyPort);
    await sleep(1000);
    const baseline = rssMiB(base.proc.pid).current;
    await base.proc.stop();

    process.stdout.write(
      `populating ${SERVICES} services and ${PODS} pods through the API (${CONCURRENCY} in flight)...\n`,
    );
    const tPop = performance.now();
    const nss = Array.from({ length: NAMESPACES }, (_, i) => `ns-${i}`);
    await pool(nss, CONCURRENCY, (name) => cp.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name } }));
    await pool(
      Array.from({ length: NODES }, (_, i) => `node-${i}`),
      CONCURRENCY,
      (name) => cp.create({ apiVersion: 'v1', kind: 'Node', metadata: { name }, spec: {} }),
    );
    // Pods are refused until each namespace's default ServiceAccount exists.
    for (const ns of nss) {
      while ((await cp.api('GET', `/api/v1/namespaces/${ns}/serviceaccounts/default`)).status !== 200) await sleep(100);
    }
    let done = 0;
    const progress = setInterval(
      () =>
        process.stdout.write(`  ${done} objects written after ${((performance.now() - tPop) / 1000).toFixed(0)}s\n`),
      30_000,
    );
    await pool(
      Array.from({ length: SERVICES }, (_, i) => i),
      CONCURRENCY,
      (i) =>
        retrying(`service ${i}`, () =>
          cp
            .create({
              apiVersion: 'v1',
              kind: 'Service',
              metadata: { name: `svc-${i}`, namespace: nss[i % NAMESPACES] },
              spec: {
                ...(i % 10 === 0 ? { clusterIP: 'None' } : {}),
                selector: { app: `svc-${i}` },
                ports: [{ name: 'http', port: 80, targetPort: 8080 }],
              },
            })
            .then(() => done++),
        ),
    );
    const tServices = performance.now();
    const now = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
    await pool(
      Array.from({ length: PODS }, (_, i) => i),
      CONCURRENCY,
      async (i) => {
        const svc = i % SERVICES;
        const ns = nss[svc % NAMESPACES]!;
        const name = `pod-${i}`;
        const ip = `10.${64 + (i >> 16)}.${(i >> 8) & 255}.${i & 255}`;
        await retrying(`pod ${i}`, () =>
          cp.create({
            apiVersion: 'v1',
            kind: 'Pod',
            metadata: { name, namespace: ns, labels: { app: `svc-${svc}` } },
            spec: {
              nodeName: `node-${i % NODES}`,
              automountServiceAccountToken: false,
              containers: [{ name: 'c', image: 'registry.invalid/none:1' }],
            },
          }),
        );
        await retrying(`pod ${i} status`, () =>
          cp.patch(
            'v1',
            'Pod',
            ns,
            name,
            {
              status: {
                phase: 'Running',
                hostIP: '192.0.2.100',
                podIP: ip,
                podIPs: [{ ip }],
                conditions: [
                  { type: 'Ready', status: 'True', lastTransitionTime: now },
                  { type: 'ContainersReady', status: 'True', lastTransitionTime: now },
                ],
              },
            },
            'status',
          ),
        );
        done++;
      },
    );
    clearInterval(progress);
    const tPods = performance.now();
    // The controller writes one slice per selector service (empty at first): wait until every
    // pod is a ready endpoint in one.
    let slices = 0;
    let endpoints = 0;
    for (;;) {
      ({ slices, endpoints } = await countEndpoints(cp));
      if (endpoints >= PODS) break;
      await sleep(2000);
    }
    const tSlices = performance.now();
    const population = {
      servicesSeconds: Number(((tServices - tPop) / 1000).toFixed(1)),
      podsSeconds: Number(((tPods - tServices) / 1000).toFixed(1)),
      /** From the first write until every pod is a ready endpoint in a slice. */
      slicesWrittenSeconds: Number(((tSlices - tPop) / 1000).toFixed(1)),
      concurrency: CONCURRENCY,
    };
    process.stdout.write(`population: ${JSON.stringify(population)}\n`);

    const server = await startServer(cp.server, source);
    const tReady = await waitReady(server.readyPort);
    await sleep(2000);
    const rss = rssMiB(server.proc.pid);
    const pss = pssMiB(server.proc.pid);
    const svcList = await cp.must<{ items: { metadata: { name: string; namespace: string } }[] }>(
      'GET',
      '/api/v1/services?limit=20000',
    );
    const queries = svcList.items.map((s) => `${s.metadata.name}.${s.metadata.namespace}.svc.cluster.local A`);
    await runLoad({ port: server.port, queries, proto: 'udp', durationS: 1 });
    const load = await runLoad({ port: server.port, queries, proto: 'udp', durationS: 5 });
    const rssAfter = rssMiB(server.proc.pid);
    await server.proc.stop();
    const objects = SERVICES + PODS + slices;
    const result = {
      machine: machineDescription(),
      source:
        "control-plane: etcd 3.6.5, kube-apiserver/kube-controller-manager v1.35.4 on 127.0.0.1 (kubeconfig, the chart's ClusterRole)",
      services: SERVICES,
      pods: PODS,
      endpointSlices: slices,
      readyEndpoints: endpoints,
      objects,
      population,
      readySecondsFromStart: Number(((tReady - server.t0) / 1000).toFixed(2)),
      baselineRssMiB: Number(baseline.toFixed(1)),
      rssAfterSyncMiB: Number(rss.current.toFixed(1)),
      pssAfterSyncMiB: Number(pss.toFixed(1)),
      peakRssMiB: Number(rssAfter.peak.toFixed(1)),
      bytesPerObject: Math.round(((rss.current - baseline) * 1024 * 1024) / objects),
      serviceAQps: Math.round(load.qps),
    };
    const stamp = new Date().toISOString().replace(/[:.]/g, '-');
    process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
    writeResults({ [`scale-control-plane-${stamp}.json`]: `${JSON.stringify(result, null, 2)}\n` });
  } finally {
    await cp.stop();
  }
}

(CONTROL_PLANE ? mainControlPlane() : main()).catch((e: unknown) => {
  process.stderr.write(`${(e as Error).stack ?? String(e)}\n`);
  process.exit(1);
});
