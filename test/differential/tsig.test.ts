/**
 * Differential: the tsig plugin against CoreDNS 1.15.0 with the same keys and zone. Each request is
 * signed once (src/dns/tsig.ts signRequest) and sent to both servers; the replies must agree on
 * the header, the records, and the TSIG each carries (its error, fudge, whether it is signed, the
 * length of its other data), and a signed reply's MAC must verify. Cases: a signed query (every
 * HMAC-SHA algorithm), BADKEY, BADSIG (wrong secret, HMAC-MD5, a truncated MAC), BADTIME, a
 * required but unsigned AXFR (REFUSED), require_opcode, a TSIG that is not last (FORMERR), a name
 * outside the plugin's zones, and a signed AXFR of several messages checked message by message;
 * `dig -y` as the client for a signed query and a signed AXFR.
 */
import { spawnSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tcpExchange } from '../../src/dns/client.js';
import { checkReply, signRequest, type RequestKey } from '../../src/dns/tsig.js';
import { encodeQuery } from '../helpers/dns.js';
import { exchange, missingBinaries, startPair, type Pair } from './harness.js';

const SECRET = 'NoTCJU+DMqFWywaPyxSijrDEA/eC3nK0xi3AMEZuPVk=';
const KEY: RequestKey = { name: 'key1.', algorithm: 'hmac-sha256.', secret: Buffer.from(SECRET, 'base64') };
const big = Array.from({ length: 600 }, (_, i) => `t${i} 60 IN TXT "${'x'.repeat(250)}"`).join('\n');
const ZONE = `$ORIGIN example.org.
@ 60 IN SOA ns.example.org. hostmaster.example.org. 7 3600 600 86400 60
@ 60 IN NS ns.example.org.
ns 60 IN A 192.0.2.53
www 60 IN A 192.0.2.1
${big}
`;
const COREFILE = `example.org:{{DNS}} {
  tsig {
    secret key1. ${SECRET}
    secrets keys.conf
    require AXFR
  }
  transfer {
    to *
  }
  file db.example.org
}
strict.example:{{DNS}} {
  tsig {
    secret key3. ${SECRET}
    require_opcode QUERY
  }
  whoami
}
other.example:{{DNS}} {
  whoami
}
`;
const KEYFILE = `key "filekey.example." {
  algorithm hmac-sha512;
  secret "${SECRET}";
};
`;

const now = (): number => Math.floor(Date.now() / 1000);
let pair: Pair | null = null;

beforeAll(async () => {
  const missing = missingBinaries();
  if (missing) throw new Error(missing);
  pair = await startPair(
    { corefile: COREFILE, files: { 'db.example.org': ZONE, 'keys.conf': KEYFILE } },
    { name: 'www.example.org.', type: 'A' },
  );
}, 60000);

afterAll(async () => {
  await pair?.stop();
});

/** What must agree between the two replies: header, records, and the TSIG's shape. */
function summary(reply: Buffer, prior: Buffer, secret: Buffer): Record<string, unknown> {
  const flags = reply.readUInt16BE(2);
  const check = checkReply(reply, prior, secret);
  const t = check?.tsig;
  return {
    flags,
    counts: [reply.readUInt16BE(4), reply.readUInt16BE(6), reply.readUInt16BE(8), reply.readUInt16BE(10)],
    tsig:
      t === undefined
        ? null
        : {
            name: t.name,
            algorithm: t.algorithm,
            error: t.error,
            fudge: t.fudge,
            signed: t.mac.length > 0,
            macOk: t.mac.length > 0 ? check?.ok : null,
            timeZero: t.timeSigned === 0,
            otherLen: t.other.length,
            origIdMatches: t.origId === reply.readUInt16BE(0),
          },
  };
}

async function both(packet: Buffer, prior: Buffer, secret = KEY.secret, proto: 'udp' | 'tcp' = 'udp') {
  const [ref, cand] = await Promise.all([
    exchange(pair!.ref.dns, packet, proto),
    exchange(pair!.cand.dns, packet, proto),
  ]);
  expect(ref, 'CoreDNS replied').not.toBeNull();
  expect(cand, 'clusterdns replied').not.toBeNull();
  return { ref: summary(ref!, prior, secret), cand: summary(cand!, prior, secret) };
}

function signed(name: string, type: string, key = KEY, time = now(), macBytes?: number) {
  return signRequest(encodeQuery(name, type, { edns: 1232, id: 4242 }), key, time, 300, macBytes);
}

describe('differential: tsig', () => {
  it('a signed query gets the same signed reply (every HMAC-SHA algorithm, keys from a file)', async () => {
    for (const algorithm of ['hmac-sha1.', 'hmac-sha224.', 'hmac-sha256.', 'hmac-sha384.', 'hmac-sha512.']) {
      const { wire, mac } = signed('www.example.org.', 'A', { ...KEY, algorithm });
      const { ref, cand } = await both(wire, mac);
      expect(cand, algorithm).toEqual(ref);
      expect((ref.tsig as { macOk: boolean }).macOk).toBe(true);
    }
    const { wire, mac } = signed('www.example.org.', 'A', { ...KEY, name: 'filekey.example.' });
    const { ref, cand } = await both(wire, mac);
    expect(cand).toEqual(ref);
  });

  it('each failure: BADKEY, BADSIG (secret, HMAC-MD5, truncated MAC), BADTIME', async () => {
    const cases: [string, { wire: Buffer; mac: Buffer }][] = [
      ['BADKEY', signed('www.example.org.', 'A', { ...KEY, name: 'nokey.' })],
      ['BADKEY (letter case)', signed('www.example.org.', 'A', { ...KEY, name: 'KEY1.' })],
      ['BADSIG', signed('www.example.org.', 'A', { ...KEY, secret: Buffer.from('another secret') })],
      ['HMAC-MD5', signed('www.example.org.', 'A', { ...KEY, algorithm: 'hmac-md5.sig-alg.reg.int.' })],
      ['truncated MAC', signed('www.example.org.', 'A', KEY, now(), 16)],
      ['BADTIME', signed('www.example.org.', 'A', KEY, now() - 7200)],
    ];
    for (const [what, { wire, mac }] of cases) {
      const { ref, cand } = await both(wire, mac);
      expect(cand, what).toEqual(ref);
      expect((ref.flags as number) & 0xf, what).toBe(9);
    }
  });

  it('require, require_opcode, a TSIG that is not last, a name outside the zones', async () => {
    for (const [what, packet] of [
      ['unsigned AXFR', encodeQuery('example.org.', 'AXFR', { id: 7 })],
      ['unsigned query, require_opcode QUERY', encodeQuery('strict.example.', 'A', { id: 8 })],
      ['unsigned query, no requirement', encodeQuery('www.example.org.', 'A', { id: 9 })],
    ] as const) {
      const proto = what.includes('AXFR') ? 'tcp' : 'udp';
      const { ref, cand } = await both(packet, Buffer.alloc(0), KEY.secret, proto);
      expect(cand, what).toEqual(ref);
    }
    const { wire } = signed('www.example.org.', 'A');
    const opt = Buffer.from([0, 0, 41, 0x04, 0xd0, 0, 0, 0, 0, 0, 0]);
    const notLast = Buffer.concat([wire, opt]);
    notLast.writeUInt16BE(notLast.readUInt16BE(10) + 1, 10);
    let r = await both(notLast, Buffer.alloc(0));
    expect(r.cand).toEqual(r.ref);
    // other.example has no tsig: the TSIG is ignored there, the reply unsigned.
    const outside = signed('other.example.', 'TXT', { ...KEY, name: 'key3.' });
    r = await both(outside.wire, outside.mac);
    expect(r.cand).toEqual(r.ref);
  });

  it('a signed AXFR: every message signed, the later ones over the prior MAC and the timers', async () => {
    const { wire, mac } = signRequest(encodeQuery('example.org.', 'AXFR', { id: 99 }), KEY, now());
    const shapes: string[][] = [];
    for (const port of [pair!.ref.dns, pair!.cand.dns]) {
      const msgs = await tcpExchange([wire], { port, timeoutMs: 20000 }, (raw) => {
        const last = raw[raw.length - 1];
        if (last === undefined || raw.length < 2) return false;
        return last.subarray(-300).includes(Buffer.from('hostmaster'));
      });
      let prior = mac;
      const shape: string[] = [];
      msgs.forEach((m, i) => {
        const check = checkReply(m, prior, KEY.secret, i > 0)!;
        expect(check.ok, `port ${port} message ${i}`).toBe(true);
        prior = check.tsig.mac;
        shape.push(`${m.readUInt16BE(2).toString(16)} an=${m.readUInt16BE(6)} ar=${m.readUInt16BE(10)}`);
      });
      shapes.push(shape);
    }
    expect(shapes[1]).toEqual(shapes[0]);
    expect(shapes[0]!.length).toBeGreaterThanOrEqual(3);
  });

  it('dig -y verifies the signed replies of both servers (query and AXFR)', () => {
    const sizes: string[] = [];
    for (const port of [pair!.ref.dns, pair!.cand.dns]) {
      const y = `hmac-sha256:key1.:${SECRET}`;
      const q = spawnSync('dig', ['@127.0.0.1', '-p', String(port), '-y', y, 'www.example.org', 'A'], {
        encoding: 'utf8',
      });
      expect(q.stdout).toContain('status: NOERROR');
      expect(q.stdout).toMatch(/TSIG\s+hmac-sha256\. \d+ 300 32 \S+ \d+ NOERROR 0/);
      expect(q.stdout + q.stderr).not.toMatch(/Couldn't verify|tsig verify failure|expected a TSIG/);
      const x = spawnSync('dig', ['@127.0.0.1', '-p', String(port), '-y', y, 'example.org', 'AXFR'], {
        encoding: 'utf8',
      });
      expect(x.stdout + x.stderr).not.toMatch(/Couldn't verify|tsig verify failure|Transfer failed/);
      sizes.push(/XFR size: (\d+ records \(messages \d+)/.exec(x.stdout)?.[1] ?? x.stdout);
    }
    expect(sizes[1]).toBe(sizes[0]);
    expect(sizes[0]).toMatch(/^\d+ records \(messages [3-9]/);
  });
});
