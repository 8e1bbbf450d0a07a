/** RDATA of SVCB and HTTPS (RFC 9460): the SvcParam keys and values as miekg/dns reads them. */
import { isIP } from 'node:net';
import { decodeBase64, ipv6Bytes, parseUint, u16, unescapeString } from './fields.js';
import { V } from './lexer.js';
import { wireName } from './names.js';
import { RdataError, type Parsed, type Rdata } from './rdata-reader.js';

const SVCB_KEYS: Readonly<Record<string, number>> = {
  mandatory: 0,
  alpn: 1,
  'no-default-alpn': 2,
  port: 3,
  ipv4hint: 4,
  ech: 5,
  ipv6hint: 6,
  dohpath: 7,
  ohttp: 8,
};

/** miekg's svcbStringToKey: a key name or `keyNNN` (no leading zero, not an assigned key); 65535 when invalid. */
function svcbKey(s: string): number {
  if (s.startsWith('key')) {
    const n = parseUint(s.slice(3), 16);
    if (n === undefined || n === 65535 || s[3] === '0' || Object.values(SVCB_KEYS).includes(n)) return 65535;
    return n;
  }
  return Object.hasOwn(SVCB_KEYS, s) ? SVCB_KEYS[s]! : 65535;
}

/** One SvcParam value in wire form; throws its miekg/dns error text. */
function svcbValue(key: number, v: string): Buffer {
  switch (key) {
    case 0: {
      const keys = v === '' ? [] : v.split(',').map(svcbKey);
      return Buffer.concat(keys.sort((a, b) => a - b).map(u16));
    }
    case 1: {
      if (v === '') return Buffer.alloc(0);
      const ids: Buffer[] = [];
      let cur: number[] = [];
      const bytes = unescapeString(v);
      for (let i = 0; i < bytes.length; i++) {
        let c = bytes[i]!;
        if (c === 0x2c) {
          if (cur.length === 0) throw new Error('bad svcbalpn: empty protocol identifier');
          ids.push(Buffer.from([cur.length, ...cur]));
          cur = [];
          continue;
        }
        if (c === 0x5c) {
          if (i + 1 >= bytes.length) throw new Error('bad svcbalpn: unterminated escape decoding comma-separated list');
          c = bytes[++i]!;
          if (c !== 0x5c && c !== 0x2c)
            throw new Error('bad svcbalpn: bad escaped character decoding comma-separated list');
        }
        cur.push(c);
      }
      if (cur.length === 0) throw new Error('bad svcbalpn: last protocol identifier empty');
      ids.push(Buffer.from([cur.length, ...cur]));
      return Buffer.concat(ids);
    }
    case 2:
      if (v !== '') throw new Error('bad svcbnodefaultalpn: no-default-alpn must have no value');
      return Buffer.alloc(0);
    case 3: {
      const n = parseUint(v, 16);
      if (n === undefined) throw new Error('bad svcbport: port out of range');
      return u16(n);
    }
    case 4: {
      if (v === '') throw new Error('bad svcbipv4hint: empty hint');
      if (v.includes(':')) throw new Error('bad svcbipv4hint: expected ipv4, got ipv6');
      return Buffer.concat(
        v.split(',').map((ip) => {
          if (isIP(ip) !== 4) throw new Error('bad svcbipv4hint: bad ip');
          return Buffer.from(ip.split('.').map(Number));
        }),
      );
    }
    case 5: {
      const b = decodeBase64(v);
      if (!b) throw new Error('bad svcbech: bad base64 ech');
      return b;
    }
    case 6: {
      if (v === '') throw new Error('bad svcbipv6hint: empty hint');
      return Buffer.concat(
        v.split(',').map((ip) => {
          if (isIP(ip) !== 6) throw new Error('bad svcbipv6hint: bad ip');
          if (/^::ffff:[\d.]+$/i.test(ip)) throw new Error('bad svcbipv6hint: expected ipv6, got ipv4-mapped-ipv6');
          return ipv6Bytes(ip);
        }),
      );
    }
    case 8:
      if (v !== '') throw new Error('bad svcbotthp: svcbotthp must have no value');
      return Buffer.alloc(0);
    default:
      // dohpath and keyNNN: the (unescaped) bytes.
      return unescapeString(v);
  }
}

/** SVCB/HTTPS (RFC 9460): priority, target, then `key[=value]` pairs, written sorted by key. */
export function svcb(p: Rdata): Parsed {
  const pri = p.uint(p.next(), 16, 'bad SVCB priority');
  const target = p.name(p.field(), 'bad SVCB Target');
  const params = new Map<number, Buffer>();
  let canHaveNextKey = true;
  let l = p.next();
  while (l.value !== V.Newline && l.value !== V.EOF) {
    switch (l.value) {
      case V.String: {
        if (!canHaveNextKey) throw new RdataError('bad SVCB value quotation', l);
        const idx = l.token.indexOf('=');
        let key: string;
        let value = '';
        if (idx < 0) key = l.token;
        else if (idx === 0) throw new RdataError('bad SVCB key', l);
        else {
          key = l.token.slice(0, idx);
          value = l.token.slice(idx + 1);
          if (value === '') {
            l = p.next();
            if (l.value === V.Quote) {
              canHaveNextKey = false;
              l = p.next();
              if (l.value === V.String) {
                value = l.token;
                l = p.next();
                if (l.value !== V.Quote) throw new RdataError('SVCB unterminated value', l);
              } else if (l.value !== V.Quote) throw new RdataError('bad SVCB value', l);
            }
          }
        }
        const k = svcbKey(key);
        if (k === 65535) throw new RdataError('bad SVCB key', l);
        let wire: Buffer;
        try {
          wire = svcbValue(k, value);
        } catch {
          // miekg/dns loses the wrapped error's text on the way out: the reason is empty.
          throw new RdataError('', l);
        }
        if (params.has(k)) throw new RdataError('bad SVCB key', l);
        params.set(k, wire);
        break;
      }
      case V.Quote:
        throw new RdataError("SVCB key can't contain double quotes", l);
      case V.Blank:
        canHaveNextKey = true;
        break;
      default:
        throw new RdataError('bad SVCB values', l);
    }
    l = p.next();
  }
  const parts: Buffer[] = [u16(pri), wireName(target)];
  for (const k of [...params.keys()].sort((a, b) => a - b))
    parts.push(u16(k), u16(params.get(k)!.length), params.get(k)!);
  return { rdata: Buffer.concat(parts), target };
}
