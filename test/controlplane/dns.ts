/**
 * The two DNS servers of the control-plane suite — bin/clusterdns and the real CoreDNS 1.15.0
 * (.bin/coredns) — started with the same Corefile against the same API server, and the queries
 * and comparisons the suite makes of them.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { accessSync, constants, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Answer } from 'dns-packet';
import type { Message } from '../../src/dns/message.js';
import { rcode, udpQuery } from '../helpers/dns.js';
import { freePort } from '../helpers/net.js';
import { onStreamLines } from '../helpers/spawn.js';
import { BIN_DIR, REPO_ROOT } from '../helpers/controlplane.js';
import { rrLines } from '../helpers/records.js';
import { retryUnlessExited, waitFor } from '../helpers/wait.js';

export type ServerKind = 'clusterdns' | 'coredns';
export const KINDS: readonly ServerKind[] = ['clusterdns', 'coredns'];
export const COREDNS = join(BIN_DIR, 'coredns');

export function corednsMissing(): string | null {
  try {
    accessSync(COREDNS, constants.X_OK);
    return null;
  } catch {
    return `${COREDNS} (the real CoreDNS 1.15.0, the behaviour oracle) is missing`;
  }
}

export interface DnsServer {
  kind: ServerKind;
  port: number;
  readyPort: number;
  proc: ChildProcess;
  output: string[];
  ready(): Promise<{ status: number; body: string }>;
  stop(): Promise<void>;
}

export interface DnsOptions {
  /** `kubeconfig FILE` in the Corefile; omitted: in-cluster credentials. */
  kubeconfig?: string;
  /** Wrap the command (e.g. ControlPlane.inClusterArgv). */
  wrap?: (argv: string[]) => string[];
  env?: NodeJS.ProcessEnv;
  /** Extra lines inside the kubernetes block. */
  extra?: string[];
  /** The kubernetes plugin's zones (default `cluster.local in-addr.arpa ip6.arpa`). */
  zones?: string;
}

const running = new Set<ChildProcess>();
process.on('exit', () => {
  for (const p of running) {
    try {
      if (p.pid !== undefined) process.kill(p.pid, 'SIGKILL');
    } catch {
      /* gone */
    }
  }
});

/** Start one server and wait until its ready listener answers (200 or 503). */
export async function startDns(kind: ServerKind, o: DnsOptions = {}): Promise<DnsServer> {
  const port = await freePort();
  const readyPort = await freePort();
  const dir = mkdtempSync(join(tmpdir(), `clusterdns-cp-${kind}-`));
  const corefile = [
    `.:${port} {`,
    `  ready 127.0.0.1:${readyPort}`,
    `  kubernetes ${o.zones ?? 'cluster.local in-addr.arpa ip6.arpa'} {`,
    ...(o.kubeconfig ? [`    kubeconfig ${o.kubeconfig}`] : []),
    '    pods insecure',
    ...(o.extra ?? []).map((l) => `    ${l}`),
    '  }',
    '}',
    '',
  ].join('\n');
  writeFileSync(join(dir, 'Corefile'), corefile);
  const base =
    kind === 'clusterdns'
      ? [process.execPath, join(REPO_ROOT, 'bin/clusterdns'), '-conf', join(dir, 'Corefile'), '-dns.port', String(port)]
      : [COREDNS, '-conf', join(dir, 'Corefile'), '-dns.port', String(port)];
  const argv = o.wrap ? o.wrap(base) : base;
  const proc = spawn(argv[0]!, argv.slice(1), {
    cwd: dir,
    env: { ...process.env, ...o.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  running.add(proc);
  const output: string[] = [];
  const onLine = (l: string): void => {
    if (l && output.length < 5000) output.push(l);
  };
  onStreamLines(proc.stdout!, onLine);
  onStreamLines(proc.stderr!, onLine);
  const exited = new Promise<void>((r) =>
    proc.once('exit', () => {
      running.delete(proc);
      r();
    }),
  );
  const ready = async () => {
    const r = await fetch(`http://127.0.0.1:${readyPort}/ready`, { signal: AbortSignal.timeout(5000) });
    return { status: r.status, body: await r.text() };
  };
  const server: DnsServer = {
    kind,
    port,
    readyPort,
    proc,
    output,
    ready,
    stop: async () => {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGTERM');
      const t = setTimeout(() => proc.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(t);
      rmSync(dir, { recursive: true, force: true });
    },
  };
  try {
    await waitFor(
      `${kind}'s /ready listener`,
      async () => {
        if (proc.exitCode !== null) throw new Error(`${kind} exited with ${proc.exitCode}:\n${output.join('\n')}`);
        await ready();
        return true;
      },
      { timeoutMs: 120_000, everyMs: 100, retry: retryUnlessExited },
    );
  } catch (e) {
    await server.stop();
    throw new Error(`${(e as Error).message}\n${output.slice(-30).join('\n')}`);
  }
  return server;
}

/** Wait until /ready says 200. */
export async function waitReady(s: DnsServer, timeoutMs = 120_000): Promise<void> {
  await waitFor(`${s.kind} /ready 200`, async () => ((await s.ready()).status === 200 ? true : undefined), {
    timeoutMs,
    everyMs: 100,
    retry: retryUnlessExited,
  });
}

export async function query(s: DnsServer, name: string, type: string): Promise<Message> {
  return udpQuery(s.port, name, type, { edns: 4096, timeoutMs: 3000 });
}

/** A reply reduced to what both servers must agree on: RCODE, AA and the three sections as
 * sorted, lower-cased strings (SOA serials left out: each server counts its own). */
export interface Normalized {
  rcode: number;
  aa: boolean;
  answer: string[];
  authority: string[];
  additional: string[];
}

export function normalize(m: Message): Normalized {
  const rrs = (list: readonly Answer[] | undefined): string[] =>
    rrLines(list, { maskSerial: true })
      .map((r) => r.toLowerCase())
      .sort();
  return {
    rcode: rcode(m),
    aa: ((m.flags ?? 0) & 0x400) !== 0,
    answer: rrs(m.answers),
    authority: rrs(m.authorities),
    additional: rrs(m.additionals),
  };
}

/** Addresses (A/AAAA data) in the answer section. */
export function addresses(m: Message): string[] {
  return (m.answers ?? [])
    .filter((r) => r.type === 'A' || r.type === 'AAAA')
    .map((r) => String((r as { data: unknown }).data))
    .sort();
}

/** Query both servers until their normalized replies are equal; returns it (or throws with both). */
export async function agree(
  servers: readonly DnsServer[],
  name: string,
  type: string,
  timeoutMs = 30_000,
): Promise<Normalized> {
  let last: Normalized[] = [];
  try {
    return await waitFor(
      `${name} ${type}: the same reply from ${servers.map((s) => s.kind).join(' and ')}`,
      async () => {
        last = await Promise.all(servers.map(async (s) => normalize(await query(s, name, type))));
        const first = JSON.stringify(last[0]);
        return last.every((n) => JSON.stringify(n) === first) ? last[0] : undefined;
      },
      { timeoutMs, everyMs: 200, retry: retryUnlessExited },
    );
  } catch (e) {
    throw new Error(
      `${(e as Error).message}\n${servers.map((s, i) => `${s.kind}: ${JSON.stringify(last[i], null, 1)}`).join('\n')}`,
    );
  }
}

/** One change-to-answer measurement (reported, never asserted). */
export interface Latency {
  change: string;
  server: ServerKind;
  ms: number;
}

export const latencies: Latency[] = [];

/**
 * Apply a change, then query each server until `seen(reply)` holds; records the time from the
 * start of the API request to the first such reply for each server. Waits up to `timeoutMs`.
 */
export async function measureChange(
  change: string,
  servers: readonly DnsServer[],
  name: string,
  type: string,
  apply: () => Promise<unknown>,
  seen: (m: Message) => boolean,
  timeoutMs = 120_000,
): Promise<void> {
  const t0 = performance.now();
  await apply();
  await Promise.all(
    servers.map(async (s) => {
      await waitFor(
        `${s.kind} to reflect "${change}" in ${name} ${type}`,
        async () => (seen(await query(s, name, type)) ? true : undefined),
        { timeoutMs, everyMs: 5, retry: retryUnlessExited },
      );
      latencies.push({ change, server: s.kind, ms: Math.round(performance.now() - t0) });
    }),
  );
}

/** A table of the latencies recorded so far (for the test log). */
export function latencyReport(): string {
  const lines = ['change-to-answer latency (ms, from the API request; reported, not asserted):'];
  const changes = [...new Set(latencies.map((l) => l.change))];
  for (const c of changes) {
    const parts = KINDS.map((k) => `${k} ${latencies.find((l) => l.change === c && l.server === k)?.ms ?? '-'}`);
    lines.push(`  ${c.padEnd(48)} ${parts.join('  ')}`);
  }
  return lines.join('\n');
}
