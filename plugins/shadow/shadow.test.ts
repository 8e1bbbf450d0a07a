/**
 * The shadow plugin end to end: clusterdns (hosts data) shadowed to a fake reference on loopback
 * that relays to a second clusterdns (the "reference", with some entries changed) or answers
 * garbage, truncated, oversize, wrong-id, late or no replies. The client's replies must be byte
 * for byte those of the same server without `shadow`, and the counters must say what happened.
 */
import * as dgram from 'node:dgram';
import { lookup } from 'node:dns/promises';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as dnsPacket from 'dns-packet';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registry } from '../../src/metrics/registry.js';
import { encodeQuery, tcpQueries, udpExchange } from '../../test/helpers/dns.js';
import { freePort } from '../../test/helpers/net.js';
import { startServer, type TestServer } from '../../test/helpers/server.js';
import { waitFor } from '../../test/helpers/wait.js';

const dir = mkdtempSync(join(tmpdir(), 'clusterdns-shadow-'));
const emptyHosts = join(dir, 'hosts');
writeFileSync(emptyHosts, '');

const NAMES = [
  'same',
  'diff',
  'garbage',
  'garbageid',
  'cut',
  'huge',
  'noqr',
  'twice',
  'flood',
  'slow',
  'big',
  'silent',
  'wrongid',
  'short',
];

/** Hosts data: every name has an address; `diff` and `big` differ in the reference. */
function hostsBlock(reference: boolean): string {
  const lines = NAMES.map((n, i) => `    10.0.0.${i + 1} ${n}.example`);
  if (reference) {
    lines[NAMES.indexOf('diff')] = '    10.0.0.99 diff.example';
    for (let i = 0; i < 200; i++) lines.push(`    10.1.${i >> 8}.${i & 255} big.example`);
  }
  return `  hosts ${emptyHosts} example {\n${lines.join('\n')}\n  }`;
}

/** Sum of a metric's samples whose labels include `labels`. */
const rdata = (a: dnsPacket.Answer): unknown => (a as { data?: unknown }).data;

/** Sum of a metric's samples whose labels include `labels`. */
async function metric(name: string, labels: Record<string, string> = {}): Promise<number> {
  const m = registry.getSingleMetric(name);
  if (!m) return 0;
  const data = await m.get();
  let sum = 0;
  for (const v of data.values) {
    if (Object.entries(labels).every(([k, val]) => (v.labels as Record<string, unknown>)[k] === val)) sum += v.value;
  }
  return sum;
}

/** Counter values, for deltas. */
async function snapshot(): Promise<Record<string, number>> {
  return {
    queries: await metric('clusterdns_shadow_queries_total'),
    compared: await metric('clusterdns_shadow_compared_total'),
    differing: await metric('clusterdns_shadow_differing_replies_total'),
    answer: await metric('clusterdns_shadow_mismatches_total', { kind: 'answer' }),
    mismatches: await metric('clusterdns_shadow_mismatches_total'),
    malformed: await metric('clusterdns_shadow_reference_errors_total', { reason: 'malformed' }),
    timeout: await metric('clusterdns_shadow_reference_errors_total', { reason: 'timeout' }),
    refused: await metric('clusterdns_shadow_reference_errors_total', { reason: 'refused' }),
    unexpected: await metric('clusterdns_shadow_unexpected_replies_total'),
    dropped: await metric('clusterdns_shadow_dropped_total'),
  };
}

/**
 * The fake reference: relays to `relayPort` (a clusterdns without shadow) and spoils the reply
 * according to the first label of the question.
 */
class FakeReference {
  readonly received: string[] = [];
  private readonly held: (() => void)[] = [];
  private releaseSlow = false;

  private constructor(
    readonly sock: dgram.Socket,
    readonly port: number,
    private readonly relayPort: number,
  ) {
    sock.on('message', (msg, rinfo) => {
      void this.answer(msg, (b) => sock.send(b, rinfo.port, rinfo.address));
    });
  }

  static async start(relayPort: number, host = '127.0.0.1'): Promise<FakeReference> {
    const port = await freePort(host);
    const sock = dgram.createSocket(host.includes(':') ? 'udp6' : 'udp4');
    await new Promise<void>((resolve) => sock.bind(port, host, () => resolve()));
    return new FakeReference(sock, port, relayPort);
  }

  /** Let the held `slow` replies go. */
  release(): void {
    this.releaseSlow = true;
    for (const f of this.held.splice(0)) f();
  }

  get heldCount(): number {
    return this.held.length;
  }

  private async answer(query: Buffer, send: (b: Buffer) => void): Promise<void> {
    const q = dnsPacket.decode(query);
    const label = q.questions![0]!.name.split('.')[0]!.toLowerCase();
    this.received.push(label);
    const id = query.readUInt16BE(0);
    if (label === 'silent') return;
    if (label === 'garbage') {
      const b = Buffer.alloc(300, 0xa5);
      b.writeUInt16BE(id ^ 0x8000, 0);
      send(b);
      return;
    }
    if (label === 'garbageid') {
      const b = Buffer.alloc(300, 0xff);
      b.writeUInt16BE(id, 0);
      send(b);
      return;
    }
    if (label === 'short') {
      send(Buffer.from([id >> 8, id & 255, 0x81]));
      return;
    }
    if (label === 'flood') {
      for (let i = 0; i < 50; i++) {
        const b = Buffer.alloc(40 + i, i);
        b.writeUInt16BE(id ^ (i + 1), 0);
        send(b);
      }
    }
    const reply = await udpExchange(this.relayPort, query);
    if (label === 'slow' && !this.releaseSlow) {
      this.held.push(() => send(reply));
      return;
    }
    switch (label) {
      case 'cut':
        send(reply.subarray(0, reply.length - 5));
        return;
      case 'huge': {
        const b = Buffer.alloc(60_000);
        reply.copy(b, 0, 0, 12);
        send(b);
        return;
      }
      case 'noqr':
        reply.writeUInt16BE(reply.readUInt16BE(2) & 0x7fff, 2);
        send(reply);
        return;
      case 'wrongid':
        reply.writeUInt16BE((id + 1) & 0xffff, 0);
        send(reply);
        return;
      case 'twice':
        send(reply);
        send(reply);
        return;
      default:
        send(reply);
    }
  }

  close(): void {
    this.sock.close();
  }
}

describe('shadow plugin', () => {
  let reference: TestServer;
  let control: TestServer;
  let shadowed: TestServer;
  let quick: TestServer;
  let fake: FakeReference;

  beforeAll(async () => {
    reference = await startServer(`example {\n${hostsBlock(true)}\n}\n`);
    // The same data as the shadowed server, without shadow: what clients must keep getting.
    control = await startServer(`example {\n${hostsBlock(false)}\n}\n`);
    fake = await FakeReference.start(reference.port);
    shadowed = await startServer(`example {
  shadow 127.0.0.1:${fake.port} {
    timeout 60s
    log_rate 1000 1s
  }
${hostsBlock(false)}
}
`);
    quick = await startServer(`example {
  shadow 127.0.0.1:${fake.port} {
    timeout 100ms
    log_rate 1000 1s
  }
${hostsBlock(false)}
}
`);
  });

  afterAll(async () => {
    await Promise.all([shadowed?.stop(), quick?.stop(), control?.stop(), reference?.stop()]);
    fake?.close();
  });

  /** Ask `server` and the control server the same packet; the replies must be identical. */
  async function unaffected(server: TestServer, name: string, o: { edns?: number } = {}): Promise<Buffer> {
    const packet = encodeQuery(name, 'A', { id: 4242, ...o });
    const [got, want] = await Promise.all([udpExchange(server.port, packet), udpExchange(control.port, packet)]);
    expect(got.toString('hex'), name).toBe(want.toString('hex'));
    return got;
  }

  it('identical replies are compared and count no mismatch', async () => {
    const before = await snapshot();
    for (let i = 0; i < 5; i++) await unaffected(shadowed, 'same.example');
    await unaffected(shadowed, 'same.example', { edns: 1232 });
    await waitFor(
      '6 comparisons',
      async () => (await metric('clusterdns_shadow_compared_total')) >= before.compared! + 6,
    );
    const after = await snapshot();
    expect(after.queries! - before.queries!).toBe(6);
    expect(after.mismatches).toBe(before.mismatches);
    expect(after.differing).toBe(before.differing);
  });

  it('a differing answer counts a mismatch of kind answer and logs a readable diff; the client gets our answer', async () => {
    const before = await snapshot();
    const got = dnsPacket.decode(await unaffected(shadowed, 'diff.example'));
    expect(got.answers!.map(rdata)).toEqual(['10.0.0.2']);
    await waitFor(
      'the answer mismatch',
      async () => (await metric('clusterdns_shadow_mismatches_total', { kind: 'answer' })) > before.answer!,
    );
    const after = await snapshot();
    expect(after.differing! - before.differing!).toBe(1);
    const line = shadowed.logs.find((l) => l.includes('reply differs') && l.includes('diff.example.'));
    expect(line).toBeDefined();
    expect(line).toMatch(
      new RegExp(
        `^\\[WARNING\\] plugin/shadow: reply differs from reference 127\\.0\\.0\\.1:${fake.port} for diff\\.example\\. A \\(answer\\):`,
      ),
    );
    expect(line).toMatch(/answer: reference only: diff\.example\.\s+\d+\s+IN\s+A\s+10\.0\.0\.99/);
    expect(line).toMatch(/answer: candidate only: diff\.example\.\s+\d+\s+IN\s+A\s+10\.0\.0\.2/);
  });

  it('a large differing reply is compared, and its log entry is bounded', async () => {
    const before = await snapshot();
    await unaffected(shadowed, 'big.example', { edns: 4096 });
    await waitFor(
      'the big mismatch',
      async () => (await metric('clusterdns_shadow_mismatches_total', { kind: 'answer' })) > before.answer!,
    );
    const line = shadowed.logs.find((l) => l.includes('reply differs') && l.includes('big.example.'));
    expect(line).toContain('more characters)');
    expect(line!.length).toBeLessThan(4200);
  });

  it('garbage, truncated, oversize, QR-less and duplicate replies are counted; clients are unaffected', async () => {
    const before = await snapshot();
    // `garbage` last: its exchange stays outstanding, and no flood datagram may hit its id.
    const names = ['garbageid', 'cut', 'huge', 'noqr', 'twice', 'flood', 'garbage'];
    for (const n of names) await unaffected(shadowed, `${n}.example`);
    // garbageid, cut, huge and noqr end as malformed; twice is compared once, its copy is unexpected.
    await waitFor(
      'four malformed reference replies',
      async () =>
        (await metric('clusterdns_shadow_reference_errors_total', { reason: 'malformed' })) >= before.malformed! + 4,
    );
    // garbage: 1 unexpected; twice: 1; flood: 50.
    await waitFor(
      '52 unexpected datagrams',
      async () => (await metric('clusterdns_shadow_unexpected_replies_total')) >= before.unexpected! + 52,
    );
    await waitFor(
      'twice and flood compared',
      async () => (await metric('clusterdns_shadow_compared_total')) >= before.compared! + 2,
    );
    const after = await snapshot();
    expect(after.queries! - before.queries!).toBe(names.length);
    expect(after.malformed! - before.malformed!).toBe(4);
    expect(after.unexpected! - before.unexpected!).toBe(52);
    expect(after.compared! - before.compared!).toBe(2);
    expect(after.mismatches).toBe(before.mismatches);
    const logs = shadowed.logs.join('\n');
    expect(logs).toMatch(
      /reference 127\.0\.0\.1:\d+: malformed for huge\.example\. A: reply of 60000 bytes exceeds the query's buffer size 512/,
    );
    expect(logs).toMatch(/malformed for noqr\.example\. A: QR bit not set/);
    expect(logs).toMatch(/malformed for cut\.example\. A: malformed: reference reply: /);
    // The garbage exchange is still waiting: it ends by timeout (60 s here) or at shutdown.
    expect(await metric('clusterdns_shadow_outstanding')).toBeGreaterThanOrEqual(1);
  });

  it('the client is answered while the reference has not replied yet', async () => {
    const before = await snapshot();
    await unaffected(shadowed, 'slow.example');
    await unaffected(shadowed, 'slow.example');
    await waitFor('the reference to hold two replies', () => fake.heldCount === 2);
    expect(await metric('clusterdns_shadow_compared_total')).toBe(before.compared);
    fake.release();
    await waitFor(
      'two comparisons',
      async () => (await metric('clusterdns_shadow_compared_total')) >= before.compared! + 2,
    );
    expect(await metric('clusterdns_shadow_mismatches_total')).toBe(before.mismatches);
  });

  it('TCP clients are shadowed too (compared as the UDP reply)', async () => {
    const before = await snapshot();
    const [tcp] = await tcpQueries(shadowed.port, [encodeQuery('same.example', 'A', { id: 7 })]);
    expect(tcp!.answers!.map(rdata)).toEqual(['10.0.0.1']);
    await waitFor(
      'the TCP query compared',
      async () => (await metric('clusterdns_shadow_compared_total')) >= before.compared! + 1,
    );
    expect((await snapshot()).mismatches).toBe(before.mismatches);
  });

  it('a silent reference and wrong ids end in timeouts', async () => {
    const before = await snapshot();
    await unaffected(quick, 'silent.example');
    await unaffected(quick, 'wrongid.example');
    await unaffected(quick, 'short.example');
    await waitFor(
      'three timeouts',
      async () =>
        (await metric('clusterdns_shadow_reference_errors_total', { reason: 'timeout' })) >= before.timeout! + 3,
    );
    await waitFor(
      'two unexpected datagrams',
      async () => (await metric('clusterdns_shadow_unexpected_replies_total')) >= before.unexpected! + 2,
    );
    const after = await snapshot();
    expect(after.unexpected! - before.unexpected!).toBe(2);
    expect(after.timeout! - before.timeout!).toBe(3);
    expect(after.mismatches).toBe(before.mismatches);
    expect(quick.logs.join('\n')).toMatch(
      /reference 127\.0\.0\.1:\d+: timeout for silent\.example\. A: no reply within 100ms/,
    );
  });
});

describe('shadow plugin: references and reloads', () => {
  it('several references (IPv4 and IPv6) are used round robin', async () => {
    const reference = await startServer(`example {\n${hostsBlock(false)}\n}\n`);
    const v4 = await FakeReference.start(reference.port);
    const v6 = await FakeReference.start(reference.port, '::1');
    const s = await startServer(`example {\n  shadow 127.0.0.1:${v4.port} [::1]:${v6.port}\n${hostsBlock(false)}\n}\n`);
    try {
      const before = await snapshot();
      for (let i = 0; i < 6; i++) await udpExchange(s.port, encodeQuery('same.example', 'A'));
      await waitFor(
        '6 comparisons',
        async () => (await metric('clusterdns_shadow_compared_total')) >= before.compared! + 6,
      );
      expect(v4.received.length).toBe(3);
      expect(v6.received.length).toBe(3);
      expect((await snapshot()).mismatches).toBe(before.mismatches);
    } finally {
      await s.stop();
      await reference.stop();
      v4.close();
      v6.close();
    }
  });

  it('a reference its socket cannot connect to is logged at start, its copies count as send errors, clients are unaffected', async () => {
    // A link-local address without a zone: the kernel refuses the UDP connect (EINVAL) before any
    // packet exists, so nothing leaves the machine.
    const s = await startServer(`example {\n  shadow [fe80::1]:53\n${hostsBlock(false)}\n}\n`);
    try {
      expect(s.logs).toContainEqual(
        expect.stringMatching(/^\[ERROR\] plugin\/shadow: cannot open a socket to reference \[fe80::1\]:53: /),
      );
      const before = await metric('clusterdns_shadow_reference_errors_total', { reason: 'send' });
      expect(rdata(dnsPacket.decode(await udpExchange(s.port, encodeQuery('same.example', 'A'))).answers![0]!)).toBe(
        '10.0.0.1',
      );
      await waitFor(
        'a send error',
        async () => (await metric('clusterdns_shadow_reference_errors_total', { reason: 'send' })) >= before + 1,
      );
      expect(s.logs.join('\n')).toMatch(/reference \[fe80::1\]:53: send for same\.example\. A: no socket/);
    } finally {
      await s.stop();
    }
  });

  it('a host name reference is resolved at start-up (localhost, from /etc/hosts)', async () => {
    const reference = await startServer(`example {\n${hostsBlock(false)}\n}\n`);
    const { address } = await lookup('localhost');
    const fake = await FakeReference.start(reference.port, address);
    const s = await startServer(`example {\n  shadow localhost:${fake.port}\n${hostsBlock(false)}\n}\n`);
    try {
      const before = await snapshot();
      await udpExchange(s.port, encodeQuery('same.example', 'A'));
      await waitFor(
        'a comparison',
        async () => (await metric('clusterdns_shadow_compared_total')) >= before.compared! + 1,
      );
      expect(fake.received).toEqual(['same']);
    } finally {
      await s.stop();
      await reference.stop();
      fake.close();
    }
  });

  it('a reload to another reference moves the copies there; a reload without shadow stops them', async () => {
    const reference = await startServer(`example {\n${hostsBlock(false)}\n}\n`);
    const a = await FakeReference.start(reference.port);
    const b = await FakeReference.start(reference.port);
    const conf = (ref: string): string => `example {\n  shadow 127.0.0.1:${ref}\n${hostsBlock(false)}\n}\n`;
    const s = await startServer(conf(String(a.port)));
    try {
      const before = await snapshot();
      await udpExchange(s.port, encodeQuery('same.example', 'A'));
      await waitFor('a copy at a', () => a.received.length === 1);
      await waitFor(
        'its comparison',
        async () => (await metric('clusterdns_shadow_compared_total')) >= before.compared! + 1,
      );
      expect(await s.reload(conf(String(b.port)))).toBe(true);
      await udpExchange(s.port, encodeQuery('same.example', 'A'));
      await waitFor('a copy at b', () => b.received.length === 1);
      await waitFor(
        '2 comparisons',
        async () => (await metric('clusterdns_shadow_compared_total')) >= before.compared! + 2,
      );
      expect(await s.reload(`example {\n${hostsBlock(false)}\n}\n`)).toBe(true);
      const r = dnsPacket.decode(await udpExchange(s.port, encodeQuery('same.example', 'A')));
      expect(r.answers!.map(rdata)).toEqual(['10.0.0.1']);
      expect((await snapshot()).queries! - before.queries!).toBe(2);
      expect(a.received.length + b.received.length).toBe(2);
    } finally {
      await s.stop();
      await reference.stop();
      a.close();
      b.close();
    }
  });
});

describe('shadow plugin: dead reference and overload', () => {
  it('with nothing listening at the reference, clients are answered and the failures counted', async () => {
    const deadPort = await freePort();
    const control = await startServer(`example {\n${hostsBlock(false)}\n}\n`);
    const s = await startServer(
      `example {\n  shadow 127.0.0.1:${deadPort} {\n    timeout 200ms\n  }\n${hostsBlock(false)}\n}\n`,
    );
    try {
      const before = await snapshot();
      for (let i = 0; i < 20; i++) {
        const packet = encodeQuery('same.example', 'A', { id: i });
        const [got, want] = await Promise.all([udpExchange(s.port, packet), udpExchange(control.port, packet)]);
        expect(got.equals(want)).toBe(true);
      }
      // Every exchange ends once: refused (ICMP port unreachable on loopback) or, failing that, timeout.
      await waitFor('20 failed exchanges', async () => {
        const now = await snapshot();
        return now.refused! + now.timeout! - before.refused! - before.timeout! >= 20;
      });
      const after = await snapshot();
      expect(after.queries! - before.queries!).toBe(20);
      expect(after.refused! + after.timeout! - before.refused! - before.timeout!).toBe(20);
      expect(after.compared).toBe(before.compared);
    } finally {
      await s.stop();
      await control.stop();
    }
  });

  it('max_outstanding bounds the exchanges in flight; the rest are dropped and counted', async () => {
    const silent = dgram.createSocket('udp4');
    const port = await freePort();
    let got = 0;
    silent.on('message', () => got++);
    await new Promise<void>((resolve) => silent.bind(port, '127.0.0.1', () => resolve()));
    const s = await startServer(
      `example {\n  shadow 127.0.0.1:${port} {\n    timeout 1h\n    max_outstanding 5\n  }\n${hostsBlock(false)}\n}\n`,
    );
    try {
      const before = await snapshot();
      const replies = await Promise.all(
        Array.from({ length: 30 }, (_, i) => udpExchange(s.port, encodeQuery('same.example', 'A', { id: i }))),
      );
      for (const r of replies) expect(dnsPacket.decode(r).answers!.map(rdata)).toEqual(['10.0.0.1']);
      await waitFor('5 copies at the reference', () => got === 5);
      const after = await snapshot();
      expect(after.queries! - before.queries!).toBe(5);
      expect(after.dropped! - before.dropped!).toBe(25);
      expect(await metric('clusterdns_shadow_outstanding')).toBeGreaterThanOrEqual(5);
      const aborted = await metric('clusterdns_shadow_reference_errors_total', { reason: 'aborted' });
      await s.stop();
      // Stopping ends the five waiting exchanges, each counted once.
      expect(await metric('clusterdns_shadow_reference_errors_total', { reason: 'aborted' })).toBe(aborted + 5);
    } finally {
      await s.stop();
      silent.close();
    }
  });

  it('fraction 0 keeps the plugin out of the chain', async () => {
    const s = await startServer(`example {\n  shadow 127.0.0.1:9 {\n    fraction 0\n  }\n${hostsBlock(false)}\n}\n`);
    try {
      const before = await snapshot();
      const r = dnsPacket.decode(await udpExchange(s.port, encodeQuery('same.example', 'A')));
      expect(r.answers!.map(rdata)).toEqual(['10.0.0.1']);
      expect((await snapshot()).queries).toBe(before.queries);
    } finally {
      await s.stop();
    }
  });
});
