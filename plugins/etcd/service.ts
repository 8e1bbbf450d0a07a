/**
 * SkyDNS's service record as CoreDNS 1.15.0 reads it from etcd (plugin/etcd/msg: service.go,
 * path.go, type.go): the JSON value of one key, the key ↔ name mapping, the group filter and the
 * target naming rules. Everything here is pure; the index (index.ts) and the lookups (lookup.ts)
 * call it.
 */
import { isIP } from 'node:net';

/** One decoded value (msg.Service), with the key it was found at and the TTL the plugin chose. */
export interface Service {
  readonly host: string;
  readonly port: number;
  readonly priority: number;
  readonly weight: number;
  readonly text: string;
  readonly mail: boolean;
  readonly ttl: number;
  readonly targetStrip: number;
  readonly group: string;
  readonly key: string;
}

/** A value that is not a msg.Service: the query answers SERVFAIL with this message (as loopNodes). */
export class ServiceDecodeError extends Error {}

type Field = 'host' | 'port' | 'priority' | 'weight' | 'text' | 'mail' | 'ttl' | 'targetstrip' | 'group';
const FIELDS: readonly Field[] = ['host', 'port', 'priority', 'weight', 'text', 'mail', 'ttl', 'targetstrip', 'group'];
const INT64 = { min: -(2 ** 63), max: 2 ** 63 - 1 };
const UINT32 = { min: 0, max: 2 ** 32 - 1 };

/** Go's encoding/json field match: keys compare case-insensitively, and of several the last one in the document is kept. */
function lookupField(obj: Record<string, unknown>, name: Field): unknown {
  let found: unknown;
  for (const k of Object.keys(obj)) if (k.toLowerCase() === name) found = obj[k];
  return found;
}

function goType(v: unknown): string {
  if (typeof v === 'string') return 'string';
  if (typeof v === 'number') return 'number';
  if (typeof v === 'boolean') return 'bool';
  if (Array.isArray(v)) return 'array';
  return 'object';
}

/** Go's UnmarshalTypeError: `what` is the JSON value's kind (`number`, `string`) or, for a number that does not fit, `number <literal>`. */
function unmarshalError(key: string, field: Field, what: string, goKind: string): ServiceDecodeError {
  return new ServiceDecodeError(
    `${key}: json: cannot unmarshal ${what} into Go struct field Service.${field} of type ${goKind}`,
  );
}

function intField(key: string, field: Field, v: unknown, range: { min: number; max: number }, goKind: string): number {
  if (v === undefined || v === null) return 0;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < range.min || v > range.max)
    throw unmarshalError(key, field, typeof v === 'number' ? `number ${String(v)}` : goType(v), goKind);
  return v;
}

function strField(key: string, field: Field, v: unknown): string {
  if (v === undefined || v === null) return '';
  if (typeof v !== 'string') throw unmarshalError(key, field, goType(v), 'string');
  return v;
}

/**
 * The value of `key` as a Service (json.Unmarshal into msg.Service): unknown fields are ignored,
 * `null` leaves the zero value, a value of the wrong JSON type fails the whole lookup as in CoreDNS.
 */
export function decodeService(key: string, value: string): Service {
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch (e) {
    throw new ServiceDecodeError(`${key}: ${(e as Error).message}`);
  }
  if (parsed === null) parsed = {};
  if (typeof parsed !== 'object' || Array.isArray(parsed))
    throw new ServiceDecodeError(`${key}: json: cannot unmarshal ${goType(parsed)} into Go value of type msg.Service`);
  const o = parsed as Record<string, unknown>;
  const f = Object.fromEntries(FIELDS.map((n) => [n, lookupField(o, n)])) as Record<Field, unknown>;
  const mail = f.mail;
  if (mail !== undefined && mail !== null && typeof mail !== 'boolean')
    throw unmarshalError(key, 'mail', goType(mail), 'bool');
  return {
    host: strField(key, 'host', f.host),
    port: intField(key, 'port', f.port, INT64, 'int'),
    priority: intField(key, 'priority', f.priority, INT64, 'int'),
    weight: intField(key, 'weight', f.weight, INT64, 'int'),
    text: strField(key, 'text', f.text),
    mail: mail === true,
    ttl: intField(key, 'ttl', f.ttl, UINT32, 'uint32'),
    targetStrip: intField(key, 'targetstrip', f.targetstrip, INT64, 'int'),
    group: strField(key, 'group', f.group),
    key,
  };
}

/** What the host field holds (msg.Service.HostType): an address (Go's net.ParseIP), else a name or a text. */
export type HostType =
  | { readonly type: 'A'; readonly ip: string }
  | { readonly type: 'AAAA'; readonly ip: string }
  | { readonly type: 'CNAME' }
  | { readonly type: 'TXT' };

const V4_MAPPED = /^::ffff:(\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3})$/i;

export function hostType(s: Pick<Service, 'host' | 'text'>): HostType {
  const fam = isIP(s.host);
  if (fam === 4) return { type: 'A', ip: s.host };
  if (fam === 6) {
    // Go's To4() is non-nil for an IPv4-mapped address: it is an A record.
    const m = V4_MAPPED.exec(s.host);
    return m ? { type: 'A', ip: m[1]! } : { type: 'AAAA', ip: s.host };
  }
  return s.text.length === 0 ? { type: 'CNAME' } : { type: 'TXT' };
}

/** Is `host` an IP address as Go's net.ParseIP reads one (CNAME and PTR skip those). */
export function isAddress(host: string): boolean {
  return isIP(host) !== 0;
}

/**
 * Go's path.Join of the root `/PREFIX/` and the labels: empty segments dropped, `.` removed, `..`
 * going up (never above the root).
 */
function joinPath(prefix: string, parts: readonly string[]): string {
  const out: string[] = [];
  for (const seg of [...prefix.split('/'), ...parts]) {
    if (seg === '' || seg === '.') continue;
    if (seg === '..') out.pop();
    else out.push(seg);
  }
  return `/${out.join('/')}`;
}

/** The labels of a name (dns.SplitDomainName: split on unescaped dots; the root has none). */
function splitDomainName(name: string): string[] {
  const out: string[] = [];
  let cur = '';
  for (let i = 0; i < name.length; i++) {
    const c = name[i]!;
    if (c === '\\' && i + 1 < name.length) {
      cur += c + name[i + 1]!;
      i++;
    } else if (c === '.') {
      out.push(cur);
      cur = '';
    } else cur += c;
  }
  if (cur !== '') out.push(cur);
  return out.filter((l, i) => l !== '' || i < out.length - 1);
}

/** msg.Path: `service.staging.skydns.local.` → `/skydns/local/skydns/staging/service`. */
export function namePath(name: string, prefix: string): string {
  return joinPath(prefix, splitDomainName(name).reverse());
}

/**
 * msg.PathWithWildcard: the path of the name cut before its first `*` or `any` label (the lookup
 * then reads the subtree and keeps the keys that match the rest), and whether it was cut.
 */
export function namePathWithWildcard(name: string, prefix: string): { path: string; star: boolean } {
  const l = splitDomainName(name).reverse();
  const i = l.findIndex((k) => k === '*' || k === 'any');
  if (i >= 0) return { path: joinPath(prefix, l.slice(0, i)), star: true };
  return { path: joinPath(prefix, l), star: false };
}

/** dnsutil.Join: labels joined with dots, absolute. */
export function joinLabels(labels: readonly string[]): string {
  if (labels.length > 0 && labels[labels.length - 1] === '.') return `${labels.slice(0, -1).join('.')}.`;
  const s = labels.join('.');
  return s.endsWith('.') ? s : `${s}.`;
}

/** msg.Domain: the name a key stands for (the first path segment, the prefix, is dropped). */
export function keyDomain(key: string): string {
  const l = key.split('/');
  if (l[l.length - 1] === '') l.pop();
  const rest = l.slice(1).reverse();
  return joinLabels([l[0]!, ...rest].slice(1, l.length - 1));
}

/** dns.Fqdn. */
export function fqdnOf(s: string): string {
  return s.endsWith('.') && !s.endsWith('\\.') ? s : `${s}.`;
}

/** msg.targetStrip: drop `n` labels from the left of an absolute name (the name itself when it has too few). */
export function targetStrip(name: string, n: number): string {
  let offset = 0;
  for (let i = 0; i < n; i++) {
    const dot = nextLabel(name, offset);
    if (dot.end) return name;
    offset = dot.offset;
  }
  return name.slice(offset);
}

/** dns.NextLabel: the offset after the label at `offset`, or end. */
function nextLabel(s: string, offset: number): { offset: number; end: boolean } {
  if (s === '') return { offset: 0, end: true };
  let i = offset;
  for (; i < s.length - 1; i++) {
    if (s[i] !== '.') continue;
    let j = i - 1;
    while (j >= 0 && s[j] === '\\') j--;
    if ((j - i) % 2 === 0) continue;
    return { offset: i + 1, end: false };
  }
  return { offset: i + 1, end: true };
}

/** The target of SRV, MX and NS records: the host as a name, `targetstrip` applied. */
export function serviceTarget(s: Pick<Service, 'host' | 'targetStrip'>): string {
  const host = fqdnOf(s.host);
  return s.targetStrip > 0 ? targetStrip(host, s.targetStrip) : host;
}

/** msg.split255: the text in chunks of 255 bytes (Go strings are bytes). */
export function split255(text: string): Buffer[] {
  const b = Buffer.from(text, 'utf8');
  if (b.length < 255) return [b];
  const out: Buffer[] = [];
  for (let p = 0; p < b.length; p += 255) out.push(b.subarray(p, Math.min(p + 255, b.length)));
  // Go's loop appends an empty last chunk when the length is a multiple of 255.
  if (b.length % 255 === 0) out.push(Buffer.alloc(0));
  return out;
}

function slashes(key: string): number {
  let n = 0;
  for (let i = 0; i < key.length; i++) if (key.charCodeAt(i) === 47) n++;
  return n;
}

/**
 * msg.Group: when the shortest keys carry a group, only the services of that group (and those
 * without one) are answered; shortest keys that disagree on the group disable the filter.
 */
export function groupServices(sx: readonly Service[]): readonly Service[] {
  if (sx.length === 0) return sx;
  let group = sx[0]!.group;
  let least = slashes(sx[0]!.key);
  const length = sx.map((s) => slashes(s.key));
  for (let i = 0; i < sx.length; i++) {
    const x = length[i]!;
    if (x < least) {
      if (sx[i]!.group === '') break;
      least = x;
      group = sx[i]!.group;
    }
  }
  if (group === '') return sx;
  const ret: Service[] = [];
  for (let i = 0; i < sx.length; i++) {
    const s = sx[i]!;
    if (s.group === '') {
      ret.push(s);
      continue;
    }
    if (length[i] === least && s.group !== group) return sx;
    if (s.group === group) ret.push(s);
  }
  return ret;
}
