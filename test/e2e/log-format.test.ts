/**
 * `-log-format json` against the real CoreDNS 1.15.0 (.bin/coredns): the same Corefile and the
 * same queries (a dead forward upstream over UDP and TCP, whoami with a custom log format), a
 * SIGUSR1 reload and SIGTERM, and every stdout line compared as a JSON object, keys in order,
 * once times, client ports, durations and the version banner are set aside. Also the flag's
 * errors and the start-up failure in json mode. Requires `npm run build` (done by `npm test`).
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { decode } from '../../src/dns/message.js';
import { encodeQuery, rcode, tcpQueries, udpExchange } from '../helpers/dns.js';
import { COREDNS, requireCoreDNS, startLines, type LineProcess } from '../helpers/lines.js';
import { freePort } from '../helpers/net.js';
import { runCommand } from '../helpers/spawn.js';
import { spawnSync } from 'node:child_process';

type Which = 'clusterdns' | 'coredns';
type Obj = Record<string, unknown>;

/** Go's time.RFC3339Nano, as slog writes `time` (trailing zeros of the fraction dropped). */
const RFC3339_NANO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d*[1-9])?(Z|[+-]\d\d:\d\d)$/;

/** Set aside what varies from run to run and between the two programs; keep keys in order. */
function normalise(o: Obj): Obj {
  const out: Obj = {};
  for (const [k, v] of Object.entries(o)) {
    if (k === 'time') {
      expect(v).toMatch(RFC3339_NANO);
      out[k] = 'TIME';
    } else if (k === 'client_port' || k === 'duration_seconds') {
      expect(typeof v).toBe('number');
      out[k] = k.toUpperCase();
    } else if (k === 'msg' && typeof v === 'string') {
      out[k] = /^(CoreDNS|clusterdns)-\d+\.\d+\.\d+\n[^\n]+$/.test(v)
        ? 'VERSION'
        : v
            .replace(/^127\.0\.0\.1:\d+ /, '127.0.0.1:PORT ')
            .replace(/ \d+(\.\d+)?s$/, ' DURATIONs')
            .replace(/ udp 127\.0\.0\.1:\d+->/, ' udp 127.0.0.1:PORT->');
    } else {
      out[k] = v;
    }
  }
  return out;
}

/**
 * `which` with -log-format json: with `queries`, the queries and a SIGUSR1 reload; then SIGTERM.
 * Every output line parsed and normalised.
 */
async function scenario(which: Which, corefile: string, port: number, queries: boolean): Promise<string[]> {
  const dir = mkdtempSync(join(tmpdir(), `log-format-${which}-`));
  writeFileSync(join(dir, 'Corefile'), corefile);
  const p = startLines(which, ['-log-format', 'json', '-conf', 'Corefile'], dir);
  let stopped = false;
  try {
    await p.waitFor(/"msg":"(CoreDNS|clusterdns)-/);
    if (queries) await traffic(p, port);
    await p.stop();
    stopped = true;
    return p.lines.filter((l) => l !== '').map((l) => JSON.stringify(normalise(JSON.parse(l) as Obj)));
  } finally {
    if (!stopped) await p.stop();
  }
}

async function traffic(p: LineProcess, port: number): Promise<void> {
  const fail = decode(await udpExchange(port, encodeQuery('fail.test', 'A', { id: 4660 }), 10_000));
  expect(rcode(fail)).toBe(2);
  await p.waitFor(/"plugin":"errors"/);
  const [tcp] = await tcpQueries(port, [encodeQuery('Fail.Test', 'AAAA', { id: 4661, do: true })], 10_000);
  expect(rcode(tcp!)).toBe(2);
  await p.waitFor(/"msg":"2 fail\.test\. AAAA: /);
  // NODATA from hosts (no record to compress: the sizes are comparable).
  const nodata = decode(await udpExchange(port, encodeQuery('www.example.org', 'AAAA', { id: 4662, edns: 1232 })));
  expect(rcode(nodata)).toBe(0);
  await p.waitFor(/"msg":"www\.example\.org\. NOERROR"/);
  await usr1(p);
  await p.waitFor(/"msg":"\[INFO\] Reloading complete"/);
}

/**
 * Send SIGUSR1 until the process says it is reloading: a signal that arrives before the program
 * subscribed to it (a loaded machine shows that window) is dropped, and resending is harmless.
 */
async function usr1(p: LineProcess): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    p.proc.kill('SIGUSR1');
    try {
      await p.waitFor(/"msg":"\[INFO\] SIGUSR1: Reloading"/, 0, 5_000);
      return;
    } catch (e) {
      if (attempt === 5 || p.proc.exitCode !== null) throw e;
    }
  }
}

function run(which: Which, args: string[], cwd?: string): { status: number | null; stdout: string; stderr: string } {
  if (which === 'clusterdns') return runCommand(args, cwd ? { cwd } : {});
  const r = spawnSync(COREDNS, args, { encoding: 'utf8', cwd, timeout: 30_000 });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe('-log-format json against CoreDNS 1.15.0', () => {
  beforeAll(requireCoreDNS);

  it('writes the same JSON objects for the banner, query, errors, reload and signal lines', async () => {
    const port = await freePort();
    const dead = await freePort(); // nothing listens: the upstream refuses
    const corefile = [
      `.:${port} {`,
      '    log',
      '    errors',
      `    forward . 127.0.0.1:${dead}`,
      '}',
      `example.org:${port} {`,
      '    log . "{name} {rcode}"',
      '    hosts {',
      '        127.0.0.1 www.example.org',
      '    }',
      '}',
      '',
    ].join('\n');
    const theirs = await scenario('coredns', corefile, port, true);
    const ours = await scenario('clusterdns', corefile, port, true);
    // CoreDNS alone logs Go's GOMAXPROCS adjustment (no such line in clusterdns, in text mode either).
    const theirsSansMaxprocs = theirs.filter((l) => !l.includes('"msg":"maxprocs: '));
    expect(theirsSansMaxprocs.length).toBe(theirs.length - 1);
    expect(ours).toEqual(theirsSansMaxprocs);
    // What the comparison covered, so that it cannot pass on two empty outputs.
    const q = JSON.parse(ours.find((l) => l.includes('"qtype":"AAAA"'))!) as Obj;
    expect(q).toEqual({
      time: 'TIME',
      level: 'INFO',
      msg: '127.0.0.1:PORT - 4661 "AAAA IN fail.test. tcp 38 true 65535" SERVFAIL qr,rd 27 DURATIONs',
      plugin: 'log',
      client_ip: '127.0.0.1',
      client_port: 'CLIENT_PORT',
      qname: 'fail.test.',
      qtype: 'AAAA',
      qclass: 'IN',
      protocol: 'tcp',
      id: 4661,
      opcode: 0,
      request_size: 38,
      dnssec_ok: true,
      bufsize: 65535,
      rcode: 'SERVFAIL',
      response_size: 27,
      duration_seconds: 'DURATION_SECONDS',
    });
    expect(Object.keys(q)[3]).toBe('plugin');
    expect(ours[0]).toBe(JSON.stringify({ time: 'TIME', level: 'INFO', msg: `.:${port}\nexample.org.:${port}` }));
    for (const want of [
      '"level":"ERROR","msg":"2 fail.test. A: read udp 127.0.0.1:PORT->',
      '"msg":"www.example.org. NOERROR","plugin":"log"',
      '"msg":"[INFO] SIGUSR1: Reloading"}',
      '"msg":"[INFO] SIGTERM: Shutting down servers then terminating"}',
      '"msg":"VERSION"}',
    ]) {
      expect(
        ours.some((l) => l.includes(want)),
        want,
      ).toBe(true);
    }
  }, 90_000);

  it("writes the reload plugin's start-up line as CoreDNS, its trailing newline kept", async () => {
    const port = await freePort();
    const corefile = `.:${port} {\n    reload 1h\n    whoami\n}\n`;
    const theirs = (await scenario('coredns', corefile, port, false)).filter((l) => !l.includes('"msg":"maxprocs: '));
    const ours = await scenario('clusterdns', corefile, port, false);
    // Up to the version banner: a SIGTERM this early may reach CoreDNS before it handles signals.
    expect(ours.slice(0, 3)).toEqual(theirs.slice(0, 3));
    expect(ours[2]).toBe('{"time":"TIME","level":"INFO","msg":"VERSION"}');
    expect(ours[1]).toMatch(
      /^\{"time":"TIME","level":"INFO","msg":"Running configuration SHA512 = [0-9a-f]{128}\\n","plugin":"reload"\}$/,
    );
  }, 60_000);

  it("a value other than text or json: exit 1 and Go's dated log line on stderr, as CoreDNS", () => {
    for (const which of ['coredns', 'clusterdns'] as const) {
      for (const value of ['xml', 'JSON', '']) {
        const r = run(which, [`-log-format=${value}`, '-conf', '/nonexistent']);
        expect(r.status, `${which} ${value}`).toBe(1);
        expect(r.stdout).toBe('');
        expect(r.stderr).toMatch(
          new RegExp(
            `^\\d{4}/\\d\\d/\\d\\d \\d\\d:\\d\\d:\\d\\d unknown log format "${value}": expected text or json\\n$`,
          ),
        );
      }
      // Leftover arguments in text mode: Go's logger has its date prefix there too.
      const extra = run(which, ['-log-format=text', '-conf', '/nonexistent', 'a', 'b']);
      expect(extra.status).toBe(1);
      expect(extra.stderr).toMatch(/^\d{4}\/\d\d\/\d\d \d\d:\d\d:\d\d extra command line arguments: \[a b\]\n$/);
      const missing = run(which, ['-log-format']);
      expect(missing.status).toBe(2);
      expect(missing.stderr.split('\n')[0]).toBe('flag needs an argument: -log-format');
    }
  });

  it('start-up failures in json mode: one FATAL object on stderr and exit 1, as CoreDNS', () => {
    const dir = mkdtempSync(join(tmpdir(), 'log-format-fatal-'));
    writeFileSync(join(dir, 'Corefile'), '.:0 {\n    nosuchplugin\n}\n');
    const fatal = (r: { status: number | null; stdout: string; stderr: string }): Obj => {
      expect(r.status).toBe(1);
      expect(r.stderr.endsWith('\n')).toBe(true);
      expect(r.stderr.trim().split('\n')).toHaveLength(1);
      return normalise(JSON.parse(r.stderr) as Obj);
    };
    for (const args of [
      ['-log-format', 'json', '-conf', 'Corefile'],
      ['-log-format=json', '-conf', 'Corefile', 'extra'],
    ]) {
      const theirs = fatal(run('coredns', args, dir));
      const ours = fatal(run('clusterdns', args, dir));
      expect(Object.keys(ours)).toEqual(['time', 'level', 'msg']);
      expect(ours).toEqual(theirs);
      expect(ours['level']).toBe('FATAL');
    }
  });

  it('text stays the default: -log-format text prints the banner as without the flag', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'log-format-text-'));
    const port = await freePort();
    writeFileSync(join(dir, 'Corefile'), `.:${port} {\n    whoami\n}\n`);
    const p = startLines('clusterdns', ['-log-format', 'text', '-conf', 'Corefile'], dir);
    try {
      const first = await p.waitFor(/^\.:\d+$/);
      await p.waitFor(/^linux\//);
      expect(
        p.lines
          .slice(first, first + 3)
          .map((l) => l.replace(/^clusterdns-.*/, 'VERSION').replace(/^linux\/.*/, 'PLATFORM')),
      ).toEqual([`.:${port}`, 'VERSION', 'PLATFORM']);
    } finally {
      await p.stop();
    }
  });
});
