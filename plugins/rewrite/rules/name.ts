/** `rewrite name`: exact, prefix, suffix, substring, regex and metadata name rules, with their `answer` rules. */
import {
  NameResponseRule,
  regexRewriter,
  remapRewriter,
  suffixRewriter,
  ValueResponseRule,
  type ResponseRule,
} from '../response.js';
import type { RewriteState } from '../state.js';
import { expandGroups, nameTester, numSubexp, validRegex } from './regex.js';
import { normalize, RuleError, type Mode, type QuestionView, type Rule } from './rule.js';

export type MatchKind = 'exact' | 'prefix' | 'suffix' | 'substring' | 'regex';

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
  constructor(
    mode: Mode,
    private readonly from: string,
    to: string,
    answers: readonly ResponseRule[],
  ) {
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
  constructor(
    mode: Mode,
    auto: boolean,
    private readonly prefix: string,
    to: string,
    answers: readonly ResponseRule[],
  ) {
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
  constructor(
    mode: Mode,
    auto: boolean,
    private readonly suffix: string,
    to: string,
    answers: readonly ResponseRule[],
  ) {
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
  constructor(
    mode: Mode,
    auto: boolean,
    private readonly sub: string,
    to: string,
    answers: readonly ResponseRule[],
  ) {
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
  constructor(
    mode: Mode,
    auto: boolean,
    private readonly re: RegExp,
    to: string,
    answers: readonly ResponseRule[],
    source: string,
  ) {
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
  constructor(
    mode: Mode,
    auto: boolean,
    private readonly re: RegExp,
    private readonly parts: readonly Part[],
    answers: readonly ResponseRule[],
    source: string,
  ) {
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
      if (!isMetadataLabel(label) || /[{}]/.test(label))
        throw new RuleError(`invalid metadata label ${JSON.stringify(label)} in name replacement`);
      parts.push({ label });
    }
    rest = after.slice(close + 1);
  }
  return parts;
}

export function isMetadataLabel(label: string): boolean {
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
    if (last === '' && args[arg] !== 'answer')
      throw new RuleError(`exceeded the number of arguments for a non-answer rule argument for ${name} rule`);
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
  if (auto && nameRules > 0)
    throw new RuleError('auto name answer rule cannot be combined with explicit name anwer rules');
  return { auto, rules };
}

export function newNameRule(mode: Mode, args: readonly string[]): Rule {
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
        return new MetadataNameRule(
          mode,
          auto,
          re,
          parseNameReplacement(to.endsWith('.') ? to : `${to}.`, numSubexp(re)),
          answers,
          from,
        );
      }
      const re = validRegex(from, to);
      return new RegexNameRule(mode, auto, re, normalize(args[2]!), answers, from);
    }
    default:
      throw new RuleError(
        `name rule supports only exact, prefix, suffix, substring, and regex name matching, received: ${kind}`,
      );
  }
}
