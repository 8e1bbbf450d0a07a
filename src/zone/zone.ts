/**
 * One zone read from a master file, as the file and auto plugins serve it (docs/plugins.md, file): its apex (SOA, NS and their signatures) and
 * every other name's records, with lookups that answer as CoreDNS 1.15.0's file plugin does —
 * delegations with glue, CNAME chains inside the zone, DNAME substitution, wildcards (RFC 4592, an
 * empty non-terminal closer than the wildcard blocks it), NXDOMAIN/NODATA with the SOA, and the
 * DNSSEC records (RRSIG, NSEC, DS) added when the query has the DO bit.
 */
import type { Answer } from 'dns-packet';
import { lowerName, toPacketName } from '../dns/name.js';
import { T } from '../dns/zonefile/mnemonics.js';
import type { ZoneRecord } from '../dns/zonefile/record.js';
import { canonicalKey, compareKeys, Elem, labelCount } from './elem.js';
import { asteriskLabel, isSub, labelStarts, nextLabel, substituteDNAME } from './labels.js';
import { svcbTarget, toAnswer, type RR } from './rr.js';

/** Results of a lookup (CoreDNS's file.Result). */
export const enum Result {
  Success,
  NameError,
  Delegation,
  NoData,
  ServerFailure,
}

export interface LookupOut {
  answer: Answer[];
  ns: Answer[];
  extra: Answer[];
  result: Result;
}

/** Resolve a name outside this zone's data through the rest of the server (CoreDNS's upstream lookup). */
export type Upstream = (
  name: string,
  qtype: number,
  loop: number,
) => Promise<{ answer: Answer[]; result: Result }> | { answer: Answer[]; result: Result };

export class ZoneData {
  soa: RR | null = null;
  ns: RR[] = [];
  sigSoa: RR[] = [];
  sigNs: RR[] = [];
  readonly elems = new Map<string, Elem>();
  private sorted: Elem[] = [];
  readonly originLabels: number;

  constructor(readonly origin: string) {
    this.originLabels = labelCount(origin);
  }

  /** Zone.Insert: apex records aside, every other record into the tree. Throws CoreDNS's NSEC3 error. */
  insert(rec: ZoneRecord): void {
    const isSrv = rec.type === T.SRV;
    const lname = lowerName(rec.name);
    if (rec.type === T.NSEC3 || rec.type === T.NSEC3PARAM) {
      throw new Error(`NSEC3 zone is not supported, dropping RR: ${lname} for zone: ${this.origin}`);
    }
    const lowerTargets =
      rec.type === T.NS ||
      rec.type === T.SOA ||
      rec.type === T.CNAME ||
      rec.type === T.MX ||
      rec.type === T.SVCB ||
      rec.type === T.HTTPS;
    const rr: RR = {
      lname,
      type: rec.type,
      answer: toAnswer(rec, isSrv ? rec.name : lname, lowerTargets),
      ...(rec.target !== undefined ? { target: lowerTargets ? lowerName(rec.target) : rec.target } : {}),
      ...(rec.covered !== undefined ? { covered: rec.covered } : {}),
      ...(rec.serial !== undefined ? { serial: rec.serial } : {}),
    };
    switch (rec.type) {
      case T.NS:
        if (lname === this.origin) {
          this.ns.push(rr);
          return;
        }
        break;
      case T.SOA:
        this.soa = rr;
        return;
      case T.RRSIG:
        if (rr.covered === T.SOA) {
          this.sigSoa.push(rr);
          return;
        }
        if (rr.covered === T.NS && lname === this.origin) {
          this.sigNs.push(rr);
          return;
        }
        break;
    }
    let e = this.elems.get(lname);
    if (!e) {
      e = new Elem(lname);
      this.elems.set(lname, e);
    }
    e.insert(rr);
  }

  /** Sort the names once every record is in (canonical order for Prev/Next). */
  seal(): void {
    this.sorted = [...this.elems.values()].sort((a, b) => compareKeys(a.key, b.key));
  }

  get serial(): number {
    return this.soa?.serial ?? -1;
  }

  /**
   * The records of a zone transfer (CoreDNS's Zone.Transfer), one name at a time: the apex (SOA
   * first), every other name in canonical order, the SOA again; or the SOA alone for an IXFR whose
   * `serial` is the zone's. Generated as the transfer pulls them (docs/plugins.md, transfer).
   */
  *transferRecords(serial: number): Generator<Answer[]> {
    const soa = this.soa!.answer;
    if (serial !== 0 && this.soa!.serial === serial) {
      yield [soa];
      return;
    }
    yield [soa, ...this.sigSoa.map((r) => r.answer), ...this.nsRRs(true)];
    for (const e of this.sorted) {
      const all: Answer[] = [];
      for (const rrs of e.rrsets()) for (const r of rrs) all.push(r.answer);
      yield all;
    }
    yield [soa];
  }

  search(name: string): Elem | undefined {
    return this.elems.get(lowerName(name));
  }

  /** Greatest name <= lname (tree.Prev). */
  prev(lname: string): Elem | undefined {
    return this.sorted[this.boundary(canonicalKey(lname), true) - 1];
  }

  /** Smallest name >= lname (tree.Next). */
  nextElem(lname: string): Elem | undefined {
    return this.sorted[this.boundary(canonicalKey(lname), false)];
  }

  /** Index of the first name in canonical order that is > k (`after`) or >= k: both walks' binary search. */
  private boundary(k: string, after: boolean): number {
    let lo = 0;
    let hi = this.sorted.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      const c = compareKeys(this.sorted[mid]!.key, k);
      if (c < 0 || (after && c === 0)) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /** A name strictly below `lname` exists. */
  hasDescendant(lname: string): boolean {
    const x = this.nextElem(lname);
    return x !== undefined && x.name !== lname && isSub(lname, x.name);
  }

  soaRRs(d: boolean): Answer[] {
    const out = [this.soa!.answer];
    if (d) for (const s of this.sigSoa) out.push(s.answer);
    return out;
  }

  nsRRs(d: boolean): Answer[] {
    const out = this.ns.map((r) => r.answer);
    if (d) for (const s of this.sigNs) out.push(s.answer);
    return out;
  }

  /** `nameFromRight`: the origin plus `i` more labels of qname; `shot` when qname has fewer. */
  nameFromRight(qname: string, i: number): [string, boolean] {
    if (i <= 0) return [this.origin, false];
    const starts = labelStarts(qname);
    const k = this.originLabels + i;
    if (k > starts.length) return [qname, true];
    return [qname.slice(starts[starts.length - k]), false];
  }

  // ---- Lookup (CoreDNS plugin/file/lookup.go) -------------------------------------------------

  async lookup(qname: string, qtype: number, d: boolean, loop: number, upstream: Upstream): Promise<LookupOut> {
    if (!this.soa) return out([], [], [], Result.ServerFailure);
    if (qname === this.origin) {
      if (qtype === 6) return out(this.soaRRs(d), this.nsRRs(d), [], Result.Success);
      if (qtype === 2) {
        const nsrrs = this.nsRRs(d);
        return out(nsrrs, [], this.glue(this.ns, d), Result.Success);
      }
    }
    if (loop > 8) return out([], [], [], Result.ServerFailure);

    let found = false;
    let shot = false;
    let elem: Elem | undefined;
    let wildElem: Elem | undefined;
    let wildName = '';
    for (let i = 0; ; ) {
      let parts: string;
      [parts, shot] = this.nameFromRight(qname, i);
      if (shot) break;
      elem = this.search(parts);
      found = elem !== undefined;
      if (!elem) {
        const wildcard = asteriskLabel(parts);
        const w = wildcard ? this.search(wildcard) : undefined;
        if (w) {
          wildElem = w;
          wildName = w.name;
        } else if (wildcard && this.hasDescendant(wildcard)) {
          wildElem = undefined;
          wildName = wildcard;
        }
        i++;
        continue;
      }
      const dnames = elem.type(T.DNAME);
      if (dnames.length > 0) {
        const dname = dnames[0]!;
        const target = substituteDNAME(qname, dname.lname, dname.target ?? '.');
        if (target !== '') {
          const cname: Answer = {
            name: toPacketName(qname),
            type: 'CNAME',
            class: 'IN',
            ttl: (dname.answer as { ttl?: number }).ttl ?? 0,
            data: toPacketName(target),
          };
          if (qname === lowerName(target)) return out([], [], [], Result.ServerFailure);
          let r: LookupOut;
          if (qtype === T.CNAME) r = out([cname], this.nsRRs(d), [], Result.Success);
          else r = await this.externalLookup(qtype, d, loop + 1, elem, [cname], target, upstream);
          const head = dnames.map((x) => x.answer);
          if (d) head.push(...sigsOf(elem, T.DNAME));
          r.answer = [...head, ...r.answer];
          return r;
        }
      }
      const del = this.delegationFromElem(elem, qname, qtype, d);
      if (del) return out([], del.ns, del.extra, Result.Delegation);
      i++;
    }

    if (found && shot && elem) {
      const cn = elem.type(T.CNAME);
      if (cn.length > 0 && qtype !== T.CNAME) {
        return this.externalLookup(
          qtype,
          d,
          loop + 1,
          elem,
          cn.map((r) => r.answer),
          cn[0]!.target!,
          upstream,
        );
      }
      const rrs = elem.type(qtype);
      if (rrs.length === 0) {
        const ret = this.soaRRs(d);
        if (d) ret.push(...typeFromElem(elem, T.NSEC, d));
        return out([], ret, [], Result.NoData);
      }
      const answer = rrs.map((r) => r.answer);
      const additional = this.additional(rrs, d);
      if (d) answer.push(...sigsOf(elem, qtype));
      return out(answer, this.nsRRs(d), additional, Result.Success);
    }

    if (wildName !== '' && !this.closerENTExists(qname, wildName)) {
      if (!wildElem) return out([], this.soaRRs(d), [], Result.NoData);
      const owner = toPacketName(qname);
      const cn = wildElem.type(T.CNAME);
      if (cn.length > 0 && qtype !== T.CNAME) {
        return this.externalLookup(
          qtype,
          d,
          loop + 1,
          wildElem,
          cn.map((r) => ({ ...r.answer, name: owner })),
          cn[0]!.target!,
          upstream,
        );
      }
      const rrs = wildElem.type(qtype);
      if (rrs.length === 0) {
        const ret = this.soaRRs(d);
        if (d) ret.push(...typeFromElem(wildElem, T.NSEC, d));
        return out([], ret, [], Result.NoData);
      }
      const answer = rrs.map((r) => ({ ...r.answer, name: owner }));
      const additional = this.additional(rrs, d);
      const auth = this.nsRRs(d);
      if (d) {
        const deny = this.prev(qname);
        if (deny) auth.push(...typeFromElem(deny, T.NSEC, d));
        answer.push(...sigsOf(wildElem, qtype).map((s) => ({ ...s, name: owner })));
      }
      return out(answer, auth, additional, Result.Success);
    }

    let rcode = Result.NameError;
    if (this.hasDescendant(qname)) rcode = Result.Success;
    const ret = this.soaRRs(d);
    if (d) {
      const deny = this.prev(qname);
      if (deny) {
        ret.push(...typeFromElem(deny, T.NSEC, d));
        if (rcode === Result.NameError) {
          const ce = this.closestEncloser(qname);
          if (ce) {
            const ss = this.prev(`*.${ce.name}`);
            if (ss && ss.name !== deny.name) ret.push(...typeFromElem(ss, T.NSEC, d));
          }
        }
      }
    }
    return out([], ret, [], rcode);
  }

  private closestEncloser(qname: string): Elem | undefined {
    let name = qname;
    while (name !== '.' && name !== '') {
      const e = this.search(name);
      if (e) return e;
      const dot = nextLabel(name);
      if (dot < 0) break;
      name = name.slice(dot);
    }
    return this.search(this.origin);
  }

  private closerENTExists(qname: string, wildcardName: string): boolean {
    if (!wildcardName.startsWith('*.')) return false;
    const parent = wildcardName.slice(2);
    let name = qname;
    for (;;) {
      const off = nextLabel(name);
      if (off < 0) return false;
      name = name.slice(off);
      if (name === parent || !isSub(parent, name)) return false;
      if (this.hasDescendant(name)) return true;
    }
  }

  private glue(nsrrs: readonly RR[], d: boolean): Answer[] {
    const out: Answer[] = [];
    for (const ns of nsrrs) {
      if (ns.type !== T.NS || ns.target === undefined || !isSub(ns.lname, ns.target)) continue;
      const e = this.search(ns.target);
      if (!e) continue;
      out.push(...typeFromElem(e, T.A, d));
      out.push(...typeFromElem(e, T.AAAA, d));
    }
    return out;
  }

  private delegationFromElem(
    elem: Elem,
    qname: string,
    qtype: number,
    d: boolean,
  ): { ns: Answer[]; extra: Answer[] } | undefined {
    const ns = elem.type(T.NS);
    if (ns.length === 0 || (qtype === T.DS && elem.name === qname)) return undefined;
    const extra = this.glue(ns, d);
    const nsA = ns.map((r) => r.answer);
    if (d) nsA.push(...typeFromElem(elem, T.DS, d));
    return { ns: nsA, extra };
  }

  private findDelegation(
    qname: string,
    qtype: number,
    d: boolean,
    exact: Elem | undefined,
  ): { ns: Answer[]; extra: Answer[] } | undefined {
    for (let i = 1; ; i++) {
      const [name, shot] = this.nameFromRight(qname, i);
      if (shot) return undefined;
      if (name === qname) return exact ? this.delegationFromElem(exact, qname, qtype, d) : undefined;
      const e = this.search(name);
      if (!e) continue;
      const del = this.delegationFromElem(e, qname, qtype, d);
      if (del) return del;
    }
  }

  private additional(answer: readonly RR[], d: boolean): Answer[] {
    const extra: Answer[] = [];
    let seen: Set<string> | null = null;
    for (const rr of answer) {
      if (
        (rr.type !== T.SRV && rr.type !== T.MX && rr.type !== T.SVCB && rr.type !== T.HTTPS) ||
        rr.target === undefined
      )
        continue;
      const target = lowerName(rr.target);
      if (!isSub(this.origin, target)) continue;
      seen ??= new Set();
      if (seen.has(target)) continue;
      seen.add(target);
      const e = this.search(target);
      if (!e) continue;
      for (const t of [T.A, T.AAAA]) {
        const a = e.type(t);
        if (a.length === 0) continue;
        for (const r of a) extra.push(r.answer);
        if (d) extra.push(...sigsOf(e, t));
      }
    }
    return extra;
  }

  private authority(d: boolean, result: Result): Answer[] {
    return result === Result.NameError || result === Result.NoData ? this.soaRRs(d) : this.nsRRs(d);
  }

  private async externalLookup(
    qtype: number,
    d: boolean,
    loop: number,
    elem0: Elem,
    first: Answer[],
    target0: string,
    upstream: Upstream,
  ): Promise<LookupOut> {
    const rrs = [...first];
    if (d) rrs.push(...sigsOf(elem0, T.CNAME));
    let targetName = target0;
    let elem = this.search(targetName);
    const viaUpstream = async (): Promise<LookupOut> => {
      const r = await upstream(targetName, qtype, loop);
      rrs.push(...r.answer);
      return out(rrs, this.authority(d, r.result), this.additionalFromAnswers(rrs, d), r.result);
    };
    let del = this.findDelegation(targetName, qtype, d, elem);
    if (del) return out(rrs, del.ns, del.extra, Result.Delegation);
    if (!elem || qtype === T.NS || (qtype === T.SOA && targetName === this.origin)) return viaUpstream();
    for (let i = 0; ; ) {
      const cname = elem.type(T.CNAME);
      if (cname.length === 0) break;
      if (cname[0]!.lname === lowerName(cname[0]!.target!)) return out([], [], [], Result.ServerFailure);
      rrs.push(...cname.map((r) => r.answer));
      if (d) rrs.push(...sigsOf(elem, T.CNAME));
      targetName = cname[0]!.target!;
      elem = this.search(targetName);
      del = this.findDelegation(targetName, qtype, d, elem);
      if (del) return out(rrs, del.ns, del.extra, Result.Delegation);
      if (!elem || qtype === T.NS || (qtype === T.SOA && targetName === this.origin)) return viaUpstream();
      i++;
      if (i > 8) return out(rrs, this.nsRRs(d), this.additionalFromAnswers(rrs, d), Result.Success);
    }
    const targets = elem.type(qtype);
    if (targets.length > 0) {
      rrs.push(...targets.map((r) => r.answer));
      if (d) rrs.push(...sigsOf(elem, qtype));
    }
    return out(rrs, this.nsRRs(d), this.additionalFromAnswers(rrs, d), Result.Success);
  }

  /** additionalProcessing over a mixed answer (records from the zone or an upstream reply). */
  private additionalFromAnswers(answer: readonly Answer[], d: boolean): Answer[] {
    const rrs: RR[] = [];
    for (const a of answer) {
      const data = (a as { data?: unknown }).data;
      if (a.type === 'MX')
        rrs.push({ lname: '', type: T.MX, answer: a, target: `${String((data as { exchange: string }).exchange)}.` });
      else if (a.type === 'SRV')
        rrs.push({ lname: '', type: T.SRV, answer: a, target: `${String((data as { target: string }).target)}.` });
      else if (((a.type as string) === 'SVCB' || (a.type as string) === 'HTTPS') && Buffer.isBuffer(data)) {
        const t = svcbTarget(data);
        if (t !== undefined)
          rrs.push({ lname: '', type: (a.type as string) === 'SVCB' ? T.SVCB : T.HTTPS, answer: a, target: t });
      }
    }
    return rrs.length ? this.additional(rrs, d) : [];
  }
}

function out(answer: Answer[], ns: Answer[], extra: Answer[], result: Result): LookupOut {
  return { answer, ns, extra, result };
}

function sigsOf(e: Elem, covered: number): Answer[] {
  const out: Answer[] = [];
  for (const s of e.type(T.RRSIG)) if (s.covered === covered) out.push(s.answer);
  return out;
}

function typeFromElem(e: Elem, t: number, d: boolean): Answer[] {
  const rrs = e.type(t).map((r) => r.answer);
  if (d) rrs.push(...sigsOf(e, t));
  return rrs;
}
