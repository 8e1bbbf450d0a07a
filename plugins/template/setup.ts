/**
 * Parsing of `template CLASS TYPE [ZONES...] { ... }` (docs/plugins.md, template): every
 * occurrence is one template, tried in Corefile order. Regexes and Go templates are compiled here,
 * once; anything clusterdns cannot render exactly as CoreDNS does is a setup error naming it.
 */
import type { Dispenser } from '../../src/corefile/dispenser.js';
import { ConfigError, ConfigErrorList, type Token } from '../../src/corefile/types.js';
import { directive, option, parseOccurrence, str, zoneArg, type ParsedOption } from '../../src/corefile/options.js';
import { qclassFromName, qtypeFromName, qtypeName, Rcode, rcodeFromName } from '../../src/dns/constants.js';
import { normalizeZoneArgs } from '../../src/dns/name.js';
import { RRTEXT_TYPES } from '../../src/dns/rrtext.js';
import { compileRe2, Re2Error, subexpNames } from '../../src/util/re2.js';
import { ExprCompileError } from '../../src/expr/errors.js';
import { Expression } from '../../src/expr/expression.js';
import { ENV_FUNCS, EXPR_RESERVED } from '../../src/expr/names.js';
import { TemplateParseError } from './gotemplate/errors.js';
import { GoTemplate } from './gotemplate/template.js';

export const TEMPLATE_OPTIONS = directive('template', {
  args: { args: [str('CLASS'), str('TYPE')], rest: zoneArg(), min: 0 },
  options: [
    option('match', { rest: str('REGEX'), min: 1, repeat: 'all' }),
    option('var', { rest: str('EXPRESSION'), min: 2, repeat: 'all' }),
    option('expr', { rest: str('EXPRESSION'), min: 1, repeat: 'all' }),
    option('answer', { rest: str('RR'), min: 1, repeat: 'all' }),
    option('additional', { rest: str('RR'), min: 1, repeat: 'all' }),
    option('authority', { rest: str('RR'), min: 1, repeat: 'all' }),
    option('rcode', { rest: str('CODE'), min: 1 }),
    option('ederror', { rest: str('EXTENDED_ERROR_CODE'), min: 1 }),
    option('fallthrough', { rest: zoneArg(), min: 0 }),
    option('upstream', { rest: str('ADDRESS'), min: 0 }),
  ],
});

/** A compiled `match` regex. */
export interface TemplateRegex {
  readonly source: string;
  readonly re: RegExp;
  /** Go's SubexpNames: '' for unnamed groups, index 0 = whole match. */
  readonly names: readonly string[];
}

export type Section = 'answer' | 'additional' | 'authority';

export interface RRTemplate {
  readonly section: Section;
  readonly tmpl: GoTemplate;
  /** Go's `Tree.Root.String()`: the `template` label of the failure metrics. */
  readonly label: string;
}

export interface TemplateConfig {
  /** 255 = ANY. */
  readonly qclass: number;
  /** 255 = ANY. */
  readonly qtype: number;
  readonly zones: readonly string[];
  readonly regexes: readonly TemplateRegex[];
  readonly answer: readonly RRTemplate[];
  readonly additional: readonly RRTemplate[];
  readonly authority: readonly RRTemplate[];
  readonly rcode: number;
  readonly ederror: { readonly code: number; readonly reason: string } | null;
  /** Zones subject to fallthrough; null = no fallthrough. */
  readonly fallthrough: readonly string[] | null;
  /** `var NAME EXPRESSION`, evaluated in order for each match. */
  readonly vars: readonly { readonly name: string; readonly expr: Expression }[];
  /** `expr EXPRESSION`: all must be true for a match. */
  readonly exprs: readonly Expression[];
}

const MAX_REGEX_LEN = 10000;

/** miekg/dns StringToClass (exact spelling). */
function classFromName(s: string): number | undefined {
  if (s === 'CS') return 2;
  if (s !== s.toUpperCase() || s.startsWith('CLASS')) return undefined;
  const c = qclassFromName(s);
  return c;
}

/** miekg/dns StringToType (exact spelling, no TYPEnnn). */
function typeFromName(s: string): number | undefined {
  if (s !== s.toUpperCase() || /^TYPE\d+$/.test(s)) return undefined;
  return qtypeFromName(s);
}

const RCODES = [
  'NOERROR',
  'FORMERR',
  'SERVFAIL',
  'NXDOMAIN',
  'NOTIMP',
  'REFUSED',
  'YXDOMAIN',
  'YXRRSET',
  'NXRRSET',
  'NOTAUTH',
  'NOTZONE',
];

/** The data fields CoreDNS gives a template, and the sub-fields of the DNS objects clusterdns models. */
const MESSAGE_FIELDS = new Set([
  'Id',
  'Response',
  'Opcode',
  'Authoritative',
  'Truncated',
  'RecursionDesired',
  'RecursionAvailable',
  'Zero',
  'AuthenticatedData',
  'CheckingDisabled',
  'Rcode',
  'Question',
]);
const QUESTION_FIELDS = new Set(['Name', 'Qtype', 'Qclass']);

function err(tok: Token, msg: string): ConfigError {
  return new ConfigError(msg, tok.file, tok.line, 'template');
}

/** CoreDNS's `c.ArgErr()` naming `text`. */
function argErr(tok: Token, text: string): ConfigError {
  return err(tok, `Wrong argument count or unexpected line ending after '${text}'`);
}

/** The generic parser's `unknown property 'x'` is, in CoreDNS's template, an argument error. */
function asCoreDNS(e: unknown): unknown {
  const one = (c: ConfigError): ConfigError => {
    const m = /^unknown property '(.*)'$/.exec(c.message);
    return m
      ? new ConfigError(`Wrong argument count or unexpected line ending after '${m[1]}'`, c.file, c.line, c.plugin)
      : c;
  };
  if (e instanceof ConfigErrorList) return new ConfigErrorList(e.errors.map(one));
  if (e instanceof ConfigError) return one(e);
  return e;
}

/** Setup-time checks of what a template reads and writes (see the file comment). */
function checkTemplate(t: GoTemplate, text: string, tok: Token): void {
  for (const path of t.rootFieldPaths()) {
    const [root, sub] = path;
    if (root === 'Message') {
      if (sub === undefined)
        throw err(
          tok,
          `template ${JSON.stringify(text)}: .Message as a whole is not supported by clusterdns; use its fields (${[...MESSAGE_FIELDS].join(', ')})`,
        );
      if (!MESSAGE_FIELDS.has(sub))
        throw err(tok, `template ${JSON.stringify(text)}: .Message.${sub} is not supported by clusterdns`);
    }
    if (root === 'Question' && sub !== undefined && !QUESTION_FIELDS.has(sub))
      throw err(tok, `template ${JSON.stringify(text)}: .Question.${sub} is not supported by clusterdns`);
  }
  // A literal record type outside the small RR parser's set would only fail at query time.
  const literal = text.replace(/\{\{[\s\S]*?\}\}/g, ' X ').replace(/"(?:[^"\\]|\\.)*"/g, ' ');
  for (const w of literal.split(/[\s()]+/).slice(1)) {
    if (w === 'ANY' || w !== w.toUpperCase() || /^\d/.test(w) || classFromName(w) !== undefined) continue;
    const ty = typeFromName(w);
    if (ty !== undefined && !RRTEXT_TYPES.includes(qtypeName(ty))) {
      throw err(
        tok,
        `template ${JSON.stringify(text)}: record type ${w} is not supported by clusterdns's template plugin (supported: ${RRTEXT_TYPES.join(', ')})`,
      );
    }
  }
}

function compileSection(o: ParsedOption, section: Section): RRTemplate[] {
  const out: RRTemplate[] = [];
  const last = o.raw[o.raw.length - 1] ?? '';
  for (const text of o.raw) {
    let tmpl: GoTemplate;
    try {
      tmpl = GoTemplate.parse(section, text);
    } catch (e) {
      if (e instanceof TemplateParseError) throw err(o.token, `could not compile template: ${last}, ${e.message}`);
      throw e;
    }
    checkTemplate(tmpl, text, o.token);
    out.push({ section, tmpl, label: tmpl.treeString() });
  }
  return out;
}

/** Parse every occurrence of `template` in the block; `blockZones` when an occurrence names none. */
export function parseTemplates(d: Dispenser, blockZones: readonly string[]): TemplateConfig[] {
  const out: TemplateConfig[] = [];
  while (d.next()) {
    let occ;
    try {
      occ = parseOccurrence(d, TEMPLATE_OPTIONS);
    } catch (e) {
      throw asCoreDNS(e);
    }
    const line = occ.directive;
    if (line.raw.length < 1) throw argErr(line.token, line.token.text);
    const qclass = classFromName(line.raw[0]!);
    if (qclass === undefined) throw err(line.token, `invalid query class ${line.raw[0]}`);
    if (line.raw.length < 2) throw argErr(line.token, line.raw[0]!);
    const qtype = typeFromName(line.raw[1]!);
    if (qtype === undefined) throw err(line.token, `invalid RR class ${line.raw[1]}`);
    const zoneArgs = line.raw.slice(2);
    const zones = zoneArgs.length > 0 ? normalizeZoneArgs(zoneArgs) : [...blockZones];

    const regexes: TemplateRegex[] = [];
    const answer: RRTemplate[] = [];
    const additional: RRTemplate[] = [];
    const authority: RRTemplate[] = [];
    let rcode: number = Rcode.NOERROR;
    let ederror: TemplateConfig['ederror'] = null;
    let fallthrough: string[] | null = null;
    const vars: { name: string; expr: Expression }[] = [];
    const exprs: Expression[] = [];
    const declared = new Set<string>();
    for (const o of occ.options) {
      switch (o.name) {
        case 'match':
          for (const src of o.raw) {
            if (src.length > MAX_REGEX_LEN)
              throw err(o.token, `regex pattern too long: ${src.length} > ${MAX_REGEX_LEN}`);
            try {
              const c = compileRe2(src);
              regexes.push({ source: src, re: c.re, names: subexpNames(c) });
            } catch (e) {
              if (e instanceof Re2Error)
                throw err(o.token, `could not parse regex: ${src}, error parsing regexp: ${e.message}`);
              throw e;
            }
          }
          break;
        case 'var': {
          const name = o.raw[0]!;
          if (!/^[a-zA-Z_][a-zA-Z0-9_]*$/.test(name))
            throw err(o.token, `invalid variable name ${JSON.stringify(name)}`);
          if (declared.has(name) || ENV_FUNCS[name] !== undefined || EXPR_RESERVED.has(name))
            throw err(o.token, `variable name ${JSON.stringify(name)} is reserved`);
          try {
            vars.push({ name, expr: Expression.compile(o.raw.slice(1).join(' '), declared) });
          } catch (e) {
            if (e instanceof ExprCompileError)
              throw err(o.token, `could not compile expression: ${name}, ${e.message}`);
            throw e;
          }
          declared.add(name);
          break;
        }
        case 'expr':
          try {
            exprs.push(Expression.compile(o.raw.join(' '), declared));
          } catch (e) {
            if (e instanceof ExprCompileError) throw err(o.token, `could not compile expression: ${e.message}`);
            throw e;
          }
          break;
        case 'answer':
          answer.push(...compileSection(o, 'answer'));
          break;
        case 'additional':
          additional.push(...compileSection(o, 'additional'));
          break;
        case 'authority':
          authority.push(...compileSection(o, 'authority'));
          break;
        case 'rcode': {
          if (o.raw.length > 1) throw argErr(o.token, o.raw[o.raw.length - 1]!);
          const name = o.raw[0]!;
          const code = RCODES.includes(name) ? rcodeFromName(name) : undefined;
          if (code === undefined) {
            if (
              [
                'BADSIG',
                'BADVERS',
                'BADKEY',
                'BADTIME',
                'BADMODE',
                'BADNAME',
                'BADALG',
                'BADTRUNC',
                'BADCOOKIE',
              ].includes(name)
            ) {
              throw err(o.token, `rcode ${name} (an extended RCODE) is not supported by clusterdns's template plugin`);
            }
            throw err(o.token, `unknown rcode ${name}`);
          }
          rcode = code;
          break;
        }
        case 'ederror': {
          if (o.raw.length > 2) throw argErr(o.token, o.raw[o.raw.length - 1]!);
          const v = o.raw[0]!;
          const n = /^\d+$/.test(v) ? Number(v) : NaN;
          if (!(n <= 0xffff)) {
            const why = /^\d+$/.test(v) ? 'value out of range' : 'invalid syntax';
            throw err(
              o.token,
              `error parsing extended DNS error code ${o.raw[o.raw.length - 1]}, strconv.ParseUint: parsing ${JSON.stringify(v)}: ${why}`,
            );
          }
          ederror = { code: n, reason: o.raw[1] ?? '' };
          break;
        }
        case 'fallthrough':
          fallthrough = o.raw.length > 0 ? normalizeZoneArgs(o.raw) : ['.'];
          break;
        case 'upstream':
          // Accepted and ignored, as in CoreDNS 1.15.0: CNAME targets are always resolved through the server.
          break;
      }
    }
    if (regexes.length === 0) regexes.push({ source: '.*', re: /.*/, names: [''] });
    out.push({
      qclass,
      qtype,
      zones,
      regexes,
      answer,
      additional,
      authority,
      rcode,
      ederror,
      fallthrough,
      vars,
      exprs,
    });
  }
  return out;
}
