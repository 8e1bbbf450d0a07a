/**
 * The differential harness: start the real CoreDNS 1.15.0 (`.bin/coredns`, or $COREDNS_BIN) and
 * clusterdns (`bin/clusterdns`, after `npm run build`) on the same Corefile template, cluster
 * (sandbox YAML) and scripted upstreams, send both the same queries, and compare the replies with
 * src/dnscompare under its tolerance rules. Differences listed in pending.ts (owned by another
 * piece of work) are reported but do not fail; a pending entry that no longer matches fails, so
 * it is removed once fixed.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import * as dgram from 'node:dgram';
import { appendFileSync, existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import * as net from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import * as dnsPacket from 'dns-packet';
import type { RecordType } from 'dns-packet';
import {
  compareReplies,
  renderDiff,
  TOLERANCE_RULES,
  type Comparison,
  type Difference,
} from '../../src/dnscompare/index.js';
import { startSandbox, type Sandbox } from '../../sandbox/server.js';
import { deadPort, freePort } from '../helpers/net.js';
import { watchLines } from '../helpers/spawn.js';
import { TestUpstream } from '../helpers/upstream.js';
import { PENDING, type PendingEntry } from './pending.js';
import { seededRandom } from '../../src/util/prng.js';
import { waitFor } from '../helpers/wait.js';

export const REPO = resolve(import.meta.dirname, '../..');
export const COREDNS_BIN = process.env.COREDNS_BIN ?? join(REPO, '.bin/coredns');
export const CLUSTERDNS_BIN = join(REPO, 'bin/clusterdns');

/** Why the suite cannot run (it then fails with this reason), or null. */
export function missingBinaries(): string | null {
  if (!existsSync(COREDNS_BIN)) {
    return `CoreDNS not found at ${COREDNS_BIN}: run \`bash scripts/install-coredns.sh\` (builds CoreDNS 1.15.0 into .bin/ through the Go module proxy) or set COREDNS_BIN`;
  }
  if (!existsSync(join(REPO, 'dist/src/main.js'))) return 'dist/ not found: run `npm run build` first (npm test does)';
  return null;
}

export interface Proc {
  readonly name: 'coredns' | 'clusterdns';
  readonly proc: ChildProcess;
  readonly output: string[];
  readonly dns: number;
  readonly health: number;
  readonly ready: number;
  readonly metrics: number;
  readonly corefilePath: string;
  readonly dir: string;
  waitFor(re: RegExp, timeoutMs?: number): Promise<string>;
  readonly exited: Promise<number | null>;
  stop(): Promise<number | null>;
}

function startProc(
  name: 'coredns' | 'clusterdns',
  args: string[],
  dir: string,
  ports: { dns: number; health: number; ready: number; metrics: number },
  corefilePath: string,
): Proc {
  const cmd = name === 'coredns' ? COREDNS_BIN : process.execPath;
  const argv = name === 'coredns' ? args : [CLUSTERDNS_BIN, ...args];
  const proc = spawn(cmd, argv, {
    cwd: dir,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, GOMAXPROCS: '1' },
  });
  const { output, waitFor, exited } = watchLines(proc, { label: name, timeoutMs: 30000 });
  return {
    name,
    proc,
    output,
    ...ports,
    corefilePath,
    dir,
    waitFor,
    exited,
    stop: async () => {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGTERM');
      const t = setTimeout(() => proc.kill('SIGKILL'), 10000);
      const code = await exited;
      clearTimeout(t);
      return code;
    },
  };
}

export interface CaseSetup {
  /**
   * Corefile template: {{DNS}} {{API}} {{UPSTREAM}} {{UPSTREAM2}} {{DEAD}} {{HEALTH}} {{READY}} {{METRICS}} {{DIR}},
   * {{GRPC}} (a free port for the server's own grpc:// block) and {{PEER_GRPC}} (the other
   * server's {{GRPC}}: each side's grpc plugin can query the other side's grpc:// server).
   */
  readonly corefile: string;
  /** Sandbox YAML files (repo-relative) and extra objects; no cluster when both are absent. */
  readonly cluster?: readonly string[];
  readonly objects?: readonly unknown[];
  /** Script the upstreams (two are started when the template names {{UPSTREAM2}}). */
  readonly upstream?: (u: TestUpstream, index: number, server?: 'coredns' | 'clusterdns') => void;
  /** Give each server its own upstreams (so each upstream's query log is one server's traffic). */
  readonly perServerUpstreams?: boolean;
  /** Files written into each server's directory before start (name → content template). */
  readonly files?: Readonly<Record<string, string>>;
  /**
   * Run clusterdns as one query thread. By default it runs as it would in a pod (one thread per
   * CPU); cases that compare state CoreDNS keeps once per process and clusterdns once per thread
   * (the cache for serve_stale and prefetch, forward's health: docs/multicore.md §5) set this, as
   * CoreDNS runs here with GOMAXPROCS=1.
   */
  readonly oneThread?: boolean;
  /** Run clusterdns with `-workers N` (a case that checks what every thread sees). */
  readonly workers?: number;
}

export interface Pair {
  readonly ref: Proc;
  readonly cand: Proc;
  readonly sandbox: Sandbox | null;
  readonly upstreams: TestUpstream[];
  /** With `perServerUpstreams`: each server's own upstreams ({{UPSTREAM}} first). */
  readonly upstreamsOf: Readonly<Record<'coredns' | 'clusterdns', TestUpstream[]>>;
  stop(): Promise<void>;
}

function fill(template: string, v: Record<string, string>): string {
  return template.replace(/\{\{(\w+)\}\}/g, (m, k: string) => v[k] ?? m);
}

/** Both servers on fresh ports, with the case's Corefile and files (not waited for). */
async function startServers(
  setup: CaseSetup,
  sandbox: Sandbox | null,
  upstreamsOf: Readonly<Record<'coredns' | 'clusterdns', TestUpstream[]>>,
  dead: number,
): Promise<Proc[]> {
  const procs: Proc[] = [];
  const grpcPorts =
    setup.corefile.includes('{{GRPC}}') || setup.corefile.includes('{{PEER_GRPC}}')
      ? { coredns: String(await freePort()), clusterdns: String(await freePort()) }
      : { coredns: '', clusterdns: '' };
  for (const name of ['coredns', 'clusterdns'] as const) {
    const ports = {
      dns: await freePort(),
      health: await freePort(),
      ready: await freePort(),
      metrics: await freePort(),
    };
    const dir = mkdtempSync(join(tmpdir(), `diff-${name}-`));
    const vars: Record<string, string> = {
      DNS: String(ports.dns),
      HEALTH: String(ports.health),
      READY: String(ports.ready),
      METRICS: String(ports.metrics),
      API: sandbox?.url ?? 'http://127.0.0.1:1',
      UPSTREAM: upstreamsOf[name][0]?.addr ?? '',
      UPSTREAM2: upstreamsOf[name][1]?.addr ?? '',
      DEAD: `127.0.0.1:${dead}`,
      DIR: dir,
      GRPC: grpcPorts[name],
      PEER_GRPC: grpcPorts[name === 'coredns' ? 'clusterdns' : 'coredns'],
    };
    for (const [f, content] of Object.entries(setup.files ?? {})) writeFileSync(join(dir, f), fill(content, vars));
    const corefilePath = join(dir, 'Corefile');
    writeFileSync(corefilePath, fill(setup.corefile, vars));
    const workers = setup.oneThread ? 1 : setup.workers;
    const threads = name === 'clusterdns' && workers !== undefined ? ['-workers', String(workers)] : [];
    procs.push(
      startProc(name, ['-conf', corefilePath, '-dns.port', String(ports.dns), ...threads], dir, ports, corefilePath),
    );
  }
  return procs;
}

/** Start the sandbox, the upstreams and both servers; resolves once both answer DNS. */
export async function startPair(setup: CaseSetup, probe?: { name: string; type: string }): Promise<Pair> {
  const sandbox =
    setup.cluster || setup.objects
      ? await startSandbox({
          files: (setup.cluster ?? []).map((f) => join(REPO, f)),
          objects: [...(setup.objects ?? [])],
          log: () => undefined,
        })
      : null;
  const upstreams: TestUpstream[] = [];
  const nUp = setup.corefile.includes('{{UPSTREAM2}}') ? 2 : setup.corefile.includes('{{UPSTREAM}}') ? 1 : 0;
  const upstreamsOf: Record<'coredns' | 'clusterdns', TestUpstream[]> = { coredns: upstreams, clusterdns: upstreams };
  if (setup.perServerUpstreams) {
    upstreamsOf.coredns = [];
    upstreamsOf.clusterdns = [];
    for (const server of ['coredns', 'clusterdns'] as const) {
      for (let i = 0; i < nUp; i++) {
        const u = await TestUpstream.start();
        setup.upstream?.(u, i, server);
        upstreamsOf[server].push(u);
        upstreams.push(u);
      }
    }
  } else {
    for (let i = 0; i < nUp; i++) {
      const u = await TestUpstream.start();
      setup.upstream?.(u, i);
      upstreams.push(u);
    }
  }
  // Nothing may ever answer on {{DEAD}}: a port no socket bound to 0 can be given (helpers/net.ts).
  const dead = await deadPort();
  let procs: Proc[] = [];
  try {
    // A port freePort() found free can be taken by another process before the server binds it:
    // such a start (EADDRINUSE) is retried on new ports; any other failure is the test's.
    for (let attempt = 1; ; attempt++) {
      procs = await startServers(setup, sandbox, upstreamsOf, dead);
      try {
        await Promise.all([procs[0]!.waitFor(/^CoreDNS-\d/), procs[1]!.waitFor(/^clusterdns-\d/)]);
        break;
      } catch (e) {
        const portTaken = procs.some((p) => p.output.some((l) => /address already in use/.test(l)));
        if (!portTaken || attempt === 3) throw e;
        await Promise.all(procs.map((p) => p.stop()));
      }
    }
    const [ref, cand] = procs as [Proc, Proc];
    if (probe) {
      for (const p of procs) await waitAnswer(p, probe);
    }
    return {
      ref,
      cand,
      sandbox,
      upstreams,
      upstreamsOf,
      stop: async () => {
        await Promise.all(procs.map((p) => p.stop()));
        for (const u of upstreams) await u.stop();
        await sandbox?.close();
      },
    };
  } catch (e) {
    await Promise.all(procs.map((p) => p.stop()));
    for (const u of upstreams) await u.stop();
    await sandbox?.close();
    throw e;
  }
}

/** Wait until the server gives a NOERROR answer with records for the probe (sync done). */
async function waitAnswer(p: Proc, probe: { name: string; type: string }): Promise<void> {
  await waitFor(
    () => `${p.name} to answer ${probe.name} ${probe.type}; output:\n${p.output.join('\n')}`,
    async () => {
      const r = await exchange(p.dns, encode({ name: probe.name, type: probe.type, proto: 'udp', id: 1 }), 'udp', 1000);
      return r !== null && (r.readUInt16BE(2) & 0xf) === 0 && r.readUInt16BE(6) > 0;
    },
    { everyMs: 100 },
  );
}

// ---------------------------------------------------------------------------------------------
// Queries

export interface QuerySpec {
  readonly name: string;
  readonly type: string;
  readonly proto: 'udp' | 'tcp';
  readonly id: number;
  /** EDNS UDP size (OPT present) or undefined (no OPT). */
  readonly edns?: number;
  readonly do?: boolean;
  readonly rd?: boolean;
  readonly cd?: boolean;
  readonly klass?: 'IN' | 'CH' | 'ANY';
  readonly options?: readonly { code: number; data: Buffer }[];
  /** Raw bytes instead of an encoded query (malformed queries). */
  readonly raw?: Buffer;
  /** Label for reports. */
  readonly label?: string;
  /** Source address to send from (127.0.0.1 when absent): view's expressions read it. */
  readonly source?: string;
}

export function encode(q: Omit<QuerySpec, 'proto'> & { proto?: string }): Buffer {
  if (q.raw) return q.raw;
  const flags = (q.rd === false ? 0 : dnsPacket.RECURSION_DESIRED) | (q.cd ? dnsPacket.CHECKING_DISABLED : 0);
  const additionals =
    q.edns !== undefined
      ? [
          {
            type: 'OPT',
            name: '.',
            udpPayloadSize: q.edns,
            flags: q.do ? dnsPacket.DNSSEC_OK : 0,
            options: q.options ?? [],
          },
        ]
      : [];
  return dnsPacket.encode({
    id: q.id,
    type: 'query',
    flags,
    questions: [
      { name: q.name === '.' ? '.' : q.name.replace(/\.$/, ''), type: q.type as RecordType, class: q.klass ?? 'IN' },
    ],
    additionals: additionals as dnsPacket.Answer[],
  });
}

/** The name with its letters' case flipped by a seeded coin (0x20 style). */
export function mixCase(name: string, rnd: () => number): string {
  let out = '';
  for (const ch of name)
    out += /[a-z]/i.test(ch) && rnd() < 0.5 ? (ch === ch.toLowerCase() ? ch.toUpperCase() : ch.toLowerCase()) : ch;
  return out;
}

export interface Variant {
  readonly proto: 'udp' | 'tcp';
  readonly edns?: number;
  readonly do?: boolean;
  readonly mixed?: boolean;
}

/** UDP without EDNS, UDP with EDNS 1232, UDP EDNS 512 + DO, TCP; each again in mixed case. */
export const STANDARD_VARIANTS: readonly Variant[] = [
  { proto: 'udp' },
  { proto: 'udp', edns: 1232 },
  { proto: 'udp', edns: 512, do: true },
  { proto: 'tcp' },
  { proto: 'tcp', edns: 4096, mixed: true },
  { proto: 'udp', mixed: true },
];

/** Every name × type × variant, with deterministic ids and letter case (seeded). */
export function generate(
  names: readonly string[],
  types: readonly string[],
  variants: readonly Variant[] = STANDARD_VARIANTS,
  seed = 1,
): QuerySpec[] {
  const rnd = seededRandom(seed);
  const out: QuerySpec[] = [];
  for (const name of names) {
    for (const type of types) {
      for (const v of variants) {
        out.push({
          name: v.mixed ? mixCase(name, rnd) : name,
          type,
          proto: v.proto,
          edns: v.edns,
          do: v.do,
          id: Math.floor(rnd() * 65536),
        });
      }
    }
  }
  return out;
}

/** Send one message; the reply bytes, or null when none arrives within `timeoutMs`. */
export function exchange(
  port: number,
  packet: Buffer,
  proto: 'udp' | 'tcp',
  timeoutMs = 3000,
  source?: string,
): Promise<Buffer | null> {
  return new Promise((res) => {
    if (proto === 'udp') {
      const sock = dgram.createSocket('udp4');
      const done = (b: Buffer | null): void => {
        clearTimeout(timer);
        sock.close();
        res(b);
      };
      const timer = setTimeout(() => done(null), timeoutMs);
      sock.on('message', (m) => done(m));
      sock.on('error', () => done(null));
      if (source === undefined) sock.send(packet, port, '127.0.0.1');
      else sock.bind({ address: source, port: 0 }, () => sock.send(packet, port, '127.0.0.1'));
      return;
    }
    const sock = net.connect({ port, host: '127.0.0.1', ...(source !== undefined ? { localAddress: source } : {}) });
    let pending = Buffer.alloc(0);
    let finished = false;
    const done = (b: Buffer | null): void => {
      if (finished) return;
      finished = true;
      clearTimeout(timer);
      sock.destroy();
      res(b);
    };
    const timer = setTimeout(() => done(null), timeoutMs);
    sock.on('connect', () => {
      const len = Buffer.alloc(2);
      len.writeUInt16BE(packet.length);
      sock.write(Buffer.concat([len, packet]));
    });
    sock.on('data', (chunk) => {
      pending = Buffer.concat([pending, chunk]);
      if (pending.length >= 2 && pending.length >= 2 + pending.readUInt16BE(0))
        done(pending.subarray(2, 2 + pending.readUInt16BE(0)));
    });
    sock.on('close', () => done(null));
    sock.on('error', () => done(null));
  });
}

// ---------------------------------------------------------------------------------------------
// Running and judging

export interface Mismatch {
  readonly caseId: string;
  readonly query: QuerySpec;
  readonly comparison: Comparison;
  /** The pending entry that covers every difference, if any. */
  readonly pending?: PendingEntry;
}

export interface CaseResult {
  readonly caseId: string;
  compared: number;
  readonly mismatches: Mismatch[];
  readonly pendingHits: Map<string, number>;
}

export function describeQuery(q: QuerySpec): string {
  if (q.label) return `${q.label} over ${q.proto}`;
  return `${q.name} ${q.klass && q.klass !== 'IN' ? `${q.klass} ` : ''}${q.type} over ${q.proto}${q.edns !== undefined ? ` edns=${q.edns}` : ''}${q.do ? ' +do' : ''}${q.rd === false ? ' +nord' : ''}${q.cd ? ' +cd' : ''}`;
}

function pendingFor(caseId: string, q: QuerySpec, diffs: readonly Difference[]): PendingEntry | undefined {
  return PENDING.find((p) => {
    if (p.case !== caseId && !(p.case instanceof RegExp && p.case.test(caseId))) return false;
    if (p.qname && !p.qname.test(q.name.toLowerCase())) return false;
    if (p.qtypes && !p.qtypes.includes(q.type)) return false;
    if (p.proto && p.proto !== q.proto) return false;
    if (p.edns !== undefined && p.edns !== (q.edns !== undefined)) return false;
    return diffs.every((d) => p.kinds.includes(d.kind) && (!p.detail || p.detail.test(d.detail)));
  });
}

export function newResult(caseId: string): CaseResult {
  return { caseId, compared: 0, mismatches: [], pendingHits: new Map() };
}

/** Compare one reply pair into the result. */
export function judge(
  result: CaseResult,
  q: QuerySpec,
  ref: Buffer | null,
  cand: Buffer | null,
  plugins: readonly string[],
  tags: readonly string[] = [],
): Comparison {
  const c = compareReplies(encode(q), ref, cand, {
    rules: TOLERANCE_RULES,
    context: { plugins, proto: q.proto, tags },
  });
  result.compared++;
  if (c.differences.length > 0) {
    const pending = pendingFor(result.caseId, q, c.differences);
    if (pending) result.pendingHits.set(pending.id, (result.pendingHits.get(pending.id) ?? 0) + 1);
    result.mismatches.push({ caseId: result.caseId, query: q, comparison: c, pending });
  }
  return c;
}

/** Send every query to both servers (the same bytes, at the same time) and judge the replies. */
export async function runQueries(
  pair: Pair,
  result: CaseResult,
  queries: readonly QuerySpec[],
  plugins: readonly string[],
  opts: { concurrency?: number; timeoutMs?: number; tags?: readonly string[] } = {},
): Promise<void> {
  const concurrency = opts.concurrency ?? 16;
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < queries.length) {
      const q = queries[next++]!;
      const packet = encode(q);
      const [ref, cand] = await Promise.all([
        exchange(pair.ref.dns, packet, q.proto, opts.timeoutMs, q.source),
        exchange(pair.cand.dns, packet, q.proto, opts.timeoutMs, q.source),
      ]);
      judge(result, q, ref, cand, plugins, opts.tags);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, queries.length) }, worker));
}

const totals = { compared: 0, cases: 0 };

/** Running totals over the file (printed at the end). */
export function totalCompared(): { compared: number; cases: number } {
  return totals;
}

/**
 * Throw a readable error if the result has differences that are neither tolerated nor pending,
 * or if a pending entry of this case matched nothing (fixed: remove it from pending.ts).
 */
export function assertResult(result: CaseResult, minCompared = 1): void {
  totals.compared += result.compared;
  totals.cases++;
  const problems: string[] = [];
  if (result.compared < minCompared)
    problems.push(`only ${result.compared} queries compared (expected at least ${minCompared})`);
  const failing = result.mismatches.filter((m) => !m.pending);
  // DIFF_DUMP=file: one JSON line per mismatch, for sorting through many at once.
  if (process.env.DIFF_DUMP) {
    for (const m of result.mismatches) {
      appendFileSync(
        process.env.DIFF_DUMP,
        `${JSON.stringify({ case: m.caseId, query: describeQuery(m.query), pending: m.pending?.id, diffs: m.comparison.differences.map((d) => d.detail) })}\n`,
      );
    }
  }
  if (failing.length) {
    problems.push(`${failing.length} of ${result.compared} replies differ from CoreDNS 1.15.0:`);
    for (const m of failing.slice(0, 12)) problems.push(`\n### ${describeQuery(m.query)}\n${renderDiff(m.comparison)}`);
    if (failing.length > 12) {
      problems.push(`\n... and ${failing.length - 12} more:`);
      for (const m of failing.slice(12, 80))
        problems.push(`  ${describeQuery(m.query)}: ${m.comparison.differences.map((d) => d.detail).join('; ')}`);
    }
  }
  for (const p of PENDING) {
    const applies = p.case === result.caseId || (p.case instanceof RegExp && p.case.test(result.caseId));
    if (applies && !result.pendingHits.has(p.id) && !p.optional) {
      problems.push(
        `pending entry '${p.id}' (owner ${p.owner}) matched no difference in case ${result.caseId}: it looks fixed — remove it from test/differential/pending.ts`,
      );
    }
  }
  if (result.pendingHits.size > 0 && process.env.DIFF_VERBOSE) {
    for (const m of result.mismatches.filter((x) => x.pending))
      process.stdout.write(`[pending ${m.pending!.id}] ${describeQuery(m.query)}\n${renderDiff(m.comparison)}\n`);
  }
  if (problems.length) throw new Error(`case ${result.caseId}: ${problems.join('\n')}`);
}
