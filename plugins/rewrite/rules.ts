/**
 * rewrite rules (docs/plugins.md, rewrite): parsing one rule from its flattened arguments, with
 * CoreDNS 1.15.0's checks and error texts, into a rule object the handler applies.
 *
 * Every rule has a cheap `matches` test on the current question (lower-cased name, type, class)
 * that allocates nothing, and an `apply` that changes the request state and may add response rules
 * (what to do to the reply on its way back). Names are compared the way CoreDNS compares them: the
 * lower-cased question name, absolute.
 */
import { isIPv4 } from 'node:net';
import { qclassFromName, qtypeFromName } from '../../src/dns/constants.js';
import { ipv6ToBytes } from '../../src/dns/name.js';
import { compileRe2, Re2Error, requiredLiteral } from '../../src/util/re2.js';
import {
  CnameResponseRule, EdnsRemoveResponseRule, EdnsRestoreResponseRule, NameResponseRule, RcodeResponseRule, regexRewriter,
  remapRewriter, suffixRewriter, TtlResponseRule, ValueResponseRule, type ResponseRule, type StringRewriter,
} from './response.js';
import { EDNS_NSID, EDNS_SUBNET, type RewriteState } from './state.js';

export type Mode = 'stop' | 'continue';

/** What a rule's match test reads: a Query or the rewritten state. */
export interface QuestionView {
  readonly lname: string;
  readonly qtype: number;
  readonly qclass: number;
}

export interface Rule {
  readonly mode: Mode;
  /** True when the rule may apply to this question (no allocation). */
  matches(q: QuestionView): boolean;
  /** Change the request state; false when the rule turns out not to apply (CoreDNS's RewriteIgnored). */
  apply(st: RewriteState): boolean;
  /** EDNS0 local option codes the rule sets (echoed in OPT-less replies, as CoreDNS registers them). */
  readonly ednsCodes?: readonly number[];
  /** The rule adds a response rule that may look names up again (cname). */
  readonly looksUp?: boolean;
}

/** A rule's error: the text CoreDNS gives (the setup adds `plugin/rewrite: ` and file:line). */
export class RuleError extends Error {}

const MAX_REGEXP_LEN = 10000;

/** CoreDNS's plugin.Name(s).Normalize(): lower case, absolute. */
export function normalize(s: string): string {
  const l = s.toLowerCase();
  return l.endsWith('.') ? l : `${l}.`;
}

/** Go's strings.ReplaceAll of `{0}`, `{1}`… with the submatches, in group order. */
export function expandGroups(template: string, groups: RegExpExecArray): string {
  let s = template;
  for (let i = 0; i < groups.length; i++) s = s.split(`{${i}}`).join(groups[i] ?? '');
  return s;
}

function subExprUsage(s: string): number {
  let n = 0;
  for (let i = 0; i <= 100; i++) if (s.includes(`{${i}}`)) n++;
  return n;
}

/** A Go regular expression as rewrite rules match it: against names, which hold no newline. */
function compileGoRegex(src: string): RegExp {
  return compileRe2(src, { noNewline: true }).re;
}

/** A test of a lower-cased name against `re`, with the pattern's required literal checked first. */
export function nameTester(re: RegExp, source: string): (lname: string) => boolean {
  const lit = requiredLiteral(source);
  if (lit === '') return (l) => re.test(l);
  return (l) => l.includes(lit) && re.test(l);
}

function numSubexp(re: RegExp): number {
  return (new RegExp(`${re.source}|`, re.flags).exec('')?.length ?? 1) - 1;
}

/** CoreDNS's isValidRegexPattern. */
function validRegex(from: string, to: string): RegExp {
  if (from.length > MAX_REGEXP_LEN) throw new RuleError(`regex pattern too long: ${from.length} > ${MAX_REGEXP_LEN}`);
  let re: RegExp;
  try {
    re = compileGoRegex(from);
  } catch {
    throw new RuleError(`invalid regex matching pattern: ${from}`);
  }
  if (subExprUsage(to) > numSubexp(re)) {
    throw new RuleError(`the rewrite regex pattern (${to}) uses more subexpressions than its corresponding matching regex pattern (${from})`);
  }
  return re;
}

// ---- name ------------------------------------------------------------------------------------

type MatchKind = 'exact' | 'prefix' | 'suffix' | 'substring' | 'regex';

abstract class NameRule implements Rule {
  constructor(
    readonly mode: Mode,
    /** Build auto response rules from the name before/after the rewrite. */
    private readonly auto: boolean,
    protected readonly replacement: string,
    private readonly staticRules: readonly ResponseRule[],
  ) {}

  abstract matches(q: QuestionView): boolean;
  protected abstract rewritten(lname: string): string | null;

  apply(st: RewriteState): boolean {
    const before = st.lname;
    const to = this.rewritten(before);
    if (to === null) return false;
    this.finish(st, before, to);
    return true;
  }

  /** Set the new name and add the response rules: auto (rewritten name back to `before`) and static. */
  protected finish(st: RewriteState, before: string, to: string): void {
    st.setName(to);
    if (this.auto) {
      const r = remapRewriter(to, before);
      st.response.push(new NameResponseRule(r), new ValueResponseRule(r));
    }
    for (const r of this.staticRules) st.response.push(r);
  }
}

class ExactNameRule extends NameRule {
  constructor(mode: Mode, private readonly from: string, to: string, answers: readonly ResponseRule[]) {
    super(mode, true, to, answers);
  }
  matches(q: QuestionView): boolean {
    return q.lname === this.from;
  }
  protected rewritten(lname: string): string | null {
    return lname === this.from ? this.replacement : null;
  }
}

class PrefixNameRule extends NameRule {
  constructor(mode: Mode, auto: boolean, private readonly prefix: string, to: string, answers: readonly ResponseRule[]) {
    super(mode, auto, to, answers);
  }
  matches(q: QuestionView): boolean {
    return q.lname.startsWith(this.prefix);
  }
  protected rewritten(lname: string): string | null {
    return lname.startsWith(this.prefix) ? this.replacement + lname.slice(this.prefix.length) : null;
  }
}

class SuffixNameRule extends NameRule {
  constructor(mode: Mode, auto: boolean, private readonly suffix: string, to: string, answers: readonly ResponseRule[]) {
    // auto for a suffix rule: the reverse suffix rewrite, fixed at setup.
    const r = suffixRewriter(to, suffix);
    super(mode, false, to, auto ? [new NameResponseRule(r), new ValueResponseRule(r), ...answers] : answers);
  }
  matches(q: QuestionView): boolean {
    return q.lname.endsWith(this.suffix);
  }
  protected rewritten(lname: string): string | null {
    return lname.endsWith(this.suffix) ? lname.slice(0, lname.length - this.suffix.length) + this.replacement : null;
  }
}

class SubstringNameRule extends NameRule {
  constructor(mode: Mode, auto: boolean, private readonly sub: string, to: string, answers: readonly ResponseRule[]) {
    super(mode, auto, to, answers);
  }
  matches(q: QuestionView): boolean {
    return q.lname.includes(this.sub);
  }
  protected rewritten(lname: string): string | null {
    return lname.includes(this.sub) ? lname.split(this.sub).join(this.replacement) : null;
  }
}

class RegexNameRule extends NameRule {
  private readonly test: (lname: string) => boolean;
  constructor(mode: Mode, auto: boolean, private readonly re: RegExp, to: string, answers: readonly ResponseRule[], source: string) {
    super(mode, auto, to, answers);
    this.test = nameTester(re, source);
  }
  matches(q: QuestionView): boolean {
    return this.test(q.lname);
  }
  protected rewritten(lname: string): string | null {
    const m = this.re.exec(lname);
    return m ? expandGroups(this.replacement, m) : null;
  }
}

/** `metadata` regex name rules: `{N}` groups and `{plugin/label}` metadata values in TO. */
type Part = { literal: string } | { group: number } | { label: string };

class MetadataNameRule extends NameRule {
  private readonly test: (lname: string) => boolean;
  constructor(mode: Mode, auto: boolean, private readonly re: RegExp, private readonly parts: readonly Part[], answers: readonly ResponseRule[], source: string) {
    super(mode, auto, '', answers);
    this.test = nameTester(re, source);
  }
  matches(q: QuestionView): boolean {
    return this.test(q.lname);
  }
  /** Not used: `apply` builds the name from the parts (metadata values are looked up per query). */
  protected rewritten(): string | null {
    return null;
  }
  override apply(st: RewriteState): boolean {
    const m = this.re.exec(st.lname);
    if (!m) return false;
    let out = '';
    for (const p of this.parts) {
      if ('literal' in p) out += p.literal;
      else if ('group' in p) out += m[p.group] ?? '';
      else {
        const v = st.metadata(p.label);
        if (!v) return false;
        out += v.toLowerCase();
      }
    }
    this.finish(st, st.lname, out);
    return true;
  }
}

function parseNameReplacement(replacement: string, groups: number): Part[] {
  const parts: Part[] = [];
  let rest = replacement;
  while (rest !== '') {
    const open = rest.indexOf('{');
    const before = open < 0 ? rest : rest.slice(0, open);
    if (before.includes('}')) throw new RuleError('unmatched closing brace in metadata name replacement');
    if (before !== '') parts.push({ literal: before.toLowerCase() });
    if (open < 0) break;
    const after = rest.slice(open + 1);
    const close = after.indexOf('}');
    if (close < 0) throw new RuleError('unclosed placeholder in metadata name replacement');
    const label = after.slice(0, close);
    if (/^[+-]?\d+$/.test(label)) {
      const g = Number(label);
      if (g < 0 || g > groups) throw new RuleError(`capture group ${label} does not exist in name matching pattern`);
      parts.push({ group: g });
    } else {
      if (!isMetadataLabel(label) || /[{}]/.test(label)) throw new RuleError(`invalid metadata label ${JSON.stringify(label)} in name replacement`);
      parts.push({ label });
    }
    rest = after.slice(close + 1);
  }
  return parts;
}

function isMetadataLabel(label: string): boolean {
  const p = label.indexOf('/');
  return p > 0 && p < label.length - 1;
}

function parseAnswerRules(name: string, args: readonly string[]): { auto: boolean; rules: ResponseRule[] } {
  let auto = false;
  const rules: ResponseRule[] = [];
  let arg = 0;
  let nameRules = 0;
  let last = '';
  if (args.length < 2) throw new RuleError(`invalid arguments for ${name} rule`);
  while (arg < args.length) {
    if (last === '' && args[arg] !== 'answer') throw new RuleError(`exceeded the number of arguments for a non-answer rule argument for ${name} rule`);
    if (args[arg] === 'answer') arg++;
    if (args.length - arg === 0) throw new RuleError(`type missing for answer rule for ${name} rule`);
    last = args[arg]!;
    arg++;
    switch (last) {
      case 'auto':
        auto = true;
        continue;
      case 'name':
      case 'value': {
        if (args.length - arg < 2) throw new RuleError(`${last} answer rule for ${name} rule: 2 arguments required`);
        const from = args[arg]!;
        const to = args[arg + 1]!;
        let re: RegExp;
        try {
          re = validRegex(from, to);
        } catch (e) {
          throw new RuleError(`${last} answer rule for ${name} rule: ${(e as Error).message}`);
        }
        const r = regexRewriter(re, normalize(to));
        rules.push(last === 'name' ? new NameResponseRule(r) : new ValueResponseRule(r));
        arg += 2;
        if (last === 'name') nameRules++;
        break;
      }
      default:
        throw new RuleError(`invalid type ${JSON.stringify(last)} for answer rule for ${name} rule`);
    }
  }
  if (auto && nameRules > 0) throw new RuleError('auto name answer rule cannot be combined with explicit name anwer rules');
  return { auto, rules };
}

function newNameRule(mode: Mode, args: readonly string[]): Rule {
  if (args.length < 2) throw new RuleError('too few arguments for a name rule');
  let kind: string;
  let from: string;
  let to: string;
  if (args.length === 2) {
    kind = 'exact';
    from = normalize(args[0]!);
    to = normalize(args[1]!);
  } else {
    kind = args[0]!.toLowerCase();
    if (kind === 'regex') {
      from = args[1]!;
      to = args[2]!;
    } else {
      from = normalize(args[1]!);
      to = normalize(args[2]!);
    }
  }
  let answerStart = 3;
  const withMetadata = args.length > 3 && args[3] === 'metadata';
  if (withMetadata) {
    if (kind !== 'regex') throw new RuleError('metadata is only supported for regex name rules');
    answerStart++;
  }
  let auto = false;
  let answers: ResponseRule[] = [];
  if (args.length > answerStart) ({ auto, rules: answers } = parseAnswerRules(kind, args.slice(answerStart)));
  switch (kind as MatchKind) {
    case 'exact':
      validRegex(to, from);
      return new ExactNameRule(mode, from, to, answers);
    case 'prefix':
      return new PrefixNameRule(mode, auto, from, to, answers);
    case 'suffix':
      return new SuffixNameRule(mode, auto, from, to, answers);
    case 'substring':
      return new SubstringNameRule(mode, auto, from, to, answers);
    case 'regex': {
      if (withMetadata) {
        const re = validRegex(from, '');
        return new MetadataNameRule(mode, auto, re, parseNameReplacement(to.endsWith('.') ? to : `${to}.`, numSubexp(re)), answers, from);
      }
      const re = validRegex(from, to);
      return new RegexNameRule(mode, auto, re, normalize(args[2]!), answers, from);
    }
    default:
      throw new RuleError(`name rule supports only exact, prefix, suffix, substring, and regex name matching, received: ${kind}`);
  }
}

// ---- type, class -----------------------------------------------------------------------------

/** miekg/dns StringToType: mnemonics only (no TYPEnnn form). */
function typeFromName(s: string): number | undefined {
  if (/^TYPE\d+$/.test(s)) return undefined;
  return qtypeFromName(s);
}

function classFromName(s: string): number | undefined {
  if (/^CLASS\d+$/.test(s)) return undefined;
  if (s === 'CS') return 2;
  return qclassFromName(s);
}

class TypeRule implements Rule {
  constructor(readonly mode: Mode, private readonly from: number, private readonly to: number) {}
  matches(q: QuestionView): boolean {
    return this.from > 0 && this.to > 0 && q.qtype === this.from;
  }
  apply(st: RewriteState): boolean {
    st.setType(this.to);
    return true;
  }
}

class ClassRule implements Rule {
  constructor(readonly mode: Mode, private readonly from: number, private readonly to: number) {}
  matches(q: QuestionView): boolean {
    return this.from > 0 && this.to > 0 && q.qclass === this.from;
  }
  apply(st: RewriteState): boolean {
    st.setClass(this.to);
    return true;
  }
}

// ---- ttl and rcode (response-only rules selected by name) --------------------------------------

type NameTest = (lname: string) => boolean;

function nameTest(kind: string, arg: string, what: 'ttl' | 'rcode'): NameTest {
  switch (kind.toLowerCase()) {
    case 'exact': {
      const n = normalize(arg);
      return (l) => l === n;
    }
    case 'prefix': {
      const n = normalize(arg);
      return (l) => l.startsWith(n);
    }
    case 'suffix': {
      const n = normalize(arg);
      return (l) => l.endsWith(n);
    }
    case 'substring': {
      const n = normalize(arg);
      return (l) => l.includes(n);
    }
    case 'regex': {
      if (arg.length > MAX_REGEXP_LEN) throw new RuleError(`regex pattern too long in a ${what} rule: ${arg.length} > ${MAX_REGEXP_LEN}`);
      let re: RegExp;
      try {
        re = compileGoRegex(arg);
      } catch {
        throw new RuleError(`invalid regex pattern in a ${what} rule: ${arg}`);
      }
      return nameTester(re, arg);
    }
    default:
      throw new RuleError(`${what} rule supports only exact, prefix, suffix, substring, and regex name matching`);
  }
}

class ResponseOnlyRule implements Rule {
  constructor(readonly mode: Mode, private readonly test: NameTest, private readonly rule: ResponseRule) {}
  matches(q: QuestionView): boolean {
    return this.test(q.lname);
  }
  apply(st: RewriteState): boolean {
    st.response.push(this.rule);
    return true;
  }
}

const MAX_U32 = 4294967295;

function parseUint32(s: string): number | undefined {
  if (!/^\d+$/.test(s)) return undefined;
  const n = Number(s);
  return n <= MAX_U32 ? n : undefined;
}

/** CoreDNS's isValidTTL: `N`, `MIN-MAX`, `-MAX`, `MIN-`. */
function ttlRange(v: string): [number, number] | null {
  const s = v.split('-');
  if (s.length === 1) {
    const n = parseUint32(s[0]!);
    return n === undefined ? null : [n, n];
  }
  if (s.length !== 2) return null;
  let min = 0;
  let max = 2147483647;
  if (s[0] !== '') {
    const n = parseUint32(s[0]!);
    if (n === undefined) return null;
    min = n;
  }
  if (s[1] === '') {
    if (s[0] === '') return null;
  } else {
    const n = parseUint32(s[1]!);
    if (n === undefined) return null;
    max = n;
  }
  return min > max ? null : [min, max];
}

function newTtlRule(mode: Mode, args: readonly string[]): Rule {
  if (args.length < 2) throw new RuleError(`too few (${args.length}) arguments for a ttl rule`);
  let s = '';
  if (args.length === 2) s = args[1]!;
  if (args.length === 3) s = args[2]!;
  const range = ttlRange(s);
  if (!range) throw new RuleError(`invalid TTL '${s}' for a ttl rule`);
  const resp = new TtlResponseRule(range[0], range[1]);
  if (args.length === 3) return new ResponseOnlyRule(mode, nameTest(args[0]!, args[1]!, 'ttl'), resp);
  if (args.length > 3) throw new RuleError('many few arguments for a ttl rule');
  return new ResponseOnlyRule(mode, nameTest('exact', args[0]!, 'ttl'), resp);
}

const RCODES: Record<string, number> = {
  NOERROR: 0, FORMERR: 1, SERVFAIL: 2, NXDOMAIN: 3, NOTIMP: 4, REFUSED: 5, YXDOMAIN: 6, YXRRSET: 7, NXRRSET: 8,
  NOTAUTH: 9, NOTZONE: 10, BADSIG: 16, BADVERS: 16, BADKEY: 17, BADTIME: 18, BADMODE: 19, BADNAME: 20, BADALG: 21,
  BADTRUNC: 22, BADCOOKIE: 23,
};

function rcodeValue(v: string): number | undefined {
  const n = parseUint32(v);
  if (n !== undefined && n <= 23) return n;
  return RCODES[v.toUpperCase()];
}

function newRcodeRule(mode: Mode, args: readonly string[]): Rule {
  if (args.length < 3) throw new RuleError(`too few (${args.length}) arguments for a rcode rule`);
  let oldS = '';
  let newS = '';
  if (args.length === 3) [oldS, newS] = [args[1]!, args[2]!];
  if (args.length === 4) [oldS, newS] = [args[2]!, args[3]!];
  const oldV = rcodeValue(oldS);
  if (oldV === undefined) throw new RuleError(`invalid matching RCODE '${oldS}' for a rcode rule`);
  const newV = rcodeValue(newS);
  if (newV === undefined) throw new RuleError(`invalid replacement RCODE '${newS}' for a rcode rule`);
  const resp = new RcodeResponseRule(oldV, newV);
  if (args.length === 4) return new ResponseOnlyRule(mode, nameTest(args[0]!, args[1]!, 'rcode'), resp);
  if (args.length > 4) throw new RuleError('many few arguments for a rcode rule');
  return new ResponseOnlyRule(mode, nameTest('exact', args[0]!, 'rcode'), resp);
}

// ---- cname -----------------------------------------------------------------------------------

export interface CnameTarget {
  /** [from, to] for a CNAME target, or null when the rule does not apply to it. */
  targets(target: string): [string, string] | null;
}

class CnameRule implements Rule, CnameTarget {
  readonly looksUp = true;
  constructor(readonly mode: Mode, private readonly kind: MatchKind, private readonly from: string, private readonly to: string, private readonly re: RegExp | null) {}
  matches(): boolean {
    return this.from.length > 0 && this.to.length > 0;
  }
  apply(st: RewriteState): boolean {
    st.response.push(new CnameResponseRule(this));
    return true;
  }
  targets(t: string): [string, string] | null {
    switch (this.kind) {
      case 'exact':
        return [this.from, this.to];
      case 'prefix':
        return t.startsWith(this.from) ? [t, this.to + t.slice(this.from.length)] : null;
      case 'suffix':
        return t.endsWith(this.from) ? [t, t.slice(0, t.length - this.from.length) + this.to] : null;
      case 'substring':
        return t.includes(this.from) ? [t, t.split(this.from).join(this.to)] : null;
      case 'regex': {
        const m = this.re!.exec(t);
        return m ? [t, expandGroups(this.to, m)] : null;
      }
    }
  }
}

function newCnameRule(mode: Mode, args: readonly string[]): Rule {
  let kind: string;
  let from: string;
  let to: string;
  if (args.length === 3) {
    kind = args[0]!.toLowerCase();
    if (!['exact', 'prefix', 'suffix', 'substring', 'regex'].includes(kind)) throw new RuleError(`unknown cname rewrite type: ${kind}`);
    from = args[1]!.toLowerCase();
    to = args[2]!.toLowerCase();
  } else if (args.length === 2) {
    kind = 'exact';
    from = args[0]!.toLowerCase();
    to = args[1]!.toLowerCase();
  } else {
    throw new RuleError(`too few (${args.length}) arguments for a cname rule`);
  }
  if (kind === 'exact') {
    from = normalize(from);
    to = normalize(to);
  }
  let re: RegExp | null = null;
  if (kind === 'regex') {
    if (from.length > MAX_REGEXP_LEN) throw new RuleError(`regex pattern too long in a cname rule: ${from.length} > ${MAX_REGEXP_LEN}`);
    try {
      re = compileGoRegex(from);
    } catch (e) {
      throw new RuleError(`invalid cname rewrite regex pattern: ${e instanceof Re2Error ? `error parsing regexp: ${e.message}` : String(e)}`);
    }
  }
  return new CnameRule(mode, kind as MatchKind, from, to, re);
}

// ---- edns0 -----------------------------------------------------------------------------------

type Action = 'append' | 'replace' | 'set' | 'unset';

/** Go's strconv.ParseUint(s, 0, 16) error, or the value. */
function parseUint16(s: string): number {
  let body = s;
  let base = 10;
  if (/^0[xX]/.test(s)) [base, body] = [16, s.slice(2)];
  else if (/^0[bB]/.test(s)) [base, body] = [2, s.slice(2)];
  else if (/^0[oO]/.test(s)) [base, body] = [8, s.slice(2)];
  else if (/^0\d/.test(s)) [base, body] = [8, s.slice(1)];
  const digits = { 2: /^[01]+(_?[01]+)*$/, 8: /^[0-7]+(_?[0-7]+)*$/, 10: /^\d+$/, 16: /^[0-9a-fA-F]+(_?[0-9a-fA-F]+)*$/ }[base]!;
  if (body === '' || !digits.test(body) || (base === 10 && body.includes('_'))) throw new RuleError(`strconv.ParseUint: parsing ${JSON.stringify(s)}: invalid syntax`);
  const n = parseInt(body.replace(/_/g, ''), base);
  if (n > 0xffff) throw new RuleError(`strconv.ParseUint: parsing ${JSON.stringify(s)}: value out of range`);
  return n;
}

function hexDecode(s: string): Buffer {
  for (let i = 0; i < s.length; i++) {
    if (!/[0-9a-fA-F]/.test(s[i]!)) throw new RuleError(`encoding/hex: invalid byte: U+${s.charCodeAt(i).toString(16).toUpperCase().padStart(4, '0')} '${s[i]}'`);
  }
  if (s.length % 2 === 1) throw new RuleError('encoding/hex: odd length hex string');
  return Buffer.from(s, 'hex');
}

/** Option codes miekg/dns decodes into their own types (never matched as a "local" option). */
const TYPED_CODES = new Set([1, 2, 3, 5, 6, 7, 8, 9, 10, 11, 12, 15]);

class EdnsLocalRule implements Rule {
  readonly ednsCodes: readonly number[];
  constructor(readonly mode: Mode, private readonly action: Action, private readonly code: number, private readonly data: Buffer, private readonly revert: boolean) {
    this.ednsCodes = [code];
  }
  matches(): boolean {
    return true;
  }
  apply(st: RewriteState): boolean {
    const opts = st.options();
    if (this.action === 'unset') {
      st.setOptions(opts.filter((o) => o.code !== this.code));
      return true;
    }
    if ((this.action === 'replace' || this.action === 'set') && !TYPED_CODES.has(this.code)) {
      const i = opts.findIndex((o) => o.code === this.code);
      if (i >= 0) {
        if (this.revert) st.response.push(new EdnsRestoreResponseRule(this.code, opts[i]!.data));
        opts[i] = { code: this.code, data: this.data };
        st.setOptions(opts);
        return true;
      }
    }
    if (this.action === 'append' || this.action === 'set') {
      opts.push({ code: this.code, data: this.data });
      st.setOptions(opts);
      if (this.revert) st.response.push(new EdnsRemoveResponseRule(this.code));
      return true;
    }
    return false;
  }
}

const VARIABLES = ['{qname}', '{qtype}', '{client_ip}', '{client_port}', '{protocol}', '{server_ip}', '{server_port}'];

function ipBytes(family: 1 | 2, ip: string): Buffer {
  if (family === 1) {
    const v4 = ip.startsWith('::ffff:') && isIPv4(ip.slice(7)) ? ip.slice(7) : ip;
    return isIPv4(v4) ? Buffer.from(v4.split('.').map(Number)) : Buffer.alloc(0);
  }
  if (isIPv4(ip)) return Buffer.from([...new Array<number>(10).fill(0), 0xff, 0xff, ...ip.split('.').map(Number)]);
  return Buffer.from(ipv6ToBytes(ip) ?? new Uint8Array(0));
}

function u16(n: number): Buffer {
  const b = Buffer.alloc(2);
  b.writeUInt16BE(n & 0xffff);
  return b;
}

class EdnsVariableRule implements Rule {
  readonly ednsCodes: readonly number[];
  constructor(readonly mode: Mode, private readonly action: Action, private readonly code: number, private readonly variable: string, private readonly revert: boolean) {
    this.ednsCodes = [code];
  }
  matches(): boolean {
    return true;
  }
  private value(st: RewriteState): Buffer | null {
    const t = st.query.transport;
    switch (this.variable) {
      case '{qname}': return Buffer.from(st.name);
      case '{qtype}': return u16(st.qtype);
      case '{client_ip}': return ipBytes(t.family, t.remoteAddress);
      case '{server_ip}': return ipBytes(t.family, t.localAddress);
      case '{client_port}': return u16(t.remotePort);
      case '{server_port}': return u16(t.localPort);
      case '{protocol}': return Buffer.from(t.proto);
    }
    const v = st.metadata(this.variable.slice(1, -1));
    return v ? Buffer.from(v) : null;
  }
  apply(st: RewriteState): boolean {
    const data = this.value(st);
    if (data === null) return false;
    const opts = st.options();
    const i = TYPED_CODES.has(this.code) ? -1 : opts.findIndex((o) => o.code === this.code);
    if (i >= 0) {
      if (this.action === 'replace' || this.action === 'set') {
        if (this.revert) st.response.push(new EdnsRestoreResponseRule(this.code, opts[i]!.data));
        opts[i] = { code: this.code, data };
        st.setOptions(opts);
        return true;
      }
      return false;
    }
    if (this.action === 'append' || this.action === 'set') {
      opts.push({ code: this.code, data });
      st.setOptions(opts);
      if (this.revert) st.response.push(new EdnsRemoveResponseRule(this.code));
      return true;
    }
    return false;
  }
}

class EdnsNsidRule implements Rule {
  constructor(readonly mode: Mode, private readonly action: Action, private readonly revert: boolean) {}
  matches(): boolean {
    return true;
  }
  apply(st: RewriteState): boolean {
    const opts = st.options();
    if (this.action === 'unset') {
      st.setOptions(opts.filter((o) => o.code !== EDNS_NSID));
      return true;
    }
    const i = opts.findIndex((o) => o.code === EDNS_NSID);
    if (i >= 0 && (this.action === 'replace' || this.action === 'set')) {
      if (this.revert) st.response.push(new EdnsRestoreResponseRule(EDNS_NSID, opts[i]!.data));
      opts[i] = { code: EDNS_NSID, data: Buffer.alloc(0) };
      st.setOptions(opts);
      return true;
    }
    if (this.action === 'append' || this.action === 'set') {
      opts.push({ code: EDNS_NSID, data: Buffer.alloc(0) });
      st.setOptions(opts);
      if (this.revert) st.response.push(new EdnsRemoveResponseRule(EDNS_NSID));
      return true;
    }
    return false;
  }
}

class EdnsSubnetRule implements Rule {
  constructor(readonly mode: Mode, private readonly action: Action, private readonly v4: number, private readonly v6: number, private readonly revert: boolean) {}
  matches(): boolean {
    return true;
  }
  /** The ECS option data for the client's address (family, source prefix, scope 0, address truncated). */
  private ecs(st: RewriteState): Buffer {
    const t = st.query.transport;
    const bits = t.family === 1 ? this.v4 : this.v6;
    const addr = ipBytes(t.family, t.remoteAddress);
    const n = Math.ceil(bits / 8);
    const out = Buffer.alloc(4 + n);
    out.writeUInt16BE(t.family, 0);
    out[2] = bits;
    out[3] = 0;
    for (let i = 0; i < n; i++) {
      const keep = Math.min(8, bits - i * 8);
      out[4 + i] = (addr[i] ?? 0) & ((0xff << (8 - keep)) & 0xff);
    }
    return out;
  }
  apply(st: RewriteState): boolean {
    const opts = st.options();
    if (this.action === 'unset') {
      st.setOptions(opts.filter((o) => o.code !== EDNS_SUBNET));
      return true;
    }
    const i = opts.findIndex((o) => o.code === EDNS_SUBNET);
    if (i >= 0) {
      if (this.action === 'replace' || this.action === 'set') {
        if (this.revert) st.response.push(new EdnsRestoreResponseRule(EDNS_SUBNET, opts[i]!.data));
        opts[i] = { code: EDNS_SUBNET, data: this.ecs(st) };
        st.setOptions(opts);
        return true;
      }
      return false;
    }
    if (this.action === 'append' || this.action === 'set') {
      opts.push({ code: EDNS_SUBNET, data: this.ecs(st) });
      st.setOptions(opts);
      if (this.revert) st.response.push(new EdnsRemoveResponseRule(EDNS_SUBNET));
      return true;
    }
    return false;
  }
}

function newEdnsRule(mode: Mode, argsIn: readonly string[]): Rule {
  let args = argsIn;
  if (args.length < 2) throw new RuleError('too few arguments for an EDNS0 rule');
  const ruleType = args[0]!.toLowerCase();
  const action = args[1]!.toLowerCase();
  if (action === 'unset') {
    switch (ruleType) {
      case 'local':
        if (args.length !== 3) throw new RuleError('local unset action requires exactly two arguments');
        return new EdnsLocalRule(mode, 'unset', parseUint16(args[2]!), Buffer.alloc(0), false);
      case 'nsid':
        if (args.length !== 2) throw new RuleError('nsid unset action requires exactly one argument');
        return new EdnsNsidRule(mode, 'unset', false);
      case 'subnet':
        if (args.length !== 2) throw new RuleError('subnet unset action requires exactly one argument');
        return new EdnsSubnetRule(mode, 'unset', 0, 0, false);
      default:
        throw new RuleError(`invalid rule type ${JSON.stringify(ruleType)}`);
    }
  }
  if (action !== 'append' && action !== 'replace' && action !== 'set') throw new RuleError(`invalid action: ${JSON.stringify(action)}`);
  let revert = false;
  if (args[args.length - 1] === 'revert') {
    revert = true;
    args = args.slice(0, -1);
  }
  switch (ruleType) {
    case 'local': {
      if (args.length !== 4) throw new RuleError('EDNS0 local rules require three or four args');
      const data = args[3]!;
      if (data.startsWith('{') && data.endsWith('}')) {
        const code = parseUint16(args[2]!);
        if (!VARIABLES.includes(data) && !isMetadataLabel(data.slice(1, -1))) throw new RuleError(`unsupported variable name ${JSON.stringify(data)}`);
        return new EdnsVariableRule(mode, action, code, data, revert);
      }
      const code = parseUint16(args[2]!);
      const bytes = data.startsWith('0x') ? hexDecode(data.slice(2)) : Buffer.from(data);
      return new EdnsLocalRule(mode, action, code, bytes, revert);
    }
    case 'nsid':
      if (args.length !== 2) throw new RuleError('EDNS0 NSID rules can accept no more than one arg');
      return new EdnsNsidRule(mode, action, revert);
    case 'subnet': {
      if (args.length !== 4) throw new RuleError('EDNS0 subnet rules require three or four args');
      const v4 = parseUint16(args[2]!);
      if (v4 > 32) throw new RuleError(`invalid IPv4 bit mask length ${v4}`);
      const v6 = parseUint16(args[3]!);
      if (v6 > 128) throw new RuleError(`invalid IPv6 bit mask length ${v6}`);
      return new EdnsSubnetRule(mode, action, v4, v6, revert);
    }
    default:
      throw new RuleError(`invalid rule type ${JSON.stringify(ruleType)}`);
  }
}

// ---- entry -----------------------------------------------------------------------------------

/** CoreDNS's newRule: `[continue|stop] KIND ARGS...`. */
export function newRule(args: readonly string[]): Rule {
  if (args.length === 0) throw new RuleError('no rule type specified for rewrite');
  const arg0 = args[0]!.toLowerCase();
  let mode: Mode = 'stop';
  let ruleType: string;
  let expectNumArgs: number;
  let start: number;
  if (arg0 === 'continue' || arg0 === 'stop') {
    if (arg0 === 'continue') mode = 'continue';
    if (args.length < 2) throw new RuleError(`${arg0} rule must begin with a rule type`);
    ruleType = args[1]!.toLowerCase();
    expectNumArgs = args.length - 1;
    start = 2;
  } else {
    ruleType = arg0;
    expectNumArgs = args.length;
    start = 1;
  }
  const rest = args.slice(start);
  switch (ruleType) {
    case 'answer':
      throw new RuleError('response rewrites must begin with a name rule');
    case 'name':
      return newNameRule(mode, rest);
    case 'class': {
      if (expectNumArgs !== 3) throw new RuleError(`${ruleType} rules must have exactly two arguments`);
      const from = classFromName(rest[0]!.toUpperCase());
      if (from === undefined) throw new RuleError(`invalid class ${JSON.stringify(rest[0]!.toUpperCase())}`);
      const to = classFromName(rest[1]!.toUpperCase());
      if (to === undefined) throw new RuleError(`invalid class ${JSON.stringify(rest[1]!.toUpperCase())}`);
      return new ClassRule(mode, from, to);
    }
    case 'type': {
      if (expectNumArgs !== 3) throw new RuleError(`${ruleType} rules must have exactly two arguments`);
      const from = typeFromName(rest[0]!.toUpperCase());
      if (from === undefined) throw new RuleError(`invalid type ${JSON.stringify(rest[0]!.toUpperCase())}`);
      const to = typeFromName(rest[1]!.toUpperCase());
      if (to === undefined) throw new RuleError(`invalid type ${JSON.stringify(rest[1]!.toUpperCase())}`);
      return new TypeRule(mode, from, to);
    }
    case 'edns0':
      return newEdnsRule(mode, rest);
    case 'ttl':
      return newTtlRule(mode, rest);
    case 'cname':
      return newCnameRule(mode, rest);
    case 'rcode':
      return newRcodeRule(mode, rest);
    default:
      throw new RuleError(`invalid rule type ${JSON.stringify(args[0])}`);
  }
}

export type { StringRewriter };
