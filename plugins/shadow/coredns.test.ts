/**
 * Shadow mode beside the real CoreDNS 1.15.0 (.bin/coredns, installed by .ci/run): CoreDNS and
 * clusterdns serve the same hosts data except for a few entries changed on purpose; clusterdns
 * shadows every query to CoreDNS. The changed names must show up in the mismatch counter and
 * the log, the unchanged ones must not, and the clients keep getting clusterdns's answers.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import * as dnsPacket from 'dns-packet';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registry } from '../../src/metrics/registry.js';
import { encodeQuery, udpExchange } from '../../test/helpers/dns.js';
import { freePort } from '../../test/helpers/net.js';
import { startServer, type TestServer } from '../../test/helpers/server.js';
import { retryUnlessExited, waitFor } from '../../test/helpers/wait.js';

const COREDNS = resolve(import.meta.dirname, '../../.bin/coredns');

/** Same for both servers. */
const COMMON = [
  '10.0.0.1 same.example',
  '10.0.0.2 also.example',
  'fd00::2 also.example',
  '10.0.0.3 multi.example',
  '10.0.0.4 multi.example',
];
/** Changed on purpose: one address, one extra AAAA, one name only CoreDNS has. */
const OURS = [...COMMON, '10.0.0.5 moved.example', '10.0.0.6 v4only.example'];
const THEIRS = [
  ...COMMON,
  '10.0.0.55 moved.example',
  '10.0.0.6 v4only.example',
  'fd00::6 v4only.example',
  '10.0.0.7 gone.example',
];

const rdata = (a: dnsPacket.Answer): unknown => (a as { data?: unknown }).data;

/** Sum of a metric's samples whose labels include `labels`. */
async function metric(name: string, labels: Record<string, string> = {}): Promise<number> {
  const m = registry.getSingleMetric(name);
  if (!m) return 0;
  let sum = 0;
  for (const v of (await m.get()).values) {
    if (Object.entries(labels).every(([k, val]) => (v.labels as Record<string, unknown>)[k] === val)) sum += v.value;
  }
  return sum;
}

/** Start CoreDNS on a free port; resolves once it answers a query. */
async function startCoreDNS(corefile: string): Promise<{ proc: ChildProcess; port: number; output: string[] }> {
  if (!existsSync(COREDNS)) throw new Error(`${COREDNS} is missing: .ci/run installs CoreDNS 1.15.0 there`);
  const dir = mkdtempSync(join(tmpdir(), 'clusterdns-shadow-coredns-'));
  const conf = join(dir, 'Corefile');
  writeFileSync(conf, corefile);
  const port = await freePort();
  const proc = spawn(COREDNS, ['-conf', conf, '-dns.port', String(port)], {
    cwd: dir,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const output: string[] = [];
  proc.stdout!.on('data', (c: Buffer) => output.push(...c.toString().split('\n').filter(Boolean)));
  proc.stderr!.on('data', (c: Buffer) => output.push(...c.toString().split('\n').filter(Boolean)));
  await waitFor(
    () => `coredns to answer:\n${output.join('\n')}`,
    async () => {
      if (proc.exitCode !== null) throw new Error(`coredns exited with ${proc.exitCode}:\n${output.join('\n')}`);
      await udpExchange(port, encodeQuery('same.example', 'A'), 500);
      return true;
    },
    { everyMs: 1, retry: retryUnlessExited },
  );
  return { proc, port, output };
}

function hostsStanza(file: string, entries: readonly string[]): string {
  return `  hosts ${file} example {\n${entries.map((e) => `    ${e}`).join('\n')}\n  }`;
}

describe('shadow beside the real CoreDNS', () => {
  let coredns: { proc: ChildProcess; port: number; output: string[] };
  let shadowed: TestServer;
  let empty: string;

  beforeAll(async () => {
    const dir = mkdtempSync(join(tmpdir(), 'clusterdns-shadow-'));
    empty = join(dir, 'hosts');
    writeFileSync(empty, '');
    coredns = await startCoreDNS(`example {\n${hostsStanza(empty, THEIRS)}\n}\n`);
    shadowed = await startServer(
      `example {\n  shadow 127.0.0.1:${coredns.port} {\n    timeout 10s\n    log_rate 100 1s\n  }\n${hostsStanza(empty, OURS)}\n}\n`,
    );
  }, 60_000);

  afterAll(async () => {
    await shadowed?.stop();
    if (coredns && coredns.proc.exitCode === null) {
      const exited = new Promise((r) => coredns.proc.once('exit', r));
      coredns.proc.kill('SIGTERM');
      await exited;
    }
  });

  async function ask(name: string, type: 'A' | 'AAAA', edns?: number): Promise<dnsPacket.Packet> {
    return dnsPacket.decode(
      await udpExchange(shadowed.port, encodeQuery(name, type, edns === undefined ? {} : { edns })),
    );
  }

  it('identical answers (with and without EDNS) count no mismatch', async () => {
    const before = {
      compared: await metric('clusterdns_shadow_compared_total'),
      mismatches: await metric('clusterdns_shadow_mismatches_total'),
    };
    let n = 0;
    for (const [name, type] of [
      ['same.example', 'A'],
      ['also.example', 'A'],
      ['also.example', 'AAAA'],
      ['multi.example', 'A'],
      ['same.example', 'AAAA'],
    ] as const) {
      await ask(name, type);
      await ask(name, type, 1232);
      n += 2;
    }
    await waitFor(
      `${n} comparisons`,
      async () => (await metric('clusterdns_shadow_compared_total')) >= before.compared + n,
    );
    const diffs = shadowed.logs.filter((l) => l.includes('reply differs'));
    expect(diffs).toEqual([]);
    expect(await metric('clusterdns_shadow_mismatches_total')).toBe(before.mismatches);
  });

  it("answers changed on purpose show in the mismatch counter and the log; clients get clusterdns's answers", async () => {
    const before = {
      answer: await metric('clusterdns_shadow_mismatches_total', { kind: 'answer' }),
      rcode: await metric('clusterdns_shadow_mismatches_total', { kind: 'rcode' }),
      differing: await metric('clusterdns_shadow_differing_replies_total'),
    };
    expect((await ask('moved.example', 'A')).answers!.map(rdata)).toEqual(['10.0.0.5']);
    expect((await ask('v4only.example', 'AAAA')).answers).toEqual([]);
    const gone = await ask('gone.example', 'A');
    expect(gone.answers).toEqual([]);
    await waitFor(
      'three differing replies',
      async () => (await metric('clusterdns_shadow_differing_replies_total')) >= before.differing + 3,
    );
    expect(await metric('clusterdns_shadow_mismatches_total', { kind: 'answer' })).toBe(before.answer + 3);
    expect(await metric('clusterdns_shadow_mismatches_total', { kind: 'rcode' })).toBe(before.rcode + 1);
    const logs = shadowed.logs.join('\n');
    expect(logs).toMatch(
      new RegExp(`reply differs from reference 127\\.0\\.0\\.1:${coredns.port} for moved\\.example\\. A \\(answer\\):`),
    );
    expect(logs).toMatch(/answer: reference only: moved\.example\.\s+3600\s+IN\s+A\s+10\.0\.0\.55/);
    expect(logs).toMatch(/answer: candidate only: moved\.example\.\s+3600\s+IN\s+A\s+10\.0\.0\.5\n/);
    expect(logs).toMatch(
      /reply differs .* for v4only\.example\. AAAA \(answer\):[^]*answer: reference only: v4only\.example\.\s+3600\s+IN\s+AAAA\s+fd00::6/,
    );
    expect(logs).toMatch(/reply differs .* for gone\.example\. A \(/);
    expect(logs).toMatch(/answer: reference only: gone\.example\.\s+3600\s+IN\s+A\s+10\.0\.0\.7/);
  });
});
