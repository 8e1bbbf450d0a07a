/**
 * Presentation-format domain names in a master file: their labels (with `\\.` and `\\DDD` escapes),
 * canonical text, and miekg/dns's rules for `@` and names relative to the origin.
 */
import { escapeLabelByte } from '../escape.js';

/**
 * The labels of a presentation-format name (`\.`, `\DDD` escapes; tokens are byte strings in
 * latin1), or undefined when it is not a valid domain name (empty label, label over 63 octets,
 * name over 255 octets on the wire). `a.b` and `a.b.` give the same labels.
 */
export function nameLabels(name: string): Buffer[] | undefined {
  if (name === '') return undefined;
  if (name === '.') return [];
  const labels: Buffer[] = [];
  let cur: number[] = [];
  let wire = 1;
  let i = 0;
  for (; i < name.length; i++) {
    const c = name.charCodeAt(i) & 0xff;
    if (c === 0x5c) {
      const ddd = name.slice(i + 1, i + 4);
      if (/^\d{3}$/.test(ddd)) {
        cur.push(Number(ddd) & 0xff);
        i += 3;
      } else if (i + 1 < name.length) {
        cur.push(name.charCodeAt(i + 1) & 0xff);
        i += 1;
      } else {
        cur.push(0x5c);
      }
    } else if (c === 0x2e) {
      if (cur.length === 0 || cur.length > 63) return undefined;
      labels.push(Buffer.from(cur));
      wire += cur.length + 1;
      cur = [];
    } else {
      cur.push(c);
    }
  }
  if (cur.length > 0) {
    if (cur.length > 63) return undefined;
    labels.push(Buffer.from(cur));
    wire += cur.length + 1;
  }
  if (wire > 255) return undefined;
  return labels;
}

/** Text of wire labels, escaped as clusterdns prints names read from the wire (src/dns/escape.ts). */
export function labelsText(labels: readonly Buffer[]): string {
  if (labels.length === 0) return '.';
  let s = '';
  for (const l of labels) {
    for (const c of l) s += escapeLabelByte(c);
    s += '.';
  }
  return s;
}

/** A name's canonical text (escapes normalised), or undefined when it is not a valid name. */
export function canonicalName(name: string): string | undefined {
  const l = nameLabels(name);
  return l ? labelsText(l) : undefined;
}

export function isFqdn(s: string): boolean {
  // A trailing dot that is not escaped.
  if (!s.endsWith('.')) return false;
  let n = 0;
  for (let i = s.length - 2; i >= 0 && s[i] === '\\'; i--) n++;
  return n % 2 === 0;
}

/** miekg's toAbsoluteName: `@`, absolute names, relative names + origin. Undefined when invalid. */
export function toAbsolute(name: string, origin: string): string | undefined {
  if (name === '@') return origin === '' ? undefined : origin;
  if (name === '\n' || name === '') return undefined;
  if (!nameLabels(name)) return undefined;
  if (isFqdn(name)) return name;
  if (origin === '') return undefined;
  const joined = origin === '.' ? `${name}.` : `${name}.${origin}`;
  return nameLabels(joined) ? joined : undefined;
}

export function wireName(name: string): Buffer {
  const labels = nameLabels(name) ?? [];
  const parts: Buffer[] = [];
  for (const l of labels) parts.push(Buffer.from([l.length]), l);
  parts.push(Buffer.from([0]));
  return Buffer.concat(parts);
}
