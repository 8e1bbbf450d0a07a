/**
 * What a plugin rule that never matches costs on the kubernetes answer path: kubeadm's Corefile,
 * and the same Corefile plus extra lines (by default a `rewrite` regex rule no cluster name
 * matches), served side by side against the sandbox's synthetic cluster and loaded in alternation
 * with the k8s-service query mix of `npm run bench` (80 % A / 20 % AAAA on random services, 10 %
 * NXDOMAIN). Each round loads one server, then the other (the order flips every round); the
 * medians of the saturation runs are compared.
 *
 * Usage: npm run build:bench && node dist/bench/plugin-overhead.js [--duration 5] [--rounds 5]
 *        [--services 10000] [--extra 'rewrite name regex (.*)\.corp\.example\.com {1}.default.svc.cluster.local answer auto']
 *        (--extra may be repeated; each is one line of the block)
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensureDnsperf, runLoad, SERVER_NODE_ARGS, startNode, type Proc } from './lib.js';

const here = dirname(fileURLToPath(import.meta.url));
const root = resolve(here, '../..');

interface Args {
  duration: number;
  rounds: number;
  services: number;
  extra: string[];
}

const DEFAULT_EXTRA = ['rewrite name regex (.*)\\.corp\\.example\\.com {1}.default.svc.cluster.local answer auto'];

function parseArgs(argv: string[]): Args {
  const a: Args = { duration: 5, rounds: 5, services: 10_000, extra: [] };
  for (let i = 0; i < argv.length; i += 2) {
    const k = argv[i];
    const v = argv[i + 1];
    if (v === undefined) break;
    if (k === '--duration') a.duration = Number(v);
    else if (k === '--rounds') a.rounds = Number(v);
    else if (k === '--services') a.services = Number(v);
    else if (k === '--extra') a.extra.push(v);
  }
  if (a.extra.length === 0) a.extra = DEFAULT_EXTRA;
  return a;
}

let nextPort = 20000 + Math.floor(Math.random() * 20000);
const port = (): number => nextPort++;

/** kubeadm's Corefile on loopback ports (forward to a closed loopback port: no query leaves the host). */
function kubeadm(dns: number, api: string, extra: readonly string[]): string {
  return `.:${dns} {
    errors
    health 127.0.0.1:${port()} {
       lameduck 5s
    }
    ready 127.0.0.1:${port()}
${extra.map((l) => `    ${l}\n`).join('')}    kubernetes cluster.local in-addr.arpa ip6.arpa {
       endpoint ${api}
       pods insecure
       fallthrough in-addr.arpa ip6.arpa
       ttl 30
    }
    prometheus 127.0.0.1:${port()}
    forward . 127.0.0.1:${port()} {
       max_concurrent 1000
    }
    cache 30 {
       disable success cluster.local
       disable denial cluster.local
    }
    loop
    reload
    loadbalance
}
`;
}

async function startServer(corefile: string, dns: number): Promise<Proc> {
  const dir = mkdtempSync(join(tmpdir(), 'clusterdns-overhead-'));
  const path = join(dir, 'Corefile');
  writeFileSync(path, corefile);
  return startNode(join(root, 'bin/clusterdns'), ['-conf', path, '-dns.port', String(dns)], /^clusterdns-\d/, 0, {}, SERVER_NODE_ARGS);
}

async function services(url: string): Promise<{ name: string; ns: string }[]> {
  const res = await fetch(`${url}/api/v1/services`);
  const body = (await res.json()) as { items: { metadata: { name: string; namespace: string } }[] };
  return body.items.map((s) => ({ name: s.metadata.name, ns: s.metadata.namespace }));
}

function shuffle<T>(a: T[]): T[] {
  for (let i = a.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [a[i], a[j]] = [a[j]!, a[i]!];
  }
  return a;
}

const median = (xs: number[]): number => [...xs].sort((x, y) => x - y)[xs.length >> 1]!;

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2));
  ensureDnsperf();
  const sandbox = await startNode(join(root, 'dist/sandbox/main.js'), ['--port', '0', '--synthetic-services', String(args.services), '--synthetic-pods', String(args.services * 3)], /listening on (http:\/\/\S+)/, 1);
  const url = /listening on (http:\/\/\S+)/.exec(sandbox.output.join('\n'))![1]!;
  const svcs = await services(url);
  const q: string[] = [];
  for (const sv of shuffle([...svcs]).slice(0, 20000)) q.push(`${sv.name}.${sv.ns}.svc.cluster.local ${Math.random() < 0.8 ? 'A' : 'AAAA'}`);
  const n = q.length;
  for (let i = 0; i < n / 9; i++) q.push(`missing-${i}.${svcs[i % svcs.length]!.ns}.svc.cluster.local A`);
  shuffle(q);

  const pPlain = port();
  const pExtra = port();
  const plain = await startServer(kubeadm(pPlain, url, []), pPlain);
  const extra = await startServer(kubeadm(pExtra, url, args.extra), pExtra);
  const targets = [{ name: 'kubeadm', port: pPlain, runs: [] as number[] }, { name: 'kubeadm + extra', port: pExtra, runs: [] as number[] }];
  try {
    for (const t of targets) await runLoad({ port: t.port, queries: q, proto: 'udp', durationS: 2 }); // warm-up: sync, JIT
    for (let r = 0; r < args.rounds; r++) {
      const order = r % 2 === 0 ? targets : [...targets].reverse();
      for (const t of order) t.runs.push((await runLoad({ port: t.port, queries: q, proto: 'udp', durationS: args.duration })).qps);
    }
  } finally {
    await plain.stop();
    await extra.stop();
    await sandbox.stop();
  }
  const [a, b] = targets.map((t) => median(t.runs)) as [number, number];
  process.stdout.write(`extra lines: ${args.extra.join(' | ')}\n`);
  for (const t of targets) process.stdout.write(`${t.name.padEnd(16)} udp runs ${t.runs.map((x) => Math.round(x)).join(' ')} qps, median ${Math.round(median(t.runs))}\n`);
  process.stdout.write(`ratio (with extra / without): ${(b / a).toFixed(3)}\n`);
}

void main().catch((e: unknown) => {
  process.stderr.write(`${(e as Error).stack ?? String(e)}\n`);
  process.exit(1);
});
