/**
 * A model of the stub resolvers Kubernetes pods really use, to state — for a pod with a given
 * resolv.conf — which queries reach the cluster DNS server, in which order, and what the
 * application finally gets. Three resolvers are modelled, each from its source:
 *
 * glibc (2.36+, `resolv/res_query.c` `__res_context_search` + `__res_context_query`, and
 * `nss/getaddrinfo.c`; getaddrinfo AF_UNSPEC sends A and AAAA together, `T_QUERY_A_AND_AAAA`):
 *   - trailing dot: the name as is, once, nothing else.
 *   - dots >= ndots: the name as is FIRST; if that fails, the search list, and not the name again.
 *   - dots < ndots: the search list in order, then the name as is LAST (unless the root was on the
 *     search list).
 *   - a step succeeds when either reply is NOERROR with ancount > 0. Otherwise its h_errno comes
 *     from `rcode(A) == NOERROR ? rcode(AAAA) : rcode(A)`: NXDOMAIN → HOST_NOT_FOUND,
 *     SERVFAIL → TRY_AGAIN, NOERROR → NO_DATA, anything else → NO_RECOVERY; no reply → TRY_AGAIN.
 *   - in the search loop HOST_NOT_FOUND and NO_DATA continue (NODATA does NOT stop glibc),
 *     TRY_AGAIN continues only when the (first) reply's rcode is SERVFAIL; anything else (a
 *     timeout, REFUSED, FORMERR, NOTIMP) ends the search list — and the name as is is still
 *     tried afterwards if it was not tried yet.
 *   - the final error: the as-is attempt's h_errno if it was tried first, else NO_DATA if any
 *     step was NO_DATA, else TRY_AGAIN if any step was SERVFAIL, else the last step's. getaddrinfo
 *     maps TRY_AGAIN → EAI_AGAIN, NO_DATA → EAI_NODATA, others → EAI_NONAME.
 *   - other types (SRV, TXT…) go through res_search with the same walk.
 *
 * musl (1.2.4+, `src/network/lookup_name.c` `name_from_dns_search` / `name_from_dns`):
 *   - trailing dot or dots >= ndots: the name as is ONLY — the search list is never used.
 *   - dots < ndots: the search list in order, then the name as is last.
 *   - per step, the replies are checked in order A then AAAA: no reply or SERVFAIL → EAI_AGAIN
 *     (stop); NXDOMAIN → continue with the next name (the other reply is not looked at); any other
 *     non-zero rcode → EAI_FAIL (stop). All NOERROR: addresses → done, none → EAI_NODATA (stop:
 *     a NODATA on a search name ENDS musl's search; musl ≤ 1.2.3 reports it as EAI_NONAME).
 *   - after the last name: EAI_NONAME.
 *   - musl's `res_search` is an alias of `res_query`: other types (SRV…) are asked once, for the
 *     name made absolute, with no search at all.
 *
 * dig +search (BIND 9.18 `bin/dig/dighost.c` `setup_lookup`, `next_origin`, `recv_done`), one type:
 *   - trailing dot or dots >= ndots: the name as is only (`next_origin` stops when the name is
 *     absolute or has more than ndots labels).
 *   - otherwise the search list, then the name as is.
 *   - only NXDOMAIN moves to the next name; NOERROR (with or without data), SERVFAIL
 *     (`servfail_stops`) and everything else end it; the last reply is what dig prints.
 *
 * Not modelled: retransmissions (glibc retries a SERVFAIL/REFUSED server `attempts` times, musl
 * retries SERVFAIL; both retransmit on timeouts), several nameservers, /etc/hosts and nsswitch,
 * HOSTALIASES, `options rotate/single-request/no-tld-query/edns0`, TCP fallback on TC.
 */
import * as dgram from 'node:dgram';
import { isIPv6 } from 'node:net';
import * as dnsPacket from 'dns-packet';
import type { RecordType } from 'dns-packet';
import { rrLines } from '../helpers/records.js';

export type ResolverKind = 'glibc' | 'musl' | 'dig';

export interface ResolvConf {
  readonly nameservers: readonly string[];
  /** Search domains without trailing dots, in order. */
  readonly search: readonly string[];
  readonly ndots: number;
}

/** The resolv.conf kubelet writes for a ClusterFirst pod in namespace `ns`. */
export function podResolvConf(ns: string, zone = 'cluster.local', nameserver = '10.96.0.10'): ResolvConf {
  return { nameservers: [nameserver], search: [`${ns}.svc.${zone}`, `svc.${zone}`, zone], ndots: 5 };
}

/** resolv.conf text for a ResolvConf (what `/etc/netns/NS/resolv.conf` gets). */
export function resolvConfText(c: ResolvConf): string {
  return [
    ...c.nameservers.map((n) => `nameserver ${n}`),
    `search ${c.search.join(' ')}`,
    `options ndots:${c.ndots}`,
    '',
  ].join('\n');
}

/** Parse resolv.conf text: `nameserver`, `search`/`domain` (last one wins), `options ndots:N` (default 1, max 15). */
export function parseResolvConf(text: string): ResolvConf {
  const nameservers: string[] = [];
  let search: string[] = [];
  let ndots = 1;
  for (const line of text.split('\n')) {
    const f = line
      .replace(/[#;].*$/, '')
      .trim()
      .split(/\s+/);
    if (f[0] === 'nameserver' && f[1]) nameservers.push(f[1]);
    else if (f[0] === 'search') search = f.slice(1);
    else if (f[0] === 'domain' && f[1]) search = [f[1]];
    else if (f[0] === 'options') {
      for (const o of f.slice(1)) {
        const m = /^ndots:(\d+)$/.exec(o);
        if (m) ndots = Math.min(15, Number(m[1]));
      }
    }
  }
  return { nameservers, search: search.map((s) => s.replace(/\.$/, '')), ndots };
}

/** One record of a reply (owner absolute, lower-cased). */
export interface ModelRecord {
  readonly name: string;
  readonly type: string;
  readonly ttl: number;
  /** The rdata as dig prints it: A/AAAA the address, CNAME/PTR/NS the absolute target, SRV `prio weight port target.`. */
  readonly data: string;
}

/** What one query got back: a reply, or nothing (timeout). */
export type ModelReply =
  | { readonly kind: 'reply'; readonly rcode: number; readonly answers: readonly ModelRecord[] }
  | { readonly kind: 'timeout' };

export interface SentQuery {
  /** Absolute, as sent. */
  readonly name: string;
  readonly type: string;
}

/** Send one query, get its reply. A and AAAA of one step are sent together (two calls in parallel). */
export type Exchange = (q: SentQuery) => Promise<ModelReply>;

export type ResolverError =
  | 'EAI_NONAME'
  | 'EAI_NODATA'
  | 'EAI_AGAIN'
  | 'EAI_FAIL'
  | 'HOST_NOT_FOUND'
  | 'NO_DATA'
  | 'TRY_AGAIN'
  | 'NO_RECOVERY';

export type Outcome =
  /** getaddrinfo found addresses (for `name`, the name that answered). */
  | {
      readonly kind: 'addresses';
      readonly name: string;
      readonly addresses: readonly string[];
      readonly canonical: string;
    }
  /** res_search / dig: the reply the application or dig ends with. */
  | { readonly kind: 'reply'; readonly name: string; readonly rcode: number; readonly answers: readonly ModelRecord[] }
  /** getaddrinfo (EAI_*) or res_search (h_errno) failure. */
  | { readonly kind: 'error'; readonly error: ResolverError };

export interface Resolution {
  /** Every query sent, in order (A before AAAA within a step). */
  readonly queries: readonly SentQuery[];
  /** The names tried, in order (one entry per step). */
  readonly steps: readonly string[];
  readonly outcome: Outcome;
}

export interface ResolveOptions {
  readonly resolver: ResolverKind;
  readonly conf: ResolvConf;
  /** The name as the application passes it (relative, or absolute with a trailing dot). */
  readonly name: string;
  /**
   * Query types: `['A', 'AAAA']` = getaddrinfo AF_UNSPEC (the default for glibc and musl),
   * `['A']` = AF_INET (glibc with AI_ADDRCONFIG in an IPv4-only pod), another single type =
   * res_search (glibc, musl) or `dig -t TYPE`. dig always asks one type (default A).
   */
  readonly types?: readonly string[];
  readonly exchange: Exchange;
  /**
   * musl's error when a search step ends with NODATA: EAI_NODATA since musl 1.2.4, EAI_NONAME
   * before (observed with Debian's 1.2.3; `muslNodataError(version)`). The queries are the same.
   */
  readonly muslNodata?: 'EAI_NODATA' | 'EAI_NONAME';
}

/** musl's getaddrinfo error for a NODATA step, by musl version (`1.2.3` → EAI_NONAME). */
export function muslNodataError(version: string): 'EAI_NODATA' | 'EAI_NONAME' {
  const [maj = 0, min = 0, patch = 0] = version.split('.').map(Number);
  return maj > 1 || (maj === 1 && (min > 2 || (min === 2 && patch >= 4))) ? 'EAI_NODATA' : 'EAI_NONAME';
}

const NOERROR = 0;
const SERVFAIL = 2;
const NXDOMAIN = 3;

function abs(name: string): string {
  return name.endsWith('.') ? name.toLowerCase() : `${name.toLowerCase()}.`;
}

function countDots(name: string): number {
  let n = 0;
  for (const c of name) if (c === '.') n++;
  return n;
}

/**
 * The names a resolver would try, in order, if every one of them failed with NXDOMAIN
 * (the search plan); `resolve` walks it and stops early per the resolver's rules.
 */
export function searchPlan(
  resolver: ResolverKind,
  conf: ResolvConf,
  name: string,
  types: readonly string[] = ['A', 'AAAA'],
): string[] {
  const trailing = name.endsWith('.');
  const dots = countDots(name);
  const asIs = abs(name);
  const withSearch = conf.search.map((s) => (s === '' || s === '.' ? asIs : abs(`${name}.${s.replace(/\.$/, '')}`)));
  const addressLookup = types.every((t) => t === 'A' || t === 'AAAA');
  if (trailing) return [asIs];
  if (resolver === 'musl' && !addressLookup) return [asIs]; // res_search = res_query
  if (dots >= conf.ndots) {
    if (resolver === 'glibc') return dedupe([asIs, ...withSearch]);
    return [asIs];
  }
  const rootOnList = conf.search.some((s) => s === '' || s === '.');
  return dedupe(resolver === 'glibc' && rootOnList ? withSearch : [...withSearch, asIs]);
}

function dedupe(names: string[]): string[] {
  return names.filter((n, i) => names.indexOf(n) === i);
}

function hasAnswers(r: ModelReply): boolean {
  return r.kind === 'reply' && r.rcode === NOERROR && r.answers.length > 0;
}

function rcodeOf(r: ModelReply): number | null {
  return r.kind === 'reply' ? r.rcode : null;
}

/** Addresses of `type` reachable from `name` through the answer's CNAME chain (glibc checks owners). */
function addressesFrom(
  replies: readonly ModelReply[],
  types: readonly string[],
  name: string,
): { addresses: string[]; canonical: string } {
  const addresses: string[] = [];
  let canonical = name;
  types.forEach((type, i) => {
    const r = replies[i];
    if (!r || r.kind !== 'reply' || r.rcode !== NOERROR) return;
    let owner = name;
    for (let hops = 0; hops < 16; hops++) {
      const cname = r.answers.find((a) => a.type === 'CNAME' && a.name === owner);
      if (!cname) break;
      owner = cname.data;
    }
    if (i === 0 || canonical === name) canonical = owner;
    for (const a of r.answers)
      if (a.type === type && a.name === owner && !addresses.includes(a.data)) addresses.push(a.data);
  });
  return { addresses, canonical };
}

type HErrno = 'HOST_NOT_FOUND' | 'NO_DATA' | 'TRY_AGAIN' | 'NO_RECOVERY';

/** h_errno of a failed glibc step (`__res_context_query`), from the first and second reply. */
function glibcHErrno(first: ModelReply, second: ModelReply): HErrno {
  if (first.kind === 'timeout' || second.kind === 'timeout') return 'TRY_AGAIN';
  const rc = first.rcode === NOERROR ? second.rcode : first.rcode;
  if (rc === NXDOMAIN) return 'HOST_NOT_FOUND';
  if (rc === SERVFAIL) return 'TRY_AGAIN';
  if (rc === NOERROR) return 'NO_DATA';
  return 'NO_RECOVERY';
}

function eaiFromHErrno(h: HErrno): ResolverError {
  if (h === 'TRY_AGAIN') return 'EAI_AGAIN';
  if (h === 'NO_DATA') return 'EAI_NODATA';
  return 'EAI_NONAME';
}

export async function resolve(o: ResolveOptions): Promise<Resolution> {
  const types = o.types ?? ['A'];
  const queries: SentQuery[] = [];
  const steps: string[] = [];
  const ask = async (name: string): Promise<ModelReply[]> => {
    steps.push(name);
    const qs = types.map((type) => ({ name, type }));
    queries.push(...qs);
    return Promise.all(qs.map((q) => o.exchange(q)));
  };
  const addressLookup = types.every((t) => t === 'A' || t === 'AAAA');
  const done = (outcome: Outcome): Resolution => ({ queries, steps, outcome });
  const success = (name: string, replies: ModelReply[]): Resolution => {
    if (addressLookup && o.resolver !== 'dig') {
      const { addresses, canonical } = addressesFrom(replies, types, name);
      return done({ kind: 'addresses', name, addresses, canonical: canonical.replace(/\.$/, '') });
    }
    const r = replies[0]!;
    return done(
      r.kind === 'reply'
        ? { kind: 'reply', name, rcode: r.rcode, answers: r.answers }
        : { kind: 'error', error: 'TRY_AGAIN' },
    );
  };

  if (o.resolver === 'dig') {
    if (types.length !== 1) throw new Error('dig asks one type per lookup');
    const plan = searchPlan('dig', o.conf, o.name, types);
    let last: ModelReply = { kind: 'timeout' };
    let lastName = plan[0]!;
    for (const name of plan) {
      [last] = (await ask(name)) as [ModelReply];
      lastName = name;
      if (last.kind !== 'reply' || last.rcode !== NXDOMAIN) break;
    }
    return last.kind === 'reply'
      ? done({ kind: 'reply', name: lastName, rcode: last.rcode, answers: last.answers })
      : done({ kind: 'error', error: 'TRY_AGAIN' });
  }

  if (o.resolver === 'musl') {
    const plan = searchPlan('musl', o.conf, o.name, types);
    if (!addressLookup) {
      const replies = await ask(plan[0]!);
      const r = replies[0]!;
      if (hasAnswers(r)) return success(plan[0]!, replies);
      if (r.kind === 'timeout') return done({ kind: 'error', error: 'TRY_AGAIN' });
      return done({
        kind: 'error',
        error:
          r.rcode === NXDOMAIN
            ? 'HOST_NOT_FOUND'
            : r.rcode === NOERROR
              ? 'NO_DATA'
              : r.rcode === SERVFAIL
                ? 'TRY_AGAIN'
                : 'NO_RECOVERY',
      });
    }
    for (const name of plan) {
      const replies = await ask(name);
      let verdict: 'next' | 'parse' | ResolverError = 'parse';
      for (const r of replies) {
        if (r.kind === 'timeout' || r.rcode === SERVFAIL) {
          verdict = 'EAI_AGAIN';
          break;
        }
        if (r.rcode === NXDOMAIN) {
          verdict = 'next';
          break;
        }
        if (r.rcode !== NOERROR) {
          verdict = 'EAI_FAIL';
          break;
        }
      }
      if (verdict === 'next') continue;
      if (verdict !== 'parse') return done({ kind: 'error', error: verdict });
      const res = success(name, replies);
      if (res.outcome.kind === 'addresses' && res.outcome.addresses.length > 0) return res;
      return done({ kind: 'error', error: o.muslNodata ?? 'EAI_NODATA' });
    }
    return done({ kind: 'error', error: 'EAI_NONAME' });
  }

  // glibc
  const trailing = o.name.endsWith('.');
  const dots = countDots(o.name);
  const asIs = abs(o.name);
  const fail = (h: HErrno): Resolution => done({ kind: 'error', error: addressLookup ? eaiFromHErrno(h) : h });
  const step = async (
    name: string,
  ): Promise<{ ok: true; replies: ModelReply[] } | { ok: false; h: HErrno; firstRcode: number | null }> => {
    const replies = await ask(name);
    if (replies.some(hasAnswers)) return { ok: true, replies };
    return { ok: false, h: glibcHErrno(replies[0]!, replies[1] ?? replies[0]!), firstRcode: rcodeOf(replies[0]!) };
  };
  let saved: HErrno | null = null;
  let triedAsIs = false;
  let last: HErrno = 'HOST_NOT_FOUND';
  if (dots >= o.conf.ndots || trailing) {
    const r = await step(asIs);
    if (r.ok) return success(asIs, r.replies);
    if (trailing) return fail(r.h);
    saved = r.h;
    last = r.h;
    triedAsIs = true;
  }
  let gotNodata = false;
  let gotServfail = false;
  let rootOnList = false;
  for (const s of o.conf.search) {
    const dname = s.replace(/^\./, '');
    if (dname === '') rootOnList = true;
    const name = dname === '' ? asIs : abs(`${o.name}.${dname.replace(/\.$/, '')}`);
    const r = await step(name);
    if (r.ok) return success(name, r.replies);
    last = r.h;
    if (r.h === 'NO_DATA') gotNodata = true;
    const keepTrying =
      r.h === 'NO_DATA' || r.h === 'HOST_NOT_FOUND' || (r.h === 'TRY_AGAIN' && r.firstRcode === SERVFAIL);
    if (r.h === 'TRY_AGAIN' && keepTrying) gotServfail = true;
    if (!keepTrying) break; // a timeout, REFUSED, FORMERR…: done with the search list
  }
  if (!triedAsIs && !rootOnList) {
    const r = await step(asIs);
    if (r.ok) return success(asIs, r.replies);
    last = r.h;
  }
  if (saved !== null) return fail(saved);
  if (gotNodata) return fail('NO_DATA');
  if (gotServfail) return fail('TRY_AGAIN');
  return fail(last);
}

// ---------------------------------------------------------------------------------------------
// Exchanges

/** A table of answers: `'name. TYPE'` → reply; names not in the table get `fallback` (NXDOMAIN). */
export function tableExchange(
  table: Readonly<Record<string, ModelReply>>,
  fallback: ModelReply = { kind: 'reply', rcode: NXDOMAIN, answers: [] },
): Exchange {
  const lower = new Map(Object.entries(table).map(([k, v]) => [k.toLowerCase(), v]));
  return (q) => Promise.resolve(lower.get(`${q.name} ${q.type}`.toLowerCase()) ?? fallback);
}

/**
 * A record's data as dig prints it after owner, TTL, class and type — what `digResult` in
 * netns.test.ts takes from dig's own answer lines — from the one record formatter.
 */
function recordData(rr: dnsPacket.Answer): string {
  return (rrLines([rr])[0] ?? '').split(' ').slice(4).join(' ');
}

/** Decode a reply's rcode and answer section into the model's shape. */
export function modelReply(buf: Buffer): ModelReply {
  const m = dnsPacket.decode(buf);
  const answers = (m.answers ?? []).map((rr) => ({
    name: abs(rr.name),
    type: rr.type,
    ttl: 'ttl' in rr ? (rr.ttl ?? 0) : 0,
    data: recordData(rr),
  }));
  return { kind: 'reply', rcode: (m.flags ?? 0) & 0xf, answers };
}

export interface UdpExchangeOptions {
  readonly server: string;
  readonly port: number;
  /** Source address to send from (e.g. a pod IP alias on loopback: 127.0.0.2). */
  readonly localAddress?: string;
  /** Failure guard per query; a query without reply by then counts as a timeout. */
  readonly timeoutMs?: number;
}

/**
 * Queries over UDP to a real server, as the stub resolvers send them: RD=1, no EDNS, a fresh
 * random ID and socket per query. Replies whose ID or question do not match are ignored.
 */
export function udpExchange(o: UdpExchangeOptions): Exchange {
  return (q) =>
    new Promise<ModelReply>((resolveReply, reject) => {
      const id = Math.floor(Math.random() * 65536);
      const packet = dnsPacket.encode({
        id,
        type: 'query',
        flags: dnsPacket.RECURSION_DESIRED,
        questions: [{ name: q.name.replace(/\.$/, ''), type: q.type as RecordType, class: 'IN' }],
      });
      const sock = dgram.createSocket(isIPv6(o.server) ? 'udp6' : 'udp4');
      const timer = setTimeout(() => {
        sock.close();
        resolveReply({ kind: 'timeout' });
      }, o.timeoutMs ?? 5000);
      sock.on('error', (e) => {
        clearTimeout(timer);
        sock.close();
        reject(e);
      });
      sock.on('message', (msg) => {
        if (msg.length < 12 || msg.readUInt16BE(0) !== id) return;
        let qname: string | undefined;
        try {
          qname = dnsPacket.decode(msg).questions?.[0]?.name;
        } catch {
          return;
        }
        if (qname === undefined || abs(qname) !== q.name.toLowerCase()) return;
        clearTimeout(timer);
        sock.close();
        resolveReply(modelReply(msg));
      });
      const send = (): void => sock.send(packet, o.port, o.server);
      if (o.localAddress) sock.bind(0, o.localAddress, send);
      else send();
    });
}
