/**
 * One RFC 2136 transaction against a dynamic zone's records, as CoreDNS 1.15.0's
 * plugin/dynupdate/update.go and zone.go do it: the key must have an `allow` rule, the sizes are
 * bounded, prerequisites are evaluated against the current records (RFC 2136 §3.2), then the update
 * section is authorised, prescanned (§3.4.1) and applied to a copy (§3.4.2) with CoreDNS's CNAME and
 * apex SOA/NS invariants; a real change bumps the SOA serial (skipping zero) unless an accepted SOA
 * update set it. The caller swaps the copy in only when the whole transaction succeeded.
 */
import { Qtype, QTYPE_NAMES, Rcode } from '../../src/dns/constants.js';
import { isSubdomain, lowerName } from '../../src/dns/name.js';
import { canonicalRdata } from '../../src/dns/wirerecords.js';
import { nameLabels } from '../../src/dns/zonefile/names.js';
import type { ZoneRecord } from '../../src/dns/zonefile/record.js';

const CLASS_IN = 1;
const CLASS_NONE = 254;
const CLASS_ANY = 255;

export const ALL_NAMES = '*';
export const ALL_TYPES = '*';

/** One `allow KEY NAME TYPE...` rule. */
export interface Permission {
  /** Normalised key name. */
  readonly key: string;
  /** Lower-case absolute owner name, or `*`. */
  readonly name: string;
  readonly types: ReadonlySet<number>;
  readonly allTypes: boolean;
}

export interface Limits {
  readonly records: number;
  readonly bytes: number;
  readonly updateRecords: number;
}

export const DEFAULT_LIMITS: Limits = { records: 10000, bytes: 8 << 20, updateRecords: 1024 };

/** DNSSEC and zone-digest types the plugin refuses: it cannot regenerate them after an update. */
const UNSUPPORTED = new Set([24, 25, 30, 43, 46, 47, 48, 50, 51, 58, 59, 60, 63, 32768, 32769]);

export function unsupportedType(t: number): boolean {
  return UNSUPPORTED.has(t);
}

/** Query meta types (ANY, AXFR, IXFR, MAILA, MAILB, OPT, TKEY, TSIG). */
function isQueryMetaType(t: number): boolean {
  return t === 255 || t === 252 || t === 251 || t === 253 || t === 254 || t === 41 || t === 249 || t === 250;
}

/** A type miekg/dns has a record for (dns.TypeToRR): named, and not a transfer/mailbox query type. */
export function knownType(t: number): boolean {
  return QTYPE_NAMES[t] !== undefined && t !== 251 && t !== 252 && t !== 253 && t !== 254 && t !== 65535;
}

/** A type an `allow` rule may name (setup.go's validPolicyType). */
export function validPolicyType(t: number): boolean {
  if (!knownType(t) || t === 0 || unsupportedType(t)) return false;
  if (t === Qtype.ANY) return true;
  return !(t === 41 || t === 249 || t === 250);
}

function validPrerequisiteType(t: number, allowAny: boolean): boolean {
  if (!knownType(t) || t === 0) return false;
  if (t === Qtype.ANY) return allowAny;
  return !isQueryMetaType(t);
}

const lname = (r: ZoneRecord): string => lowerName(r.name);

/** Within the zone (the apex or below it). */
export function inZone(origin: string, name: string): boolean {
  return isSubdomain(lowerName(name), origin);
}

/** dns.Len of a record: the uncompressed wire length. */
export function recordLength(r: ZoneRecord): number {
  const labels = nameLabels(r.name) ?? [];
  let n = 1;
  for (const l of labels) n += l.length + 1;
  return n + 10 + r.rdata.length;
}

/** Two records are one (miekg's IsDuplicate): owner, type and RDATA, names case-insensitively; not TTL or class. */
export function sameRecord(a: ZoneRecord, b: ZoneRecord): boolean {
  return (
    lname(a) === lname(b) &&
    a.type === b.type &&
    canonicalRdata(a.type, a.rdata).equals(canonicalRdata(b.type, b.rdata))
  );
}

/** limits.check: the zone's record count and bytes. Null when within, else the reason. */
export function checkLimits(records: readonly ZoneRecord[], l: Limits): string | null {
  if (records.length > l.records) return `zone exceeds max_records (${l.records})`;
  let remaining = l.bytes;
  for (const r of records) {
    const size = recordLength(r);
    if (size > remaining) return `zone exceeds max_bytes (${l.bytes})`;
    remaining -= size;
  }
  return null;
}

/** validateRecords (zone.go): IN only, in the zone, no unsupported type, no CNAME conflict, one SOA at the apex, serial not 0. */
export function validateRecords(records: readonly ZoneRecord[], origin: string): string | null {
  let soas = 0;
  const types = new Map<string, Set<number>>();
  for (const r of records) {
    if (r.class !== CLASS_IN) return 'zone contains a non-IN record';
    if (!inZone(origin, r.name)) return 'zone contains an out-of-zone record';
    if (unsupportedType(r.type)) return `zone contains unsupported RR type ${QTYPE_NAMES[r.type]}`;
    const n = lname(r);
    let t = types.get(n);
    if (t === undefined) {
      t = new Set();
      types.set(n, t);
    }
    if ((r.type === Qtype.CNAME && t.size !== 0) || (r.type !== Qtype.CNAME && t.has(Qtype.CNAME)))
      return `zone contains CNAME data conflict at ${r.name}`;
    t.add(r.type);
    if (r.type === Qtype.SOA) {
      if (n !== origin) return 'zone contains a non-apex SOA record';
      if (soaSerial(r) === 0) return 'zone contains an SOA with serial zero';
      soas++;
    }
  }
  if (soas === 0) return 'zone has no SOA';
  if (soas !== 1) return 'zone contains more than one SOA record';
  return null;
}

function soaSerial(r: ZoneRecord): number {
  return r.rdata.length >= 20 ? r.rdata.readUInt32BE(r.rdata.length - 20) : 0;
}

/** The SOA with another serial. */
function withSerial(r: ZoneRecord, serial: number): ZoneRecord {
  const rdata = Buffer.from(r.rdata);
  rdata.writeUInt32BE(serial >>> 0, rdata.length - 20);
  return { ...r, rdata, serial: serial >>> 0 };
}

/** RFC 1982: a is greater than b (the half-way value is not). */
function serialGreater(a: number, b: number): boolean {
  return a !== b && (a - b) >>> 0 < 2 ** 31;
}

/** The result of one transaction. */
export interface UpdateResult {
  readonly rcode: number;
  /** The new records when something changed, else null. */
  readonly records: ZoneRecord[] | null;
  /** An error to log (`UPDATE for ZONE failed: …`). */
  readonly error?: string;
}

export class DynamicZone {
  constructor(
    readonly origin: string,
    private readonly permissions: readonly Permission[],
    private readonly limits: Limits,
  ) {}

  private configuredKey(key: string): boolean {
    return this.permissions.some((p) => p.key === key);
  }

  private allows(key: string, name: string, type: number): boolean {
    const n = lowerName(name);
    for (const p of this.permissions) {
      if (p.key !== key || (p.name !== ALL_NAMES && p.name !== n)) continue;
      if (p.allTypes || p.types.has(type)) return true;
    }
    return false;
  }

  /** updateLocked: `key` is the validated TSIG key's normalised name. */
  update(
    records: readonly ZoneRecord[],
    key: string,
    prerequisites: readonly ZoneRecord[],
    updates: readonly ZoneRecord[],
  ): UpdateResult {
    if (!this.configuredKey(key)) return { rcode: Rcode.REFUSED, records: null };
    const l = this.limits;
    if (prerequisites.length > l.updateRecords || updates.length > l.updateRecords - prerequisites.length)
      return { rcode: Rcode.REFUSED, records: null };
    let rc = this.checkPrerequisites(records, prerequisites);
    if (rc !== Rcode.NOERROR) return { rcode: rc, records: null };
    for (const u of updates) if (!this.allows(key, u.name, u.type)) return { rcode: Rcode.REFUSED, records: null };
    rc = this.validateUpdates(updates);
    if (rc !== Rcode.NOERROR) return { rcode: rc, records: null };
    const { out, changed, explicitSOA } = this.apply(records, updates);
    if (!changed) return { rcode: Rcode.NOERROR, records: null };
    const over = checkLimits(out, l);
    if (over !== null) return { rcode: Rcode.REFUSED, records: null, error: over };
    if (!explicitSOA) {
      const i = out.findIndex((r) => r.type === Qtype.SOA);
      if (i >= 0) {
        const next = (soaSerial(out[i]!) + 1) >>> 0;
        out[i] = withSerial(out[i]!, next === 0 ? 1 : next);
      }
    }
    const invalid = validateRecords(out, this.origin);
    if (invalid !== null) return { rcode: Rcode.SERVFAIL, records: null, error: `building candidate zone: ${invalid}` };
    return { rcode: Rcode.NOERROR, records: out };
  }

  private checkPrerequisites(records: readonly ZoneRecord[], prerequisites: readonly ZoneRecord[]): number {
    const valueDependent = new Map<string, ZoneRecord[]>();
    for (const p of prerequisites) {
      if (p.ttl !== 0) return Rcode.FORMERR;
      if (!inZone(this.origin, p.name)) return Rcode.NOTZONE;
      if (unsupportedType(p.type)) return Rcode.NOTIMP;
      const n = lowerName(p.name);
      switch (p.class) {
        case CLASS_ANY:
          if (p.rdata.length !== 0 || !validPrerequisiteType(p.type, true)) return Rcode.FORMERR;
          if (p.type === Qtype.ANY) {
            if (!records.some((r) => lname(r) === n)) return Rcode.NXDOMAIN;
          } else if (!records.some((r) => lname(r) === n && r.type === p.type)) return Rcode.NXRRSET;
          break;
        case CLASS_NONE:
          if (p.rdata.length !== 0 || !validPrerequisiteType(p.type, true)) return Rcode.FORMERR;
          if (p.type === Qtype.ANY) {
            if (records.some((r) => lname(r) === n)) return Rcode.YXDOMAIN;
          } else if (records.some((r) => lname(r) === n && r.type === p.type)) return Rcode.YXRRSET;
          break;
        case CLASS_IN: {
          if (!validPrerequisiteType(p.type, false)) return Rcode.FORMERR;
          const k = `${p.type} ${n}`;
          const list = valueDependent.get(k);
          if (list === undefined) valueDependent.set(k, [p]);
          else list.push(p);
          break;
        }
        default:
          return Rcode.FORMERR;
      }
    }
    for (const want of valueDependent.values()) {
      const n = lowerName(want[0]!.name);
      const have = records.filter((r) => lname(r) === n && r.type === want[0]!.type);
      if (!sameSet(have, want)) return Rcode.NXRRSET;
    }
    return Rcode.NOERROR;
  }

  private validateUpdates(updates: readonly ZoneRecord[]): number {
    for (const u of updates) {
      if (!inZone(this.origin, u.name)) return Rcode.NOTZONE;
      if (!knownType(u.type) || u.type === 0) return Rcode.FORMERR;
      switch (u.class) {
        case CLASS_IN:
          if (isQueryMetaType(u.type)) return Rcode.FORMERR;
          if (u.type === Qtype.SOA && (lowerName(u.name) !== this.origin || soaSerial(u) === 0)) return Rcode.FORMERR;
          break;
        case CLASS_ANY:
          if (u.ttl !== 0 || u.rdata.length !== 0 || (isQueryMetaType(u.type) && u.type !== Qtype.ANY))
            return Rcode.FORMERR;
          break;
        case CLASS_NONE:
          if (u.ttl !== 0 || u.type === Qtype.ANY || isQueryMetaType(u.type)) return Rcode.FORMERR;
          break;
        default:
          return Rcode.FORMERR;
      }
      if (unsupportedType(u.type)) return Rcode.NOTIMP;
    }
    return Rcode.NOERROR;
  }

  /** RFC 2136 §3.4.2 on a copy, with CoreDNS's invariants. */
  private apply(
    records0: readonly ZoneRecord[],
    updates: readonly ZoneRecord[],
  ): { out: ZoneRecord[]; changed: boolean; explicitSOA: boolean } {
    let out = [...records0];
    let changed = false;
    let explicitSOA = false;
    const remove = (match: (r: ZoneRecord) => boolean): boolean => {
      const kept = out.filter((r) => !match(r));
      const removed = kept.length !== out.length;
      out = kept;
      return removed;
    };
    for (const u of updates) {
      const n = lowerName(u.name);
      const apex = n === this.origin;
      const asIn: ZoneRecord = { ...u, class: CLASS_IN };
      if (u.class === CLASS_IN) {
        if (u.type === Qtype.SOA) {
          const cur = out.find((r) => r.type === Qtype.SOA && lname(r) === this.origin);
          if (cur === undefined || !serialGreater(soaSerial(u), soaSerial(cur))) continue;
          remove((r) => lname(r) === n && r.type === Qtype.SOA);
          out.push(withSerial(asIn, soaSerial(u)));
          changed = true;
          explicitSOA = true;
        } else if (u.type === Qtype.CNAME) {
          if (out.some((r) => lname(r) === n && r.type !== Qtype.CNAME)) continue;
          const existing = out.filter((r) => lname(r) === n && r.type === Qtype.CNAME);
          if (existing.length === 1 && sameRecord(existing[0]!, u) && existing[0]!.ttl === u.ttl) continue;
          remove((r) => lname(r) === n && r.type === Qtype.CNAME);
          out.push(asIn);
          changed = true;
        } else {
          if (out.some((r) => lname(r) === n && r.type === Qtype.CNAME)) continue;
          const i = out.findIndex((r) => sameRecord(r, u));
          if (i >= 0) {
            if (out[i]!.ttl !== u.ttl) {
              out[i] = asIn;
              changed = true;
            }
            continue;
          }
          out.push(asIn);
          changed = true;
        }
      } else if (u.class === CLASS_ANY) {
        if (u.type === Qtype.ANY) {
          if (remove((r) => lname(r) === n && !(apex && (r.type === Qtype.SOA || r.type === Qtype.NS)))) changed = true;
          continue;
        }
        if (apex && (u.type === Qtype.SOA || u.type === Qtype.NS)) continue;
        if (remove((r) => lname(r) === n && r.type === u.type)) changed = true;
      } else if (u.class === CLASS_NONE) {
        if (apex && u.type === Qtype.SOA) continue;
        if (apex && u.type === Qtype.NS && out.filter((r) => lname(r) === n && r.type === Qtype.NS).length <= 1)
          continue;
        const i = out.findIndex((r) => sameRecord(r, u));
        if (i >= 0) {
          out.splice(i, 1);
          changed = true;
        }
      }
    }
    return { out, changed, explicitSOA };
  }
}

/** The two lists hold the same records, duplicates ignored (sameRRset). */
function sameSet(have0: readonly ZoneRecord[], want0: readonly ZoneRecord[]): boolean {
  const uniq = (l: readonly ZoneRecord[]): ZoneRecord[] => {
    const out: ZoneRecord[] = [];
    for (const r of l) if (!out.some((o) => sameRecord(o, r))) out.push(r);
    return out;
  };
  const have = uniq(have0);
  const want = uniq(want0);
  if (have.length !== want.length) return false;
  const used = have.map(() => false);
  for (const w of want) {
    const i = have.findIndex((h, j) => !used[j] && sameRecord(h, w));
    if (i < 0) return false;
    used[i] = true;
  }
  return true;
}
