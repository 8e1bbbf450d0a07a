/**
 * The tsig plugin on real sockets: signed queries and their signed replies, each TSIG failure
 * (BADKEY, BADSIG for a wrong or truncated MAC and for HMAC-MD5, BADTIME), `require` and
 * `require_opcode`, a TSIG that is not last, and a multi-message AXFR signed message by message.
 * Requests are signed here (src/dns/tsig.ts signRequest) so that times and MACs can be made wrong.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tcpExchange } from '../../src/dns/client.js';
import { checkReply, signRequest, TsigError, type RequestKey } from '../../src/dns/tsig.js';
import { Rcode } from '../../src/dns/constants.js';
import { decode } from '../../src/dns/message.js';
import { dispenserFor } from '../../test/helpers/setup.js';
import { encodeQuery, udpExchange } from '../../test/helpers/dns.js';
import { startServer, type TestServer } from '../../test/helpers/server.js';
import { parseKeyFile, parseTsig } from './setup.js';

const SECRET = 'NoTCJU+DMqFWywaPyxSijrDEA/eC3nK0xi3AMEZuPVk=';
const KEY: RequestKey = { name: 'key1.', algorithm: 'hmac-sha256.', secret: Buffer.from(SECRET, 'base64') };
const now = (): number => Math.floor(Date.now() / 1000);

const dir = mkdtempSync(join(tmpdir(), 'tsig-test-'));
const ZONE = join(dir, 'db.example.org');
// Enough long TXT records for an AXFR of three messages (63,000 bytes of records each).
const big = Array.from({ length: 700 }, (_, i) => `t${i} 60 IN TXT "${'x'.repeat(250)}"`).join('\n');
writeFileSync(
  ZONE,
  `$ORIGIN example.org.
@ 60 IN SOA ns.example.org. hostmaster.example.org. 1 3600 600 86400 60
@ 60 IN NS ns.example.org.
ns 60 IN A 192.0.2.53
www 60 IN A 192.0.2.1
${big}
`,
);

let srv: TestServer;

beforeAll(async () => {
  srv = await startServer(`example.org {
  tsig {
    secret key1. ${SECRET}
    secret Key2.Example. ${SECRET}
    require AXFR
  }
  transfer {
    to *
  }
  file ${ZONE}
}
strict.org {
  tsig {
    secret key3. ${SECRET}
    require_opcode QUERY
  }
  whoami
}
`);
});

afterAll(async () => {
  await srv?.stop();
});

async function signed(name: string, type: string, key = KEY, time = now(), macBytes?: number) {
  const q = encodeQuery(name, type, { edns: 1232 });
  const { wire, mac } = signRequest(q, key, time, 300, macBytes);
  const reply = await udpExchange(srv.port, wire);
  return { reply, mac };
}

describe('tsig', () => {
  it('answers a signed query with a signed reply, OPT before TSIG', async () => {
    const { reply, mac } = await signed('www.example.org.', 'A');
    const m = decode(reply);
    expect(m.flags! & 0xf).toBe(Rcode.NOERROR);
    expect((m.answers?.[0] as { data?: unknown } | undefined)?.data).toBe('192.0.2.1');
    const check = checkReply(reply, mac, KEY.secret);
    expect(check?.ok).toBe(true);
    expect(check?.tsig.error).toBe(0);
    expect(check?.tsig.fudge).toBe(300);
    expect(Math.abs(check!.tsig.timeSigned - now())).toBeLessThan(5);
    expect(m.additionals?.map((r) => r.type)).toEqual(['OPT', 'TSIG']);
  });

  it('any HMAC-SHA algorithm; a key whose name is another letter case is BADKEY', async () => {
    for (const algorithm of ['hmac-sha1.', 'hmac-sha224.', 'hmac-sha384.', 'hmac-sha512.']) {
      const key = { ...KEY, algorithm };
      const { reply, mac } = await signed('www.example.org.', 'A', key);
      expect(checkReply(reply, mac, KEY.secret)?.ok).toBe(true);
    }
    const { reply } = await signed('www.example.org.', 'A', { ...KEY, name: 'Key2.Example.' });
    expect(decode(reply).flags! & 0xf).toBe(Rcode.NOTAUTH);
    expect(checkReply(reply, Buffer.alloc(0), KEY.secret)?.tsig.error).toBe(TsigError.BADKEY);
    const lower = await signed('www.example.org.', 'A', { ...KEY, name: 'key2.example.' });
    expect(decode(lower.reply).flags! & 0xf).toBe(Rcode.NOERROR);
  });

  it('NOTAUTH with an unsigned BADKEY / BADSIG TSIG', async () => {
    for (const [key, macBytes, error] of [
      [{ ...KEY, name: 'nokey.' }, undefined, TsigError.BADKEY],
      [{ ...KEY, secret: Buffer.from('wrong') }, undefined, TsigError.BADSIG],
      [{ ...KEY, algorithm: 'hmac-md5.sig-alg.reg.int.' }, undefined, TsigError.BADSIG],
      // A truncated MAC (RFC 8945 §5.2.2.1): CoreDNS's miekg/dns says BADSIG, never BADTRUNC.
      [KEY, 16, TsigError.BADSIG],
    ] as const) {
      const { reply } = await signed('www.example.org.', 'A', key, now(), macBytes);
      const m = decode(reply);
      expect(m.flags! & 0xf).toBe(Rcode.NOTAUTH);
      expect(m.answers ?? []).toEqual([]);
      const t = checkReply(reply, Buffer.alloc(0), KEY.secret)!.tsig;
      expect(t.error).toBe(error);
      expect(t.mac.length).toBe(0);
      expect(t.timeSigned).toBe(0);
    }
  });

  it('BADTIME: signed, with the client time and the server time in other data', async () => {
    const stale = now() - 3600;
    const { reply, mac } = await signed('www.example.org.', 'A', KEY, stale);
    expect(decode(reply).flags! & 0xf).toBe(Rcode.NOTAUTH);
    const check = checkReply(reply, mac, KEY.secret)!;
    expect(check.ok).toBe(true);
    expect(check.tsig.error).toBe(TsigError.BADTIME);
    expect(check.tsig.timeSigned).toBe(stale);
    expect(Math.abs(check.tsig.other.readUIntBE(0, 6) - now())).toBeLessThan(5);
  });

  it('require: an unsigned AXFR is REFUSED; require_opcode QUERY refuses every unsigned query', async () => {
    const [axfr] = await tcpExchange([encodeQuery('example.org.', 'AXFR')], { port: srv.port });
    expect(decode(axfr!).flags! & 0xf).toBe(Rcode.REFUSED);
    const plain = decode(await udpExchange(srv.port, encodeQuery('www.example.org.', 'A')));
    expect(plain.flags! & 0xf).toBe(Rcode.NOERROR);
    const strict = decode(await udpExchange(srv.port, encodeQuery('strict.org.', 'A')));
    expect(strict.flags! & 0xf).toBe(Rcode.REFUSED);
    const ok = await signed('strict.org.', 'A', { ...KEY, name: 'key3.' });
    expect(decode(ok.reply).flags! & 0xf).toBe(Rcode.NOERROR);
  });

  it('a TSIG that is not the last record is FORMERR', async () => {
    const q = encodeQuery('www.example.org.', 'A');
    const { wire } = signRequest(q, KEY, now());
    // Append an OPT after the TSIG.
    const opt = Buffer.from([0, 0, 41, 0x04, 0xd0, 0, 0, 0, 0, 0, 0]);
    const bad = Buffer.concat([wire, opt]);
    bad.writeUInt16BE(bad.readUInt16BE(10) + 1, 10);
    expect(decode(await udpExchange(srv.port, bad)).flags! & 0xf).toBe(Rcode.FORMERR);
  });

  it('signs every message of an AXFR, the later ones over the prior MAC and the timers', async () => {
    const { wire, mac } = signRequest(encodeQuery('example.org.', 'AXFR'), KEY, now());
    const msgs = await tcpExchange([wire], { port: srv.port }, (raw) => {
      const last = raw[raw.length - 1];
      if (last === undefined) return false;
      const ans = decode(last).answers ?? [];
      return raw.length > 1 && ans[ans.length - 1]?.type === 'SOA';
    });
    expect(msgs.length).toBeGreaterThanOrEqual(3);
    let prior = mac;
    let records = 0;
    msgs.forEach((m, i) => {
      const check = checkReply(m, prior, KEY.secret, i > 0)!;
      expect(check.ok, `message ${i}`).toBe(true);
      prior = check.tsig.mac;
      records += decode(m).answers?.length ?? 0;
    });
    expect(records).toBe(705);
  });
});

describe('tsig setup', () => {
  it('reads keys, zones and requirements as CoreDNS does', () => {
    const cfg = parseTsig(
      dispenserFor('tsig a.org b.org {\n secret K1 abc=\n require A AAAA\n require_opcode UPDATE\n}', 'tsig'),
      ['x.'],
    );
    expect(cfg.zones).toEqual(['a.org.', 'b.org.']);
    expect([...cfg.secrets.keys()]).toEqual(['k1.']);
    expect([...cfg.types]).toEqual([1, 28]);
    expect([...cfg.opcodes]).toEqual([5]);
  });

  it('words every mistake as the argument error after the token where reading stopped', () => {
    const err = (body: string): string => {
      try {
        parseTsig(dispenserFor(`tsig {\n ${body}\n}`, 'tsig'), ['x.']);
      } catch (e) {
        return (e as Error).message;
      }
      return '';
    };
    expect(err('secret key1.')).toContain("Wrong argument count or unexpected line ending after 'key1.'");
    expect(err('bogus x')).toContain("after 'bogus'");
    expect(err('require FOO')).toContain("after 'FOO'");
    expect(err('require')).toContain("after 'require'");
    expect(err('require_opcode NOPE')).toContain("after 'NOPE'");
    expect(err('secrets /nonexistent/keys')).toContain("after '/nonexistent/keys'");
    expect(err('secret a. x=\n secret A. y=')).toContain("after 'y='");
  });

  it('reads a named.conf key file', () => {
    expect(
      parseKeyFile(
        'key "Example." {\n  algorithm hmac-sha256;\n  secret "X28hl0BOfAL5G0jsmJWSacrwn7YRm2f6U5brnzwWEus=";\n};\n',
      ),
    ).toEqual(new Map([['example.', 'X28hl0BOfAL5G0jsmJWSacrwn7YRm2f6U5brnzwWEus=']]));
    expect(parseKeyFile('nokey\n')).toBe('unexpected token "nokey"');
    expect(parseKeyFile('key "a." {\n};\n')).toBe('expected secret for key "a."');
  });
});
