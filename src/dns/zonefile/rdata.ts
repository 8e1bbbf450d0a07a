/** The RDATA of each record type from its text (miekg/dns's per-type parsers) and the RFC 3597 form. */
import { isIP } from 'node:net';
import { dnskey, ds, nsec, rrsig } from './dnssec.js';
import { decodeBase64, decodeHex, ipv6Bytes, parseUint, ttlFromText, u16, u32, u8, unescapeString } from './fields.js';
import { V, type Lex } from './lexer.js';
import { wireName } from './names.js';
import { RdataError, type Parsed, type Rdata } from './rdata-reader.js';
import { svcb } from './svcb.js';

function charString(s: string, reason: string, l: Lex | null): Buffer {
  const b = unescapeString(s);
  if (b.length > 255) throw new RdataError(reason, l);
  return Buffer.concat([u8(b.length), b]);
}

function oneName(p: Rdata, tname: string, field: string): Parsed {
  const n = p.name(p.next(), `bad ${tname} ${field}`);
  p.end();
  return { rdata: wireName(n), target: n };
}

function prefName(p: Rdata, tname: string, pref: string, field: string): Parsed {
  const pr = p.uint(p.next(), 16, `bad ${tname} ${pref}`);
  const n = p.name(p.field(), `bad ${tname} ${field}`);
  p.end();
  return { rdata: Buffer.concat([u16(pr), wireName(n)]), target: n };
}

function txtLike(p: Rdata, tname: string): Parsed {
  const parts = p.txt(`bad ${tname} Txt`);
  return { rdata: Buffer.concat(parts.map((s) => charString(s, `bad ${tname} Txt`, null))) };
}

/** Parse the RDATA of `type`; undefined when clusterdns has no text parser for the type. */
export function parseRdata(type: number, p: Rdata): Parsed | undefined {
  switch (type) {
    case 1: {
      const l = p.next();
      if (l.err || l.token.includes(':') || isIP(l.token) !== 4) throw new RdataError('bad A A', l);
      p.end();
      return { rdata: Buffer.from(l.token.split('.').map(Number)) };
    }
    case 28: {
      const l = p.next();
      if (l.err || !l.token.includes(':') || (isIP(l.token) !== 6 && !/^::ffff:\d+\.\d+\.\d+\.\d+$/i.test(l.token)))
        throw new RdataError('bad AAAA AAAA', l);
      p.end();
      return { rdata: ipv6Bytes(l.token) };
    }
    case 2:
      return oneName(p, 'NS', 'Ns');
    case 3:
      return oneName(p, 'MD', 'Md');
    case 4:
      return oneName(p, 'MF', 'Mf');
    case 5:
      return oneName(p, 'CNAME', 'Target');
    case 7:
      return oneName(p, 'MB', 'Mb');
    case 8:
      return oneName(p, 'MG', 'Mg');
    case 9:
      return oneName(p, 'MR', 'Mr');
    case 12:
      return oneName(p, 'PTR', 'Ptr');
    case 23:
      return oneName(p, 'NSAP-PTR', 'Ptr');
    case 39:
      return oneName(p, 'DNAME', 'Target');
    case 6: {
      const ns = p.name(p.next(), 'bad SOA Ns');
      const mbox = p.name(p.field(), 'bad SOA Mbox');
      p.next();
      const v: number[] = [];
      for (let i = 0; i < 5; i++) {
        const l = p.next();
        if (l.err) throw new RdataError('bad SOA zone parameter', l);
        let n = parseUint(l.token, 32);
        if (n === undefined) {
          if (i === 0) throw new RdataError('bad SOA zone parameter', l);
          n = ttlFromText(l.token);
          if (n === undefined) throw new RdataError('bad SOA zone parameter', l);
        }
        v.push(n);
        if (i < 4) p.next();
      }
      p.end();
      return { rdata: Buffer.concat([wireName(ns), wireName(mbox), ...v.map(u32)]), serial: v[0]! };
    }
    case 15:
      return prefName(p, 'MX', 'Pref', 'Mx');
    case 18:
      return prefName(p, 'AFSDB', 'Subtype', 'Hostname');
    case 21:
      return prefName(p, 'RT', 'Preference', 'Host');
    case 36:
      return prefName(p, 'KX', 'Pref', 'Exchanger');
    case 16:
      return txtLike(p, 'TXT');
    case 99:
      return txtLike(p, 'SPF');
    case 258:
      return txtLike(p, 'AVC');
    case 56:
      return txtLike(p, 'NINFO');
    case 261:
      return txtLike(p, 'RESINFO');
    case 13: {
      let chunks = p.txt('bad HINFO Fields');
      if (chunks.length === 0) return { rdata: Buffer.alloc(0) };
      if (chunks.length === 1) {
        const f = chunks[0]!.split(/\s+/).filter((x) => x !== '');
        chunks = f.length > 1 ? f : [chunks[0]!, ''];
      }
      return {
        rdata: Buffer.concat([
          charString(chunks[0]!, 'bad HINFO Fields', null),
          charString(chunks.slice(1).join(' '), 'bad HINFO Fields', null),
        ]),
      };
    }
    case 17:
    case 14: {
      const a = p.name(p.next(), type === 17 ? 'bad RP Mbox' : 'bad MINFO Rmail');
      const b = p.name(p.field(), type === 17 ? 'bad RP Txt' : 'bad MINFO Email');
      p.end();
      return { rdata: Buffer.concat([wireName(a), wireName(b)]) };
    }
    case 33: {
      const pri = p.uint(p.next(), 16, 'bad SRV Priority');
      const w = p.uint(p.field(), 16, 'bad SRV Weight');
      const port = p.uint(p.field(), 16, 'bad SRV Port');
      const t = p.name(p.field(), 'bad SRV Target');
      p.end();
      return { rdata: Buffer.concat([u16(pri), u16(w), u16(port), wireName(t)]), target: t };
    }
    case 35: {
      const order = p.uint(p.next(), 16, 'bad NAPTR Order');
      const pref = p.uint(p.field(), 16, 'bad NAPTR Preference');
      const flags = p.quoted('bad NAPTR Flags');
      const service = p.quoted('bad NAPTR Service');
      const regexp = p.quoted('bad NAPTR Regexp');
      const repl = p.name(p.field(), 'bad NAPTR Replacement');
      p.end();
      return {
        rdata: Buffer.concat([
          u16(order),
          u16(pref),
          charString(flags, 'bad NAPTR Flags', null),
          charString(service, 'bad NAPTR Service', null),
          charString(regexp, 'bad NAPTR Regexp', null),
          wireName(repl),
        ]),
      };
    }
    case 257: {
      const flag = p.uint(p.next(), 8, 'bad CAA Flag');
      const l = p.field();
      if (l.value !== V.String) throw new RdataError('bad CAA Tag', l);
      p.next();
      const v = p.txt('bad CAA Value');
      if (v.length !== 1) throw new RdataError('bad CAA Value', l);
      const tag = Buffer.from(l.token, 'latin1');
      return { rdata: Buffer.concat([u8(flag), u8(tag.length), tag, unescapeString(v[0]!)]) };
    }
    case 256: {
      const pri = p.uint(p.next(), 16, 'bad URI Priority');
      const l = p.field();
      const w = p.uint(l, 16, 'bad URI Weight');
      p.next();
      const v = p.txt('bad URI Target');
      if (v.length !== 1) throw new RdataError('bad URI Target', l);
      return { rdata: Buffer.concat([u16(pri), u16(w), unescapeString(v[0]!)]) };
    }
    case 43:
      return ds(p, 'DS');
    case 59:
      return ds(p, 'CDS');
    case 32769:
      return ds(p, 'DLV');
    case 32768:
      return ds(p, 'TA');
    case 48:
      return dnskey(p, 'DNSKEY');
    case 25:
      return dnskey(p, 'KEY');
    case 60:
      return dnskey(p, 'CDNSKEY');
    case 46:
      return rrsig(p, 'RRSIG');
    case 24:
      return rrsig(p, 'RRSIG');
    case 47:
      return nsec(p, 'NSEC');
    case 30:
      return nsec(p, 'NSEC');
    case 44: {
      const alg = p.uint(p.next(), 8, 'bad SSHFP Algorithm');
      const t = p.uint(p.field(), 8, 'bad SSHFP Type');
      p.next();
      const fp = decodeHex(p.ending('bad SSHFP Fingerprint'));
      if (!fp) throw new RdataError('bad SSHFP Fingerprint', null);
      return { rdata: Buffer.concat([u8(alg), u8(t), fp]) };
    }
    case 52:
    case 53: {
      const tname = type === 52 ? 'TLSA' : 'SMIMEA';
      const usage = p.uint(p.next(), 8, `bad ${tname} Usage`);
      const sel = p.uint(p.field(), 8, `bad ${tname} Selector`);
      const mt = p.uint(p.field(), 8, `bad ${tname} MatchingType`);
      const cert = decodeHex(p.ending(`bad ${tname} Certificate`));
      if (!cert) throw new RdataError(`bad ${tname} Certificate`, null);
      return { rdata: Buffer.concat([u8(usage), u8(sel), u8(mt), cert]) };
    }
    case 61:
    case 49: {
      const tname = type === 61 ? 'OPENPGPKEY' : 'DHCID';
      const s = p.ending(`bad ${tname} ${type === 61 ? 'PublicKey' : 'Digest'}`);
      const b = decodeBase64(s);
      if (!b) throw new RdataError(`bad ${tname} ${type === 61 ? 'PublicKey' : 'Digest'}`, null);
      return { rdata: b };
    }
    case 64:
    case 65:
      return svcb(p);
    case 50:
    case 51:
      // Read (and dropped with CoreDNS's error when the zone is built): NSEC3 zones are not served.
      p.ending(`bad ${type === 50 ? 'NSEC3' : 'NSEC3PARAM'}`);
      return { rdata: Buffer.alloc(0) };
    default:
      return undefined;
  }
}

/** `\# LEN HEX...` (RFC 3597). */
export function generic(p: Rdata): Parsed {
  let l = p.next();
  if (l.token !== '\\#') throw new RdataError('bad RFC3597 Rdata', l);
  l = p.field();
  const len = parseUint(l.token, 16);
  if (len === undefined || l.err) throw new RdataError('bad RFC3597 Rdata ', l);
  const hex = p.ending('bad RFC3597 Rdata');
  if (len * 2 !== hex.length) throw new RdataError('bad RFC3597 Rdata', l);
  const b = decodeHex(hex);
  if (!b) throw new RdataError('bad RFC3597 Rdata', l);
  return { rdata: b };
}
