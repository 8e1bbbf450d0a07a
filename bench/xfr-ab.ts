/**
 * A/B of the kubernetes zone transfer's own cost, in one process: this checkout's
 * `kubernetesTransfer` and another built checkout's, each over an index of `--services` Services
 * (one in ten headless with three endpoints, two named ports each), consumed as the transfer
 * plugin does (every record copied into a 63,000-byte message). Rounds alternate (order flipped
 * each round); per transfer it reports CPU time (`process.cpuUsage`) and the young- and
 * old-generation collections that ran (PerformanceObserver `gc`): the garbage a transfer leaves
 * is what delays other clients' queries while transfers run (docs/benchmarks.md, issue 27).
 *
 *   npm run build && npm run build:bench && node --max-semi-space-size=2 dist/bench/xfr-ab.js --baseline /work/base --rounds 8 --n 20
 */
import { type PerformanceEntry, PerformanceObserver } from 'node:perf_hooks';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { baseConfig } from '../plugins/kubernetes/testutil.js';

interface PortLike {
  name: string;
  port: number;
  protocol: string;
}
interface StoreLike {
  upsert(kind: string, rec: object): void;
}
/** A batch as either build yields it: record objects, or this build's wire batch. */
type BatchLike =
  | readonly object[]
  | { readonly count: number; readonly buffer: Buffer; start(i: number): number; end(i: number): number };
interface BuildModules {
  readonly Store: new () => StoreLike;
  readonly Resolver: new (cfg: object) => object;
  readonly kubernetesTransfer: (
    index: StoreLike,
    resolver: object,
    zone: string,
    serial: number,
  ) => Iterable<BatchLike>;
  readonly writeRecord: (rr: object, buf: Buffer, off: number) => number;
  readonly packAddresses: (addrs: readonly string[]) => unknown;
}

const MESSAGE_RECORD_BYTES = 63000;

async function load(root: string): Promise<BuildModules> {
  const mod = async (p: string): Promise<Record<string, unknown>> =>
    (await import(pathToFileURL(join(root, 'dist', p)).href)) as Record<string, unknown>;
  const store = await mod('plugins/kubernetes/store.js');
  const resolve_ = await mod('plugins/kubernetes/resolve.js');
  const xfr = await mod('plugins/kubernetes/xfr.js');
  const rr = await mod('src/dns/rrwrite.js');
  const addrs = await mod('plugins/kubernetes/addresses.js');
  return {
    Store: store.Store as BuildModules['Store'],
    Resolver: resolve_.Resolver as BuildModules['Resolver'],
    kubernetesTransfer: xfr.kubernetesTransfer as BuildModules['kubernetesTransfer'],
    writeRecord: rr.writeRecord as BuildModules['writeRecord'],
    packAddresses: addrs.packAddresses as BuildModules['packAddresses'],
  };
}

function fill(m: BuildModules, services: number): StoreLike {
  const st = new m.Store();
  const ports: PortLike[] = [
    { name: 'http', port: 80, protocol: 'TCP' },
    { name: 'metrics', port: 9090, protocol: 'TCP' },
  ];
  for (let n = 0; n < 20; n++) st.upsert('namespaces', { name: `ns-${n}`, resourceVersion: '1' });
  for (let i = 0; i < services; i++) {
    const namespace = `ns-${i % 20}`;
    const name = `svc-${i}`;
    const headless = i % 10 === 0;
    st.upsert('services', {
      name,
      namespace,
      resourceVersion: '1',
      type: 'ClusterIP',
      clusterIPs: headless ? [] : [`10.96.${(i >> 8) & 255}.${i & 255}`],
      headless,
      externalName: '',
      ports,
      externalIPs: [],
    });
    if (!headless) continue;
    st.upsert('endpointslices', {
      name: `${name}-x`,
      namespace,
      resourceVersion: '1',
      service: name,
      addressType: 'IPv4',
      ports: ports.slice(0, 1),
      addresses: m.packAddresses([0, 1, 2].map((k) => `10.244.${(i >> 8) & 255}.${(i + k) & 255}`)),
      hostnames: null,
      podNames: null,
      zones: null,
      triggerTime: null,
    });
  }
  return st;
}

interface Side {
  readonly label: string;
  readonly transfer: () => number;
}

function side(label: string, m: BuildModules, services: number): Side {
  const store = fill(m, services);
  // The kubernetes tests' handler configuration, with the one zone transferred.
  const resolver = new m.Resolver(baseConfig({ zones: ['cluster.local.'] }));
  const msg = Buffer.allocUnsafe(70_000);
  const scratch = Buffer.allocUnsafe(70_000);
  const put = (src: Buffer, from: number, len: number, off: number): number => {
    const at = off + len > MESSAGE_RECORD_BYTES ? 0 : off;
    for (let k = 0; k < len; k++) msg[at + k] = src[from + k]!;
    return at + len;
  };
  return {
    label,
    transfer: () => {
      let records = 0;
      let off = 0;
      for (const batch of m.kubernetesTransfer(store, resolver, 'cluster.local.', 0)) {
        if (Array.isArray(batch)) {
          for (const rr of batch as readonly object[]) off = put(scratch, 0, m.writeRecord(rr, scratch, 0), off);
          records += batch.length;
        } else {
          const b = batch as Exclude<BatchLike, readonly object[]>;
          for (let i = 0; i < b.count; i++) off = put(b.buffer, b.start(i), b.end(i) - b.start(i), off);
          records += b.count;
        }
      }
      return records;
    },
  };
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      baseline: { type: 'string' },
      rounds: { type: 'string', default: '8' },
      n: { type: 'string', default: '20' },
      services: { type: 'string', default: '10000' },
    },
  });
  if (!values.baseline) throw new Error('--baseline DIR (a built checkout) is required');
  const rounds = Number(values.rounds);
  const n = Number(values.n);
  const services = Number(values.services);
  const here = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
  const sides = [
    side('this build', await load(here), services),
    side(`baseline ${values.baseline}`, await load(resolve(values.baseline)), services),
  ];
  let minor = 0;
  let major = 0;
  const obs = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) {
      // NODE_PERFORMANCE_GC_MINOR is 1; every other kind collects the old generation too.
      if ((e as PerformanceEntry & { detail?: { kind?: number } }).detail?.kind === 1) minor++;
      else major++;
    }
  });
  obs.observe({ entryTypes: ['gc'] });
  const settle = (): Promise<void> => new Promise((r) => setTimeout(r, 20));
  const results = new Map<string, { cpuMs: number[]; minor: number[]; major: number[]; records: number }>();
  for (const s of sides) {
    s.transfer();
    results.set(s.label, { cpuMs: [], minor: [], major: [], records: s.transfer() });
  }
  for (let r = 0; r < rounds; r++) {
    for (const s of r % 2 === 0 ? sides : [...sides].reverse()) {
      await settle();
      minor = 0;
      major = 0;
      const t0 = process.cpuUsage();
      for (let i = 0; i < n; i++) s.transfer();
      const t = process.cpuUsage(t0);
      await settle();
      const res = results.get(s.label)!;
      res.cpuMs.push((t.user + t.system) / 1000 / n);
      res.minor.push(minor / n);
      res.major.push(major / n);
    }
  }
  obs.disconnect();
  console.log(
    `kubernetes zone transfer, ${services} Services, ${rounds} rounds of ${n} transfers (medians per transfer)`,
  );
  console.log('| build | records | CPU ms | young-generation GCs | full GCs |');
  console.log('|---|---:|---:|---:|---:|');
  for (const s of sides) {
    const res = results.get(s.label)!;
    console.log(
      `| ${s.label} | ${res.records} | ${median(res.cpuMs).toFixed(1)} | ${median(res.minor).toFixed(2)} | ${median(res.major).toFixed(2)} |`,
    );
  }
  const [a, b] = sides.map((s) => results.get(s.label)!);
  const ratios = a!.cpuMs.map((x, i) => b!.cpuMs[i]! / x);
  console.log(
    `CPU per transfer, baseline / this build: median ${median(ratios).toFixed(2)} (rounds ${ratios.map((x) => x.toFixed(2)).join(', ')})`,
  );
}

await main();
