/**
 * Compare a reference reply (CoreDNS) with a candidate reply (clusterdns) to the same query.
 *
 * API:
 * - `compareReplies(query, reference, candidate, options)` → `Comparison`: `differences` (not
 *   tolerated by any rule), `tolerated` (each with the rule that allowed it), both parses.
 *   A reply is a `Buffer`, or `null` when that server sent nothing. Never throws: an
 *   unparseable reply is a `malformed` difference.
 * - `renderDiff(comparison)` → readable text: the differences, then both replies dig-style.
 * - `differenceKinds(comparison)` → the distinct `kind`s of the untolerated differences, for a
 *   metric label (`clusterdns_shadow_mismatches_total{kind}`).
 *
 * Kinds (stable strings): `noreply`, `malformed`, `rcode`, `flags` (one per header bit: QR,
 * opcode, AA, RD, RA, Z, AD, CD), `question`, `answer` / `authority` / `additional` (one per
 * record present on one side only, multiset comparison ignoring TTL), `order` (same records,
 * other order), `case` (a record present on both sides whose names differ only in letter case),
 * `ttl` (same record, other TTL), `serial` (same SOA record, other serial), `edns` (OPT presence, version, udp size, DO,
 * options), `truncated` (TC bit), `size` (the candidate is larger than the reference).
 * Tolerance rules are data (`rules.ts`): see `ToleranceRule`.
 *
 * Cost: byte-identical replies (ignoring the id) return at once without parsing; otherwise each
 * reply is parsed once in time linear in its size.
 */
import { qclassName, qtypeName, rcodeName } from '../dns/constants.js';
import { parseMessage, recordText, type ParseOutcome, type WireMessage, type WireRecord } from './parse.js';

export type DiffKind =
  | 'noreply'
  | 'malformed'
  | 'rcode'
  | 'flags'
  | 'question'
  | 'answer'
  | 'authority'
  | 'additional'
  | 'order'
  | 'case'
  | 'ttl'
  | 'serial'
  | 'edns'
  | 'truncated'
  | 'size';

export const DIFF_KINDS: readonly DiffKind[] = [
  'noreply',
  'malformed',
  'rcode',
  'flags',
  'question',
  'answer',
  'authority',
  'additional',
  'order',
  'case',
  'ttl',
  'serial',
  'edns',
  'truncated',
  'size',
];

export type Section = 'answer' | 'authority' | 'additional';
export type Side = 'reference' | 'candidate';

export interface Difference {
  readonly kind: DiffKind;
  /** One readable line. */
  readonly detail: string;
  /** For record, order and ttl differences. */
  readonly section?: Section;
  /** Which reply has the thing (records present on one side, malformed, noreply). */
  readonly side?: Side;
  /** For record and ttl differences: the record without TTL (`name class type rdata`). */
  readonly record?: string;
  /** For `flags`: the bit's name (`AA`, `RA`, …); for `edns`: the field (`presence`, `version`, `udpsize`, `do`, `z`, `options`, `count`). */
  readonly field?: string;
  readonly reference?: string | number;
  readonly candidate?: string | number;
}

/** What the query was and where it ran: what tolerance rules match against. */
export interface CompareContext {
  /** Question name (any case); taken from the query or the reference reply when absent. */
  readonly qname?: string;
  /** Question type number; taken from the query or the reference reply when absent. */
  readonly qtype?: number;
  readonly proto?: 'udp' | 'tcp';
  /** Plugins of the server block that answered (directive names). */
  readonly plugins?: readonly string[];
  /** Free-form labels of the situation (e.g. `cached`, `reload`), matched by `RuleMatch.tags`. */
  readonly tags?: readonly string[];
  /** The candidate reply's RCODE (filled in by compareReplies). */
  readonly candidateRcode?: number;
}

/** Which differences a rule tolerates: every given field must match. */
export interface RuleMatch {
  readonly kinds: readonly DiffKind[];
  /** The server block has at least one of these plugins. */
  readonly plugins?: readonly string[];
  /** Question type mnemonics (`A`, `SRV`, …). */
  readonly qtypes?: readonly string[];
  /** Tested against the lower-cased absolute question name. */
  readonly qname?: RegExp;
  readonly proto?: 'udp' | 'tcp';
  readonly sections?: readonly Section[];
  readonly side?: Side;
  /** `flags`/`edns`: the bit or field names this rule covers. */
  readonly fields?: readonly string[];
  /** Tested against the record (`name class type rdata`) of record and ttl differences. */
  readonly record?: RegExp;
  /** `ttl`/`serial`: tolerated only when |reference − candidate| ≤ this much. */
  readonly window?: number;
  /** The question name has (true) or has no (false) upper-case letters. */
  readonly mixedCase?: boolean;
  /** Every one of these tags is in the context. */
  readonly tags?: readonly string[];
  /** The candidate's reply has this RCODE (mnemonic, e.g. `FORMERR`). */
  readonly candidateRcode?: string;
}

export interface ToleranceRule {
  /** Stable identifier (kebab-case), quoted in test output and logs. */
  readonly id: string;
  /** Why the difference is intentional (or inevitable). */
  readonly reason: string;
  readonly match: RuleMatch;
}

export interface Tolerated {
  readonly difference: Difference;
  readonly rule: string;
}

export interface Comparison {
  readonly differences: readonly Difference[];
  readonly tolerated: readonly Tolerated[];
  readonly reference: ParseOutcome | null;
  readonly candidate: ParseOutcome | null;
  readonly context: CompareContext;
}

export interface CompareOptions {
  readonly rules?: readonly ToleranceRule[];
  readonly context?: CompareContext;
  /** Kinds to ignore entirely (e.g. a shadow operator's `ignore ttl`). */
  readonly ignore?: readonly DiffKind[];
}

const EMPTY: readonly Difference[] = [];

const FLAG_BITS: readonly [string, number][] = [
  ['QR', 0x8000],
  ['AA', 0x0400],
  ['RD', 0x0100],
  ['RA', 0x0080],
  ['Z', 0x0040],
  ['AD', 0x0020],
  ['CD', 0x0010],
];

function sameExceptId(a: Buffer, b: Buffer): boolean {
  if (a.length !== b.length || a.length < 12) return false;
  return a.compare(b, 2, b.length, 2, a.length) === 0;
}

function questionOf(buf: Buffer | null): { qname?: string; qtype?: number } {
  if (!buf || buf.length < 12 || buf.readUInt16BE(4) < 1) return {};
  const p = parseMessage(buf);
  const q = p.ok ? p.msg.questions[0] : undefined;
  return q ? { qname: q.name, qtype: q.type } : {};
}

/** SOA records are matched without their serial (a clock value), which is compared on its own. */
function matchKey(r: WireRecord): string {
  if (r.type !== 6) return r.key;
  return r.key.replace(/ (\d+) (\d+ \d+ \d+ \d+)$/, ' * $2');
}

function soaSerial(r: WireRecord): number {
  const m = / (\d+) \d+ \d+ \d+ \d+$/.exec(r.rdata);
  return m ? Number(m[1]) : 0;
}

function pairUp(
  ref: readonly WireRecord[],
  cand: readonly WireRecord[],
  key: (r: WireRecord) => string,
): { pairs: [WireRecord, WireRecord][]; refOnly: WireRecord[]; candOnly: WireRecord[] } {
  const pool = new Map<string, WireRecord[]>();
  for (const r of cand) {
    const k = key(r);
    const list = pool.get(k);
    if (list) list.push(r);
    else pool.set(k, [r]);
  }
  const pairs: [WireRecord, WireRecord][] = [];
  const refOnly: WireRecord[] = [];
  for (const r of ref) {
    const c = pool.get(key(r))?.shift();
    if (c) pairs.push([r, c]);
    else refOnly.push(r);
  }
  const candOnly: WireRecord[] = [];
  for (const r of cand) {
    const left = pool.get(key(r));
    if (left && left.length > 0 && left[0] === r) {
      left.shift();
      candOnly.push(r);
    }
  }
  return { pairs, refOnly, candOnly };
}

function compareSection(
  section: Section,
  ref: readonly WireRecord[],
  cand: readonly WireRecord[],
  out: Difference[],
): void {
  const exact = pairUp(ref, cand, matchKey);
  // Records left on both sides that differ only in letter case (names compare case-insensitively).
  const folded = pairUp(exact.refOnly, exact.candOnly, (r) => matchKey(r).toLowerCase());
  const pairs = [...exact.pairs, ...folded.pairs];
  for (const [r, c] of folded.pairs) {
    out.push({
      kind: 'case',
      section,
      record: r.key,
      reference: r.key,
      candidate: c.key,
      detail: `case: ${section}: reference ${recordText(r)} / candidate ${recordText(c)}`,
    });
  }
  for (const [r, c] of pairs) {
    if (c.ttl !== r.ttl)
      out.push({
        kind: 'ttl',
        section,
        record: r.key,
        reference: r.ttl,
        candidate: c.ttl,
        detail: `ttl: ${section} ${r.key}: reference ${r.ttl}, candidate ${c.ttl}`,
      });
    if (r.type === 6 && soaSerial(r) !== soaSerial(c))
      out.push({
        kind: 'serial',
        section,
        record: r.key,
        reference: soaSerial(r),
        candidate: soaSerial(c),
        detail: `serial: ${section} SOA ${r.name}: reference ${soaSerial(r)}, candidate ${soaSerial(c)}`,
      });
  }
  for (const r of folded.refOnly)
    out.push({
      kind: section,
      section,
      side: 'reference',
      record: r.key,
      detail: `${section}: reference only: ${recordText(r)}`,
    });
  for (const r of folded.candOnly)
    out.push({
      kind: section,
      section,
      side: 'candidate',
      record: r.key,
      detail: `${section}: candidate only: ${recordText(r)}`,
    });
  if (folded.refOnly.length === 0 && folded.candOnly.length === 0 && ref.length > 1) {
    for (let i = 0; i < ref.length; i++) {
      if (matchKey(ref[i]!).toLowerCase() !== matchKey(cand[i]!).toLowerCase()) {
        out.push({
          kind: 'order',
          section,
          detail: `order: ${section} records in another order (first at #${i + 1}: reference ${ref[i]!.key}, candidate ${cand[i]!.key})`,
        });
        break;
      }
    }
  }
}

function compareEdns(ref: WireMessage, cand: WireMessage, out: Difference[]): void {
  const a = ref.opt;
  const b = cand.opt;
  if (!a || !b) {
    if (a || b)
      out.push({
        kind: 'edns',
        field: 'presence',
        reference: a ? 'OPT' : 'none',
        candidate: b ? 'OPT' : 'none',
        detail: `edns: OPT record: reference ${a ? 'present' : 'absent'}, candidate ${b ? 'present' : 'absent'}`,
      });
    return;
  }
  if (ref.optCount !== cand.optCount)
    out.push({
      kind: 'edns',
      field: 'count',
      reference: ref.optCount,
      candidate: cand.optCount,
      detail: `edns: OPT records: reference ${ref.optCount}, candidate ${cand.optCount}`,
    });
  if (a.version !== b.version)
    out.push({
      kind: 'edns',
      field: 'version',
      reference: a.version,
      candidate: b.version,
      detail: `edns: version: reference ${a.version}, candidate ${b.version}`,
    });
  if (a.udpSize !== b.udpSize)
    out.push({
      kind: 'edns',
      field: 'udpsize',
      reference: a.udpSize,
      candidate: b.udpSize,
      detail: `edns: udp size: reference ${a.udpSize}, candidate ${b.udpSize}`,
    });
  if (a.do !== b.do)
    out.push({
      kind: 'edns',
      field: 'do',
      reference: Number(a.do),
      candidate: Number(b.do),
      detail: `edns: DO: reference ${Number(a.do)}, candidate ${Number(b.do)}`,
    });
  if (a.z !== b.z)
    out.push({
      kind: 'edns',
      field: 'z',
      reference: a.z,
      candidate: b.z,
      detail: `edns: Z bits: reference ${a.z}, candidate ${b.z}`,
    });
  const ao = a.options.join(' ');
  const bo = b.options.join(' ');
  if (ao !== bo)
    out.push({
      kind: 'edns',
      field: 'options',
      reference: ao,
      candidate: bo,
      detail: `edns: options: reference [${ao}], candidate [${bo}]`,
    });
}

function compareParsed(ref: WireMessage, cand: WireMessage, out: Difference[]): void {
  if (ref.rcode !== cand.rcode)
    out.push({
      kind: 'rcode',
      reference: rcodeName(ref.rcode),
      candidate: rcodeName(cand.rcode),
      detail: `rcode: reference ${rcodeName(ref.rcode)}, candidate ${rcodeName(cand.rcode)}`,
    });
  const rOp = (ref.flags >> 11) & 0xf;
  const cOp = (cand.flags >> 11) & 0xf;
  if (rOp !== cOp)
    out.push({
      kind: 'flags',
      field: 'opcode',
      reference: rOp,
      candidate: cOp,
      detail: `flags: opcode: reference ${rOp}, candidate ${cOp}`,
    });
  for (const [name, bit] of FLAG_BITS) {
    const r = (ref.flags & bit) !== 0;
    const c = (cand.flags & bit) !== 0;
    if (r !== c)
      out.push({
        kind: 'flags',
        field: name,
        reference: Number(r),
        candidate: Number(c),
        detail: `flags: ${name}: reference ${Number(r)}, candidate ${Number(c)}`,
      });
  }
  const rTc = (ref.flags & 0x0200) !== 0;
  const cTc = (cand.flags & 0x0200) !== 0;
  if (rTc !== cTc)
    out.push({
      kind: 'truncated',
      field: 'TC',
      reference: Number(rTc),
      candidate: Number(cTc),
      detail: `truncated: TC: reference ${Number(rTc)}, candidate ${Number(cTc)}`,
    });
  const rq = ref.questions.map((q) => `${q.name} ${qclassName(q.class)} ${qtypeName(q.type)}`).join(', ');
  const cq = cand.questions.map((q) => `${q.name} ${qclassName(q.class)} ${qtypeName(q.type)}`).join(', ');
  if (rq !== cq)
    out.push({
      kind: 'question',
      reference: rq,
      candidate: cq,
      detail: `question: reference [${rq}], candidate [${cq}]`,
    });
  compareSection('answer', ref.answer, cand.answer, out);
  compareSection('authority', ref.authority, cand.authority, out);
  compareSection('additional', ref.additional, cand.additional, out);
  compareEdns(ref, cand, out);
  if (cand.size > ref.size)
    out.push({
      kind: 'size',
      reference: ref.size,
      candidate: cand.size,
      detail: `size: candidate ${cand.size} octets is larger than the reference's ${ref.size}`,
    });
}

/** Does `rule` tolerate difference `d` in context `ctx`? */
export function ruleMatches(rule: ToleranceRule, d: Difference, ctx: CompareContext): boolean {
  const m = rule.match;
  if (!m.kinds.includes(d.kind)) return false;
  if (m.plugins && !m.plugins.some((p) => ctx.plugins?.includes(p))) return false;
  if (m.qtypes && (ctx.qtype === undefined || !m.qtypes.includes(qtypeName(ctx.qtype)))) return false;
  if (m.qname && (ctx.qname === undefined || !m.qname.test(ctx.qname.toLowerCase()))) return false;
  if (m.proto && ctx.proto !== m.proto) return false;
  if (m.sections && (d.section === undefined || !m.sections.includes(d.section))) return false;
  if (m.side && d.side !== m.side) return false;
  if (m.fields && (d.field === undefined || !m.fields.includes(d.field))) return false;
  if (m.record && (d.record === undefined || !m.record.test(d.record))) return false;
  if (m.tags && !m.tags.every((t) => ctx.tags?.includes(t))) return false;
  if (
    m.candidateRcode !== undefined &&
    (ctx.candidateRcode === undefined || rcodeName(ctx.candidateRcode) !== m.candidateRcode)
  )
    return false;
  if (m.mixedCase !== undefined && (ctx.qname === undefined || /[A-Z]/.test(ctx.qname) !== m.mixedCase)) return false;
  if (m.window !== undefined) {
    if (typeof d.reference !== 'number' || typeof d.candidate !== 'number') return false;
    if (Math.abs(d.reference - d.candidate) > m.window) return false;
  }
  return true;
}

/**
 * Compare `reference` (CoreDNS's reply) with `candidate` (ours) for `query` (the query bytes,
 * or null). Never throws.
 */
export function compareReplies(
  query: Buffer | null,
  reference: Buffer | null,
  candidate: Buffer | null,
  options: CompareOptions = {},
): Comparison {
  let context = options.context ?? {};
  if (reference && candidate && sameExceptId(reference, candidate)) {
    return { differences: EMPTY, tolerated: [], reference: null, candidate: null, context };
  }
  if (context.qname === undefined || context.qtype === undefined) {
    const q = questionOf(query);
    const fromReply = q.qname === undefined ? questionOf(reference) : q;
    context = { ...fromReply, ...context };
  }
  const found: Difference[] = [];
  const ref = reference ? parseMessage(reference) : null;
  const cand = candidate ? parseMessage(candidate) : null;
  if (!ref || !cand) {
    if (ref || cand) {
      const side: Side = ref ? 'reference' : 'candidate';
      found.push({
        kind: 'noreply',
        side: ref ? 'candidate' : 'reference',
        detail: `noreply: only the ${side} replied`,
      });
    }
  } else if (!ref.ok || !cand.ok) {
    if (!ref.ok)
      found.push({ kind: 'malformed', side: 'reference', detail: `malformed: reference reply: ${ref.error}` });
    if (!cand.ok)
      found.push({ kind: 'malformed', side: 'candidate', detail: `malformed: candidate reply: ${cand.error}` });
  } else {
    compareParsed(ref.msg, cand.msg, found);
    if (found.length > 0) context = { ...context, candidateRcode: cand.msg.rcode };
  }
  const differences: Difference[] = [];
  const tolerated: Tolerated[] = [];
  for (const d of found) {
    if (options.ignore?.includes(d.kind)) {
      tolerated.push({ difference: d, rule: 'ignore' });
      continue;
    }
    const rule = options.rules?.find((r) => ruleMatches(r, d, context));
    if (rule) tolerated.push({ difference: d, rule: rule.id });
    else differences.push(d);
  }
  return { differences, tolerated, reference: ref, candidate: cand, context };
}

/** The distinct kinds of the untolerated differences, in `DIFF_KINDS` order. */
export function differenceKinds(c: Comparison): DiffKind[] {
  if (c.differences.length === 0) return [];
  return DIFF_KINDS.filter((k) => c.differences.some((d) => d.kind === k));
}

function flagNames(flags: number): string {
  const names: string[] = [];
  if (flags & 0x8000) names.push('qr');
  if (flags & 0x0400) names.push('aa');
  if (flags & 0x0200) names.push('tc');
  if (flags & 0x0100) names.push('rd');
  if (flags & 0x0080) names.push('ra');
  if (flags & 0x0040) names.push('z');
  if (flags & 0x0020) names.push('ad');
  if (flags & 0x0010) names.push('cd');
  return names.join(' ');
}

/** A reply in dig's layout (one string, for diffs and logs). */
export function renderMessage(m: WireMessage): string {
  const lines: string[] = [];
  lines.push(`;; opcode: ${(m.flags >> 11) & 0xf}, status: ${rcodeName(m.rcode)}, id: ${m.id}, size: ${m.size}`);
  lines.push(
    `;; flags: ${flagNames(m.flags)}; QUERY: ${m.questions.length}, ANSWER: ${m.answer.length}, AUTHORITY: ${m.authority.length}, ADDITIONAL: ${m.additional.length + m.optCount}`,
  );
  if (m.opt) {
    lines.push(
      `;; OPT: version: ${m.opt.version}; flags:${m.opt.do ? ' do' : ''}; udp: ${m.opt.udpSize}${m.opt.options.length ? `; options: ${m.opt.options.join(' ')}` : ''}`,
    );
  }
  for (const q of m.questions) lines.push(`;${q.name}\t\t${qclassName(q.class)}\t${qtypeName(q.type)}`);
  const sections: [string, readonly WireRecord[]][] = [
    ['ANSWER', m.answer],
    ['AUTHORITY', m.authority],
    ['ADDITIONAL', m.additional],
  ];
  for (const [title, rrs] of sections) {
    if (rrs.length === 0) continue;
    lines.push(`;; ${title} SECTION:`);
    for (const r of rrs) lines.push(recordText(r));
  }
  return lines.join('\n');
}

function renderSide(title: string, p: ParseOutcome | null): string {
  if (p === null) return `${title}: no reply`;
  if (!p.ok) return `${title}: unparseable (${p.error})`;
  return `${title}:\n${renderMessage(p.msg)}`;
}

/** Readable text of a comparison: the differences (and tolerated ones), then both replies. */
export function renderDiff(c: Comparison): string {
  const q =
    c.context.qname !== undefined
      ? `${c.context.qname} ${c.context.qtype !== undefined ? qtypeName(c.context.qtype) : ''}${c.context.proto ? ` over ${c.context.proto}` : ''}`
      : '(no question)';
  const lines: string[] = [`query: ${q}`];
  if (c.differences.length === 0 && c.tolerated.length === 0) {
    lines.push('replies are identical (except the id)');
    return lines.join('\n');
  }
  lines.push(`differences (${c.differences.length}):`);
  for (const d of c.differences) lines.push(`  ${d.detail}`);
  if (c.tolerated.length) {
    lines.push(`tolerated (${c.tolerated.length}):`);
    for (const t of c.tolerated) lines.push(`  [${t.rule}] ${t.difference.detail}`);
  }
  lines.push(renderSide('--- reference (CoreDNS)', c.reference));
  lines.push(renderSide('+++ candidate (clusterdns)', c.candidate));
  return lines.join('\n');
}
