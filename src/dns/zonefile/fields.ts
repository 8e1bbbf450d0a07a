/**
 * RDATA fields from their text to wire bytes, as miekg/dns converts them: integers, TTLs, escaped
 * character strings, hex, base64, DNSSEC times, type bitmaps and IPv6 addresses.
 */

export function u8(n: number): Buffer {
  return Buffer.from([n & 0xff]);
}
export function u16(n: number): Buffer {
  const b = Buffer.alloc(2);
  b.writeUInt16BE(n & 0xffff);
  return b;
}
export function u32(n: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(n >>> 0);
  return b;
}

export function parseUint(token: string, bits: 8 | 16 | 32): number | undefined {
  if (!/^\d+$/.test(token)) return undefined;
  const n = Number(token);
  return n <= 2 ** bits - 1 ? n : undefined;
}

/** miekg's stringToTTL: `3600`, `1h30m`, `1w`. */
export function ttlFromText(token: string): number | undefined {
  let s = 0;
  let i = 0;
  for (const c of token) {
    switch (c.toLowerCase()) {
      case 's':
        s += i;
        i = 0;
        break;
      case 'm':
        s += i * 60;
        i = 0;
        break;
      case 'h':
        s += i * 3600;
        i = 0;
        break;
      case 'd':
        s += i * 86400;
        i = 0;
        break;
      case 'w':
        s += i * 604800;
        i = 0;
        break;
      default:
        if (c < '0' || c > '9') return undefined;
        i = i * 10 + (c.charCodeAt(0) - 48);
    }
  }
  return s + i > 0xffffffff ? undefined : s + i;
}

/** Character-string bytes of a token (`\X` and `\DDD` unescaped). */
export function unescapeString(s: string): Buffer {
  const out: number[] = [];
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i) & 0xff;
    if (c === 0x5c && i + 1 < s.length) {
      const ddd = s.slice(i + 1, i + 4);
      if (/^\d{3}$/.test(ddd)) {
        out.push(Number(ddd) & 0xff);
        i += 3;
      } else {
        out.push(s.charCodeAt(i + 1) & 0xff);
        i += 1;
      }
    } else out.push(c);
  }
  return Buffer.from(out);
}

/** miekg's escapedStringOffset: the string offset of the `want`-th byte, -1 when shorter. */
export function escapedStringOffset(s: string, want: number): number | undefined {
  let bytes = 0;
  let i = 0;
  while (i < s.length) {
    bytes++;
    if (s[i] !== '\\') i++;
    else if (/^\d{3}/.test(s.slice(i + 1, i + 4))) i += 4;
    else if (i + 1 >= s.length) return undefined;
    else i += 2;
    if (bytes >= want) return i;
  }
  return -1;
}

export function decodeHex(s: string): Buffer | undefined {
  if (s.length % 2 !== 0 || !/^[0-9a-fA-F]*$/.test(s)) return undefined;
  return Buffer.from(s, 'hex');
}

export function decodeBase64(s: string): Buffer | undefined {
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(s) || s.length % 4 !== 0) return undefined;
  return Buffer.from(s, 'base64');
}

/** YYYYMMDDHHmmSS → serial-arithmetic seconds as miekg's StringToTime. */
export function timeFromText(s: string): number | undefined {
  const m = /^(\d{4})(\d{2})(\d{2})(\d{2})(\d{2})(\d{2})$/.exec(s);
  if (!m) return undefined;
  const [y, mo, d, h, mi, se] = m.slice(1).map(Number) as [number, number, number, number, number, number];
  if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || se > 59) return undefined;
  const t = Date.UTC(y, mo - 1, d, h, mi, se) / 1000;
  const year68 = 2 ** 31;
  const mod = Math.max(0, Math.floor(t / year68) - 1);
  return (t - mod * year68) >>> 0;
}

/** NSEC-style type bitmap (RFC 4034 §4.1.2). */
export function typeBitmap(types: readonly number[]): Buffer {
  const sorted = [...new Set(types)].sort((a, b) => a - b);
  const parts: Buffer[] = [];
  let i = 0;
  while (i < sorted.length) {
    const win = sorted[i]! >> 8;
    const bits = Buffer.alloc(32);
    let max = 0;
    for (; i < sorted.length && sorted[i]! >> 8 === win; i++) {
      const low = sorted[i]! & 0xff;
      bits[low >> 3]! |= 0x80 >> (low & 7);
      max = Math.max(max, (low >> 3) + 1);
    }
    parts.push(Buffer.from([win, max]), bits.subarray(0, max));
  }
  return Buffer.concat(parts);
}

export function ipv6Bytes(text: string): Buffer {
  let s = text;
  const out = Buffer.alloc(16);
  const v4 = /(\d+\.\d+\.\d+\.\d+)$/.exec(s);
  let tail: number[] = [];
  if (v4) {
    tail = v4[1]!.split('.').map(Number);
    const hi = (tail[0]! << 8) | tail[1]!;
    const lo = (tail[2]! << 8) | tail[3]!;
    s = `${s.slice(0, -v4[1]!.length)}${hi.toString(16)}:${lo.toString(16)}`;
  }
  const [head, rest] = s.includes('::') ? (s.split('::') as [string, string]) : [s, undefined];
  const h = head === '' ? [] : head.split(':');
  const r = rest === undefined || rest === '' ? [] : rest.split(':');
  const groups = rest === undefined ? h : [...h, ...Array<string>(8 - h.length - r.length).fill('0'), ...r];
  groups.forEach((g, i) => out.writeUInt16BE(parseInt(g, 16), i * 2));
  return out;
}
