/**
 * Benchmark plumbing: child processes, dnsperf runs (with a Node load generator as fallback),
 * CPU and peak-RSS readings from /proc, percentiles. Load goes to 127.0.0.1 only.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import * as dgram from 'node:dgram';
import * as net from 'node:net';
import { closeSync, mkdirSync, openSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, setPriority, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { qtypeFromName } from '../src/dns/constants.js';

export interface Proc {
  readonly proc: ChildProcess;
  readonly pid: number;
  readonly output: string[];
  stop(): Promise<void>;
}

const hasTaskset = spawnSync('sh', ['-c', 'command -v taskset']).status === 0 && cpus().length >= 2;

/** A sandbox API server serving a synthetic cluster (dist/sandbox/main.js), and its URL. */
export interface SyntheticSandbox {
  readonly proc: Proc;
  readonly url: string;
}

const SANDBOX_READY = /listening on (http:\/\/\S+)/;

/**
 * Start the sandbox with `services` synthetic Services and `pods` pods, on CPU `cpu` (null: not
 * pinned); with `kubeconfig`, it writes a kubeconfig for its URL there.
 */
export async function startSyntheticSandbox(
  services: number,
  pods: number,
  cpu: number | null,
  kubeconfig?: string,
): Promise<SyntheticSandbox> {
  const args = ['--port', '0', '--synthetic-services', String(services), '--synthetic-pods', String(pods)];
  if (kubeconfig !== undefined) args.push('--kubeconfig', kubeconfig);
  const script = resolve(dirname(fileURLToPath(import.meta.url)), '../sandbox/main.js');
  const proc = await startNode(script, args, SANDBOX_READY, cpu);
  return { proc, url: SANDBOX_READY.exec(proc.output.join('\n'))![1]! };
}

/** Move a running process (all its threads) to one CPU, when taskset is available. */
export function pinTo(pid: number, cpu: number): void {
  if (hasTaskset) spawnSync('taskset', ['-a', '-p', '-c', String(cpu), String(pid)], { stdio: 'ignore' });
}

/**
 * Start `node script args` pinned to CPU `cpu` (when taskset exists, there are 2+ cores and
 * `cpu` is not null) and wait for a line matching `ready`.
 */
export async function startNode(
  script: string,
  args: string[],
  ready: RegExp,
  cpu: number | null = 0,
  env: NodeJS.ProcessEnv = {},
  nodeArgs: string[] = [],
): Promise<Proc> {
  const pin = hasTaskset && cpu !== null;
  const cmd = pin ? 'taskset' : process.execPath;
  const argv = pin
    ? ['-c', String(cpu), process.execPath, ...nodeArgs, script, ...args]
    : [...nodeArgs, script, ...args];
  return startProcess(script, cmd, argv, ready, { env });
}

/**
 * Start `cmd argv` and wait for a line matching `ready` on its output (at most `timeoutMs`);
 * `name` names it in the errors, which carry its output.
 */
export async function startProcess(
  name: string,
  cmd: string,
  argv: string[],
  ready: RegExp,
  o: { env?: NodeJS.ProcessEnv; timeoutMs?: number } = {},
): Promise<Proc> {
  const proc = spawn(cmd, argv, { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...o.env } });
  const output: string[] = [];
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`${name} did not start:\n${output.join('\n')}`)),
      o.timeoutMs ?? 120_000,
    );
    const onData = (c: Buffer) => {
      for (const l of c.toString().split('\n')) {
        if (!l) continue;
        if (output.length < 2000) output.push(l);
        if (ready.test(l)) {
          clearTimeout(timer);
          resolve();
        }
      }
    };
    proc.stdout!.on('data', onData);
    proc.stderr!.on('data', onData);
    proc.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${name} exited with ${code}:\n${output.join('\n')}`));
    });
  });
  return {
    proc,
    pid: proc.pid!,
    output,
    stop: () =>
      new Promise<void>((resolve) => {
        if (proc.exitCode !== null) return resolve();
        proc.removeAllListeners('exit');
        proc.on('exit', () => resolve());
        proc.kill('SIGKILL');
      }),
  };
}

/** A process and all its descendants (cluster workers), from /proc/PID/task/TID/children. */
export function processTree(pid: number): number[] {
  const out = [pid];
  for (let i = 0; i < out.length; i++) {
    try {
      for (const tid of readdirSync(`/proc/${out[i]}/task`)) {
        const kids = readFileSync(`/proc/${out[i]}/task/${tid}/children`, 'utf8').trim();
        if (kids) for (const k of kids.split(/\s+/)) out.push(Number(k));
      }
    } catch {
      /* process gone */
    }
  }
  return out;
}

/** CPU seconds (user+system) used so far by a process and its workers. */
export function cpuSeconds(pid: number): number {
  return processTree(pid).reduce((sum, p) => sum + cpuSecondsOf(p), 0);
}

function cpuSecondsOf(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const ticks = Number(fields[11]) + Number(fields[12]);
    return ticks / 100;
  } catch {
    return NaN;
  }
}

/**
 * Start measuring a new peak: VmHWM of a process and its workers is set back to the current RSS
 * (`5` to /proc/PID/clear_refs, Linux 4.0+), so a later {@link rssMiB} peak is the peak since
 * now. False when the kernel refused it (the peak then still counts from the start).
 */
export function resetPeakRss(pid: number): boolean {
  let ok = true;
  for (const p of processTree(pid)) {
    try {
      writeFileSync(`/proc/${p}/clear_refs`, '5');
    } catch {
      ok = false;
    }
  }
  return ok;
}

/** Peak and current resident set size in MiB (VmHWM, VmRSS), summed over a process and its workers. */
export function rssMiB(pid: number): { peak: number; current: number } {
  let peak = 0;
  let current = 0;
  for (const p of processTree(pid)) {
    const r = rssOf(p);
    if (!Number.isNaN(r.peak)) peak += r.peak;
    if (!Number.isNaN(r.current)) current += r.current;
  }
  return { peak, current };
}

/**
 * Proportional set size in MiB (`Pss` of /proc/PID/smaps_rollup), summed over a process and its
 * workers: pages shared between processes (the node binary, forked workers) count once in total,
 * where a sum of RSS counts them once per process.
 */
export function pssMiB(pid: number): number {
  let sum = 0;
  for (const p of processTree(pid)) {
    try {
      sum += Number(/^Pss:\s+(\d+)/m.exec(readFileSync(`/proc/${p}/smaps_rollup`, 'utf8'))?.[1] ?? 0) / 1024;
    } catch {
      /* process gone */
    }
  }
  return sum;
}

function rssOf(pid: number): { peak: number; current: number } {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (k: string) => Number(new RegExp(`${k}:\\s+(\\d+)`).exec(status)?.[1] ?? NaN);
    return { peak: kb('VmHWM') / 1024, current: kb('VmRSS') / 1024 };
  } catch {
    return { peak: NaN, current: NaN };
  }
}

export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return NaN;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i]!;
}

export interface LoadResult {
  qps: number;
  sent: number;
  completed: number;
  lost: number;
  /** Per-query latencies in seconds (only when asked for). */
  latencies: number[];
  rcodes: Record<string, number>;
}

export interface LoadOptions {
  port: number;
  /** Lines `name TYPE`. */
  queries: readonly string[];
  /** `dot`: DNS over TLS (dnsperf `-m dot`, no certificate check; dnsperf only). */
  proto: 'udp' | 'tcp' | 'dot';
  durationS: number;
  /** Rate limit (queries per second); unlimited when absent. */
  maxQps?: number;
  /** Collect per-query latencies. */
  latencies?: boolean;
  /** Queries outstanding at once. */
  outstanding?: number;
  /** Seconds before a query counts as lost (dnsperf `-t`; default 2). */
  timeoutS?: number;
  cpu?: number;
  /**
   * dnsperf clients (`-c`): sockets with their own source ports. The kernel spreads SO_REUSEPORT
   * sockets by flow, so one client would reach one query thread only; 1 when absent.
   */
  clients?: number;
  /** Set the DO bit in every query (dnsperf `-D`; dnsperf only). */
  dnssecOk?: boolean;
  /** Stop after sending the query list this many times (dnsperf `-n`), or at `durationS`. */
  passes?: number;
}

const commandChecked = new Map<string, boolean>();

/**
 * A Debian package's command: installed here when missing and running as root (unless
 * CLUSTERDNS_BENCH_NO_INSTALL=1); false when it is still missing.
 */
function ensureDebianCommand(command: string, pkg: string): boolean {
  const known = commandChecked.get(command);
  if (known !== undefined) return known;
  const has = () => spawnSync('sh', ['-c', `command -v ${command}`]).status === 0;
  if (!has() && process.getuid?.() === 0 && process.env.CLUSTERDNS_BENCH_NO_INSTALL !== '1') {
    process.stdout.write(`${command} not found; installing the Debian package ${pkg}...\n`);
    spawnSync('sh', ['-c', `apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq ${pkg}`], {
      stdio: 'inherit',
    });
  }
  const ok = has();
  commandChecked.set(command, ok);
  return ok;
}

/** dnsperf from Debian; installed here when running as root, else the Node generator is used. */
export function ensureDnsperf(): boolean {
  const ok = ensureDebianCommand('dnsperf', 'dnsperf');
  if (!ok && !commandChecked.has('dnsperf-warned')) {
    commandChecked.set('dnsperf-warned', true);
    process.stdout.write(
      'dnsperf is not available (install the Debian package `dnsperf`); using the built-in Node load generator, whose own cost lowers every figure.\n',
    );
  }
  return ok;
}

/**
 * DoH load: nghttp2's h2load (Debian's nghttp2-client) on CPU 1, CONNECTIONS × STREAMS POSTs of
 * the file `bodyFile` (h2load's -d) in flight for `seconds`. A C client, so the server, not the load generator, is what
 * runs out (Node's own http2 client saturated its core at a fifth of the server's capacity).
 */
export function runH2load(
  url: string,
  bodyFile: string,
  seconds: number,
  connections = 4,
  streams = 50,
): { completed: number; failed: number } {
  if (!ensureDebianCommand('h2load', 'nghttp2-client'))
    throw new Error('DoH load needs h2load (Debian package nghttp2-client)');
  const r = spawnSync(
    'taskset',
    [
      '-c',
      '1',
      'h2load',
      '-c',
      String(connections),
      '-m',
      String(streams),
      '-D',
      String(seconds),
      '-d',
      bodyFile,
      '-H',
      'content-type: application/dns-message',
      url,
    ],
    // A run that does not end within twice its duration (and a minute) is reported, not waited for.
    { encoding: 'utf8', timeout: (2 * seconds + 60) * 1000 },
  );
  if (r.error) throw new Error(`h2load could not run (taskset and h2load installed?): ${r.error.message}`);
  const m = /requests: \d+ total, \d+ started, \d+ done, (\d+) succeeded, (\d+) failed/.exec(r.stdout ?? '');
  if (!m) throw new Error(`h2load printed no summary (exit ${r.status}): ${(r.stderr ?? '').slice(-500)}`);
  return { completed: Number(m[1]), failed: Number(m[2]) };
}

/** What tools/udpload reports for one open-loop run (latencies in seconds). */
export interface OpenLoadResult {
  sent: number;
  answered: number;
  /** Replies later than the timeout (not in the percentiles). */
  late: number;
  p50: number;
  p99: number;
}

/**
 * The open-loop UDP load generator tools/udpload, built into .bin on first use (or when its source
 * changed) by scripts/install-go-tool.sh; throws naming the fix when Go cannot build it.
 */
export function udploadPath(): string {
  const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
  const r = spawnSync('bash', [join(root, 'scripts/install-go-tool.sh'), 'udpload'], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`building tools/udpload failed (needs Go and its module proxy): ${r.stderr}`);
  return r.stdout.trim();
}

/**
 * The nice value udpload runs at (CLUSTERDNS_BENCH_LOAD_NICE, default 0; below 0 needs root): a
 * bench that runs a busy client of its own on the load core (the AXFR client) can keep it from
 * delaying udpload's sends, which its latencies would count as the server's.
 */
const LOAD_NICE = Number(process.env.CLUSTERDNS_BENCH_LOAD_NICE ?? 0);

/**
 * `rate` UDP queries per second for `seconds` from CPU 1 (tools/udpload: 4 sockets, sent whatever
 * is answered, each reply timed by its kernel receive stamp, so this machine's own load on the
 * client side is not counted as the server's latency). `queries` are dnsperf-style `NAME TYPE`
 * lines asked in turn (default: example.org A). Asynchronous: the caller's event loop keeps
 * running (the AXFR bench transfers meanwhile).
 */
export function openLoad(
  bin: string,
  serverPort: number,
  rate: number,
  seconds: number,
  queries?: readonly string[],
): Promise<OpenLoadResult> {
  const argv = ['-server', `127.0.0.1:${serverPort}`, '-rate', String(Math.round(rate)), '-seconds', String(seconds)];
  argv.push('-sockets', '4', '-timeout', '1s');
  const file = queries ? queryFile(queries) : null;
  if (file) argv.push('-queries', file);
  const [cmd, args] = hasTaskset ? ['taskset', ['-c', '1', bin, ...argv]] : [bin, argv];
  return new Promise((resolveRun, reject) => {
    const p = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    if (LOAD_NICE !== 0 && p.pid !== undefined) setPriority(p.pid, LOAD_NICE);
    // A run that has not ended 30 s after its duration (and the 1 s timeout) is killed and reported.
    const bound = setTimeout(() => p.kill('SIGKILL'), (seconds + 30) * 1000);
    let out = '';
    let err = '';
    p.stdout.on('data', (d: Buffer) => (out += d.toString()));
    p.stderr.on('data', (d: Buffer) => (err += d.toString()));
    p.on('error', reject);
    p.on('exit', (code) => {
      clearTimeout(bound);
      if (file) rmSync(file, { force: true });
      const line = out.trim().split('\n').pop() ?? '';
      if (code !== 0 || !line.startsWith('{')) reject(new Error(`udpload failed (exit ${code}): ${err}${line}`));
      else resolveRun(JSON.parse(line) as OpenLoadResult);
    });
  });
}

export async function runLoad(o: LoadOptions): Promise<LoadResult> {
  if (o.proto === 'dot' && !ensureDnsperf()) throw new Error('DoT load needs dnsperf (Debian package dnsperf)');
  return ensureDnsperf() ? runDnsperf(o) : runNodeLoad(o);
}

/** The queries (`NAME TYPE` lines, dnsperf's data file) in a temporary file; the caller removes it. */
function queryFile(queries: readonly string[]): string {
  const file = join(tmpdir(), `clusterdns-bench-${process.pid}-${Math.random().toString(36).slice(2)}.txt`);
  writeFileSync(file, `${queries.join('\n')}\n`);
  return file;
}

function runDnsperf(o: LoadOptions): Promise<LoadResult> {
  const file = queryFile(o.queries);
  const args = [
    '-s',
    '127.0.0.1',
    '-p',
    String(o.port),
    '-d',
    file,
    '-l',
    String(o.durationS),
    '-m',
    o.proto,
    '-q',
    String(o.outstanding ?? 200),
    '-t',
    String(o.timeoutS ?? 2),
  ];
  if (o.maxQps) args.push('-Q', String(Math.floor(o.maxQps)));
  if (o.clients && o.clients > 1) args.push('-c', String(o.clients));
  if (o.latencies) args.push('-v');
  if (o.dnssecOk) args.push('-D');
  if (o.passes) args.push('-n', String(o.passes));
  const cmd = hasTaskset ? 'taskset' : 'dnsperf';
  const argv = hasTaskset ? ['-c', String(o.cpu ?? 1), 'dnsperf', ...args] : args;
  // dnsperf writes to a file, read after the run: with -v it prints a line per query, and a pipe
  // read by this process during the run would compete for the CPUs being measured.
  const outFile = `${file}.out`;
  const out = openSync(outFile, 'w');
  return new Promise((resolve, reject) => {
    const p = spawn(cmd, argv, { stdio: ['ignore', out, out] });
    closeSync(out);
    p.on('error', reject);
    p.on('exit', () => {
      const text = readFileSync(outFile, 'latin1');
      rmSync(outFile, { force: true });
      rmSync(file, { force: true });
      const latencies: number[] = [];
      let tail = '';
      for (const l of text.split('\n')) {
        if (l.startsWith('> ')) {
          // `> RCODE NAME TYPE SECONDS` for an answer; a timed-out query is `> T NAME TYPE`, no time.
          if (o.latencies && !l.startsWith('> T ')) latencies.push(Number(l.slice(l.lastIndexOf(' ') + 1)));
        } else tail += `${l}\n`;
      }
      const num = (re: RegExp) => Number(re.exec(tail)?.[1] ?? NaN);
      const rcodes: Record<string, number> = {};
      const rc = /Response codes:\s+(.*)/.exec(tail)?.[1] ?? '';
      for (const m of rc.matchAll(/([A-Z]+) (\d+)/g)) rcodes[m[1]!] = Number(m[2]);
      resolve({
        qps: num(/Queries per second:\s+([\d.]+)/),
        sent: num(/Queries sent:\s+(\d+)/),
        completed: num(/Queries completed:\s+(\d+)/),
        lost: num(/Queries lost:\s+(\d+)/),
        latencies: latencies.sort((a, b) => a - b),
        rcodes,
      });
    });
  });
}

/** A minimal query packet (RD set, class IN) for the load generators. */
export function encodeSimpleQuery(name: string, qtype: number, id: number): Buffer {
  const labels = name.replace(/\.$/, '').split('.').filter(Boolean);
  const buf = Buffer.alloc(12 + labels.reduce((n, l) => n + l.length + 1, 1) + 4);
  buf.writeUInt16BE(id, 0);
  buf.writeUInt16BE(0x0100, 2);
  buf.writeUInt16BE(1, 4);
  let off = 12;
  for (const l of labels) {
    buf[off] = l.length;
    buf.write(l, off + 1, 'latin1');
    off += l.length + 1;
  }
  buf[off] = 0;
  buf.writeUInt16BE(qtype, off + 1);
  buf.writeUInt16BE(1, off + 3);
  return buf;
}

/** Fallback load generator: keeps `outstanding` UDP queries in flight from one socket. */
async function runNodeLoad(o: LoadOptions): Promise<LoadResult> {
  const sock = dgram.createSocket('udp4');
  await new Promise<void>((r) => sock.bind(0, '127.0.0.1', () => r()));
  const packets = o.queries.map((line, i) => {
    const [name, type] = line.split(/\s+/);
    return encodeSimpleQuery(name ?? '', qtypeFromName(type ?? 'A') ?? 1, i & 0xffff);
  });
  const sentAt = new Map<number, bigint>();
  const latencies: number[] = [];
  let sent = 0;
  let completed = 0;
  let nextId = 0;
  const end = Date.now() + o.durationS * 1000;
  const minGapNs = o.maxQps ? BigInt(Math.floor(1e9 / o.maxQps)) : 0n;
  let lastSend = 0n;
  const sendOne = () => {
    if (Date.now() >= end) return;
    const now = process.hrtime.bigint();
    if (minGapNs && now - lastSend < minGapNs) {
      setImmediate(sendOne);
      return;
    }
    lastSend = now;
    const p = packets[sent % packets.length]!;
    const id = nextId++ & 0xffff;
    p.writeUInt16BE(id, 0);
    sentAt.set(id, now);
    sent++;
    sock.send(p, o.port, '127.0.0.1');
  };
  sock.on('message', (m) => {
    const t = sentAt.get(m.readUInt16BE(0));
    if (t !== undefined) {
      if (o.latencies) latencies.push(Number(process.hrtime.bigint() - t) / 1e9);
      sentAt.delete(m.readUInt16BE(0));
      completed++;
    }
    sendOne();
  });
  const start = Date.now();
  for (let i = 0; i < (o.outstanding ?? 100); i++) sendOne();
  await new Promise((r) => setTimeout(r, o.durationS * 1000 + 500));
  sock.close();
  const secs = (Date.now() - start) / 1000;
  return {
    qps: completed / secs,
    sent,
    completed,
    lost: sent - completed,
    latencies: latencies.sort((a, b) => a - b),
    rcodes: {},
  };
}

/** The V8 flags the image and `bin/clusterdns` run the server with (see the Dockerfile); CLUSTERDNS_BENCH_NODE_ARGS overrides. */
export const SERVER_NODE_ARGS = (process.env.CLUSTERDNS_BENCH_NODE_ARGS ?? '--max-semi-space-size=2')
  .split(' ')
  .filter(Boolean);

export function machineDescription(): Record<string, string | number> {
  const c = cpus();
  return {
    cpu: c[0]?.model ?? 'unknown',
    cores: c.length,
    node: process.version,
    platform: `${process.platform}/${process.arch}`,
  };
}

/** The median (upper median for an even count) of `xs`. */
export const median = (xs: readonly number[]): number => [...xs].sort((x, y) => x - y)[xs.length >> 1]!;

/** Shuffle `a` in place (Fisher–Yates) and return it. */
export function shuffle<T>(a: T[]): T[] {
  for (let i = a.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [a[i], a[j]] = [a[j]!, a[i]!];
  }
  return a;
}

/** The Services of a sandbox API server at `url`. */
export async function listServices(url: string): Promise<{ name: string; ns: string }[]> {
  const res = await fetch(`${url}/api/v1/services`);
  const body = (await res.json()) as { items: { metadata: { name: string; namespace: string } }[] };
  return body.items.map((s) => ({ name: s.metadata.name, ns: s.metadata.namespace }));
}

/**
 * The cluster query mix for dnsperf (`name TYPE` lines, shuffled): A/AAAA (80/20) of up to 20,000
 * of the sandbox's Services, plus 10 % NXDOMAIN names in their namespaces.
 */
export async function serviceQueries(url: string): Promise<string[]> {
  const svcs = await listServices(url);
  const q: string[] = [];
  for (const sv of shuffle([...svcs]).slice(0, 20000))
    q.push(`${sv.name}.${sv.ns}.svc.cluster.local ${Math.random() < 0.8 ? 'A' : 'AAAA'}`);
  const n = q.length;
  for (let i = 0; i < n / 9; i++) q.push(`missing-${i}.${svcs[i % svcs.length]!.ns}.svc.cluster.local A`);
  return shuffle(q);
}

/** The loopback ports kubeadm's Corefile listens on or forwards to in a bench. */
export interface KubeadmPorts {
  dns: number;
  health: number;
  ready: number;
  metrics: number;
  /** forward's upstream (a closed port when no query should leave the kubernetes path). */
  upstream: number;
}

/**
 * kubeadm's Corefile (v1.31) with its ports on loopback: `source` is the kubernetes block's line
 * that reaches the API (`endpoint URL`, `kubeconfig PATH CONTEXT`), `extra` are directives added
 * before kubernetes (the chain order is fixed, so only their presence matters), `pods` the pods
 * mode (kubeadm's is `insecure`; autopath needs `verified`). The one copy every bench uses, so
 * that "kubeadm's Corefile" means the same thing in each report.
 */
export function kubeadmCorefile(
  p: KubeadmPorts,
  source: string,
  extra: readonly string[] = [],
  pods: 'insecure' | 'verified' = 'insecure',
): string {
  return `.:${p.dns} {
    errors
    health 127.0.0.1:${p.health} {
       lameduck 5s
    }
    ready 127.0.0.1:${p.ready}
${extra.map((l) => `    ${l}\n`).join('')}    kubernetes cluster.local in-addr.arpa ip6.arpa {
       ${source}
       pods ${pods}
       fallthrough in-addr.arpa ip6.arpa
       ttl 30
    }
    prometheus 127.0.0.1:${p.metrics}
    forward . 127.0.0.1:${p.upstream} {
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

/**
 * Write one run's result files into bench/results/ (ignored by git: results are printed and kept
 * locally, and the figures worth keeping go into docs/benchmarks.md) and say where they went.
 */
export function writeResults(files: Readonly<Record<string, string>>): void {
  const dir = resolve(dirname(fileURLToPath(import.meta.url)), '../../bench/results');
  mkdirSync(dir, { recursive: true });
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  process.stdout.write(
    `wrote ${Object.keys(files)
      .map((n) => `bench/results/${n}`)
      .join(', ')}\n`,
  );
}

/** A port free for TCP and UDP on 127.0.0.1 (asked of the kernel, not guessed). */
export async function port(): Promise<number> {
  for (;;) {
    const p = await new Promise<number>((res, rej) => {
      const srv = net.createServer();
      srv.once('error', rej);
      srv.listen(0, '127.0.0.1', () => {
        const a = (srv.address() as net.AddressInfo).port;
        srv.close(() => res(a));
      });
    });
    const udpFree = await new Promise<boolean>((res) => {
      const u = dgram.createSocket('udp4');
      u.once('error', () => res(false));
      u.bind(p, '127.0.0.1', () => u.close(() => res(true)));
    });
    if (udpFree) return p;
  }
}

/** Start `argv` pinned to `cpus` and wait for `ready` on its output. */
export function startPinned(name: string, argv: string[], ready: RegExp, cpuList: string): Promise<Proc> {
  return startProcess(name, 'taskset', ['-c', cpuList, ...argv], ready, { timeoutMs: 180_000 });
}

export async function httpText(port: number, path: string): Promise<{ status: number; body: string }> {
  const r = await fetch(`http://127.0.0.1:${port}${path}`);
  return { status: r.status, body: await r.text() };
}

export async function until(fn: () => Promise<boolean>, what: string, limitMs = 180_000): Promise<void> {
  const end = Date.now() + limitMs;
  for (;;) {
    if (await fn().catch(() => false)) return;
    if (Date.now() > end) throw new Error(`gave up waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** Open watch streams on the sandbox (its `/debug/watches` count). */
export async function sandboxWatches(url: string): Promise<number | null> {
  try {
    const r = await fetch(`${url}/debug/watches`);
    if (r.status !== 200) return null;
    return ((await r.json()) as { open: number }).open;
  } catch {
    return null;
  }
}
