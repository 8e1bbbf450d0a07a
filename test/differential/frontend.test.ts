/**
 * Differential: the front-end directives of issue #28 — proxyproto, multisocket, shed — against
 * CoreDNS 1.15.0. The same PROXY headers go to both servers over UDP and TCP: the answers (whoami
 * shows the client each server took), the log lines ({remote}, {port}, {/proxyproto/tlv}), and
 * the datagrams both drop with their warning. Both refuse the same bad options with the same text;
 * multisocket and shed answer as without them, and shed's metric has the same series.
 */
import { spawnSync } from 'node:child_process';
import * as dgram from 'node:dgram';
import { mkdtempSync, writeFileSync } from 'node:fs';
import * as net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { proxyV1, proxyV2, tcpFrame } from '../helpers/proxyproto.js';
import { waitFor } from '../helpers/wait.js';
import { httpRequest } from '../helpers/http.js';
import {
  assertResult,
  CLUSTERDNS_BIN,
  COREDNS_BIN,
  encode,
  generate,
  judge,
  missingBinaries,
  newResult,
  runQueries,
  startPair,
  totalCompared,
  type Pair,
  type Proc,
  type QuerySpec,
} from './harness.js';

const q = (name: string, id: number): Buffer => encode({ name, type: 'A', id });

/** One datagram from a fresh socket; the reply, or null once `settled` holds without one. */
async function udpFrom(port: number, bytes: Buffer): Promise<{ sock: dgram.Socket; reply: Promise<Buffer> }> {
  const sock = dgram.createSocket('udp4');
  await new Promise<void>((r) => sock.bind(0, '127.0.0.1', () => r()));
  const reply = new Promise<Buffer>((r) => sock.once('message', (m) => r(m)));
  sock.send(bytes, port, '127.0.0.1');
  return { sock, reply };
}

/** Bytes on a new TCP connection; the first framed reply, or null when the server closes. */
function tcpSend(port: number, bytes: Buffer): Promise<Buffer | null> {
  return new Promise((resolve) => {
    const c = net.connect(port, '127.0.0.1');
    let buf = Buffer.alloc(0);
    c.on('connect', () => c.write(bytes));
    c.on('data', (d) => {
      buf = Buffer.concat([buf, d]);
      if (buf.length >= 2 && buf.length >= 2 + buf.readUInt16BE(0)) {
        resolve(buf.subarray(2, 2 + buf.readUInt16BE(0)));
        c.destroy();
      }
    });
    c.on('close', () => resolve(null));
    c.on('error', () => resolve(null));
  });
}

/** The `PP …` lines of a server's log plugin, without the level prefix. */
const ppLines = (p: Proc): string[] =>
  p.output.filter((l) => l.includes(' PP ')).map((l) => l.slice(l.indexOf(' PP ')));

/** The warning for a dropped datagram, from "dropping" on (the peer's port differs per socket). */
const warnings = (p: Proc): string[] =>
  p.output
    .filter((l) => l.includes('dropping invalid Proxy Protocol packet'))
    .map((l) => l.slice(l.indexOf('dropping')).replace(/from 127\.0\.0\.1:\d+/, 'from 127.0.0.1:PORT'));

function brokenDir(snippet: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'frontend-broken-'));
  writeFileSync(join(dir, 'Corefile'), `.:0 {\n${snippet}\n  whoami\n}\n`);
  return dir;
}

function startupError(dir: string, bin: 'coredns' | 'clusterdns'): string {
  const args = ['-conf', join(dir, 'Corefile'), '-dns.port', '0'];
  const r =
    bin === 'coredns'
      ? spawnSync(COREDNS_BIN, args, { encoding: 'utf8', timeout: 20000, cwd: dir })
      : spawnSync(process.execPath, [CLUSTERDNS_BIN, ...args], { encoding: 'utf8', timeout: 20000, cwd: dir });
  const lines = `${r.stdout}${r.stderr}`.split('\n').filter((l) => l.trim() !== '');
  return lines[lines.length - 1] ?? '';
}

const BROKEN = [
  'proxyproto a',
  'proxyproto {\n  foo\n}',
  'proxyproto {\n  allow 1.2.3.4\n}',
  'proxyproto {\n  allow 10.0.0.0/33\n}',
  'proxyproto {\n  default maybe\n}',
  'proxyproto {\n  default\n}',
  'proxyproto {\n  udp_session_tracking\n}',
  'proxyproto {\n  udp_session_tracking 5x\n}',
  'proxyproto {\n  udp_session_tracking 5s 0\n}',
  'proxyproto {\n  udp_session_tracking 5s x\n}',
  'proxyproto {\n  tlv_metadata yes\n}',
  'multisocket 0',
  'multisocket -3',
  'multisocket x',
  'multisocket 2000',
  'multisocket 1 2',
  'multisocket\n  multisocket 3',
  'shed x',
  'shed {\n  a\n}',
  'shed\n  shed',
];

describe('differential: proxyproto, multisocket, shed', () => {
  const missing = missingBinaries();
  const pairs: Pair[] = [];
  afterAll(async () => {
    await Promise.all(pairs.map((p) => p.stop()));
    const t = totalCompared();
    process.stdout.write(`frontend: ${t.compared} queries compared in ${t.cases} cases\n`);
  });

  it('has CoreDNS 1.15.0 and a build to compare', () => {
    expect(missing).toBeNull();
  });

  it('refuses the same bad options with the same text', () => {
    if (missing) throw new Error(missing);
    for (const b of BROKEN) {
      const dir = brokenDir(b);
      expect(startupError(dir, 'clusterdns'), b).toBe(startupError(dir, 'coredns'));
    }
  }, 240_000);

  it('proxyproto: the same clients, log lines and drops for the same headers', async () => {
    if (missing) throw new Error(missing);
    const pair = await startPair({
      corefile: [
        '.:{{DNS}} {',
        '  metadata',
        '  proxyproto {',
        '    allow 127.0.0.0/8',
        '    tlv_metadata',
        '  }',
        '  log . "PP {remote} {port} {proto} {name} {type} {/proxyproto/tlv}"',
        '  whoami',
        '}',
        '',
      ].join('\n'),
      oneThread: true,
    });
    pairs.push(pair);
    const result = newResult('proxyproto-headers');
    const withHeader = (h: Buffer, name: string, id: number, proto: 'udp' | 'tcp'): QuerySpec => ({
      name,
      type: 'A',
      proto,
      id,
      raw: Buffer.concat([h, q(name, id)]),
      label: name,
    });
    // UDP: v2 headers (IPv4 with TLVs, IPv6, LOCAL over UDP), and a plain query.
    await runQueries(
      pair,
      result,
      [
        withHeader(
          proxyV2('198.51.100.9', 4242, '10.96.0.10', 53, { tlvs: [[0xe0, Buffer.from('vpc-1')]] }),
          'v2a.example',
          1,
          'udp',
        ),
        withHeader(proxyV2('2001:db8::7', 5353, '2001:db8::53', 53), 'v2b.example', 2, 'udp'),
        withHeader(proxyV2('198.51.100.10', 7, '10.96.0.10', 53, { local: true }), 'local.example', 3, 'udp'),
        withHeader(
          proxyV2('::ffff:192.0.2.8', 8, '::ffff:10.96.0.10', 53, {
            tlvs: [
              [0x04, Buffer.alloc(3)],
              [0xe1, Buffer.from('x')],
            ],
          }),
          'mapped.example',
          4,
          'udp',
        ),
        { name: 'plain.example', type: 'A', proto: 'udp', id: 5 },
      ],
      ['whoami'],
      { concurrency: 1 },
    );
    // TCP: v1 and v2 headers before the first message, and a plain connection.
    const tcpCases: [string, Buffer][] = [
      ['tcp-v1.example', proxyV1('192.0.2.44', 5000, '10.96.0.10', 53)],
      ['tcp-v1v6.example', proxyV1('2001:db8::44', 5001, '2001:db8::53', 53)],
      [
        'tcp-v2.example',
        proxyV2('203.0.113.4', 5002, '10.96.0.10', 53, { transport: 'tcp', tlvs: [[0xe2, Buffer.from('t')]] }),
      ],
      ['tcp-plain.example', Buffer.alloc(0)],
    ];
    for (const [i, [name, h]] of tcpCases.entries()) {
      const bytes = Buffer.concat([h, tcpFrame(q(name, 10 + i))]);
      const [ref, cand] = await Promise.all([tcpSend(pair.ref.dns, bytes), tcpSend(pair.cand.dns, bytes)]);
      judge(result, { name, type: 'A', proto: 'tcp', id: 10 + i }, ref, cand, ['whoami']);
    }
    assertResult(result, 9);
    // A server may log a query after its reply reached the client, and each TCP case is a
    // connection of its own: wait for a line of every query on both (nine: the IPv6 v2 header's
    // is logged too), then compare.
    const names = ['v2a', 'v2b', 'local', 'mapped', 'plain', ...tcpCases.map(([n]) => n.replace(/\.example$/, ''))];
    await waitFor(
      () => `a log line of each of ${names.join(', ')} from both servers`,
      () =>
        [pair.ref, pair.cand].every((p) => names.every((n) => ppLines(p).some((l) => l.includes(` ${n}.example. `)))),
    );
    const tcpPortless = (l: string): string => l.replace(/^( PP \S+) \d+ tcp (tcp-plain)/, '$1 PORT tcp $2');
    const plainPortless = (l: string): string => l.replace(/^( PP 127\.0\.0\.1) \d+/, '$1 PORT');
    const norm = (p: Proc): string[] => ppLines(p).map(tcpPortless).map(plainPortless).sort();
    expect(norm(pair.cand)).toEqual(norm(pair.ref));
  }, 120_000);

  it('proxyproto: the same datagrams dropped with the same warnings; the same connections closed', async () => {
    if (missing) throw new Error(missing);
    const pair = await startPair({
      corefile: '.:{{DNS}} {\n  proxyproto {\n    allow 192.0.2.0/24\n    default reject\n  }\n  whoami\n}\n',
      oneThread: true,
    });
    pairs.push(pair);
    const bad = proxyV2('192.0.2.1', 1, '10.0.0.1', 53);
    bad[12] = 0x2f;
    const drops: Buffer[] = [
      Buffer.concat([proxyV2('198.51.100.9', 1, '10.0.0.1', 53), q('rejected.example', 1)]),
      Buffer.concat([proxyV1('192.0.2.1', 1, '10.0.0.1', 53), q('v1.example', 2)]),
      Buffer.concat([proxyV2('192.0.2.1', 1, '10.0.0.1', 53, { transport: 'tcp' }), q('tcp.example', 3)]),
      Buffer.concat([bad, q('bad.example', 4)]),
      Buffer.concat([proxyV2('192.0.2.1', 1, '10.0.0.1', 53).subarray(0, 20)]),
    ];
    for (const [i, d] of drops.entries()) {
      for (const p of [pair.ref, pair.cand]) {
        const { sock, reply } = await udpFrom(p.dns, d);
        const first = await Promise.race([
          reply.then(() => 'reply'),
          waitFor(`warning ${i + 1} of ${p.name}`, () => warnings(p).length > i && 'warning'),
        ]);
        sock.close();
        expect(first, `${p.name}, datagram ${i + 1}`).toBe('warning');
      }
    }
    expect(warnings(pair.cand)).toEqual(warnings(pair.ref));
    // TCP: a header from a source outside allow, and a malformed one, close the connection.
    for (const h of [proxyV1('198.51.100.9', 1, '10.0.0.1', 53), Buffer.from('PROXY TCP4 1.2.3.4\r\n')]) {
      const bytes = Buffer.concat([h, tcpFrame(q('closed.example', 9))]);
      expect(await tcpSend(pair.ref.dns, bytes)).toBeNull();
      expect(await tcpSend(pair.cand.dns, bytes)).toBeNull();
    }
    // Without a header both answer.
    const result = newResult('proxyproto-reject-plain');
    await runQueries(pair, result, [{ name: 'plain.example', type: 'A', proto: 'udp', id: 20 }], ['whoami']);
    assertResult(result, 1);
  }, 120_000);

  it('multisocket and shed answer as CoreDNS; shed exports the same series', async () => {
    if (missing) throw new Error(missing);
    const pair = await startPair({
      corefile: '.:{{DNS}} {\n  multisocket 2\n  shed\n  prometheus 127.0.0.1:{{METRICS}}\n  whoami\n}\n',
      oneThread: true,
    });
    pairs.push(pair);
    const result = newResult('multisocket-shed');
    await runQueries(
      pair,
      result,
      generate(
        ['a.example', 'b.example.org', 'c.example.net'],
        ['A', 'AAAA', 'TXT'],
        [{ proto: 'udp' }, { proto: 'tcp' }],
        281,
      ),
      ['whoami'],
    );
    assertResult(result, 10);
    const series = async (p: Proc): Promise<string[]> => {
      const r = await httpRequest(p.metrics, '/metrics');
      return (
        r.body
          .split('\n')
          .filter((l) => l.startsWith('coredns_shed_dropped_total'))
          // Label pairs in a set order: Go writes them sorted, prom-client in declaration order.
          .map((l) => {
            const m = /^(\w+)\{(.*)\} (.*)$/.exec(l.replace(String(p.dns), 'PORT'))!;
            return `${m[1]}{${m[2]!.split(',').sort().join(',')}} ${m[3]}`;
          })
          .sort()
      );
    };
    expect(await series(pair.cand)).toEqual(await series(pair.ref));
  }, 120_000);
});
