/** `rewrite cname`: rewrite CNAME targets in the reply, looking the new target up. */
import { Re2Error } from '../../../src/util/re2.js';
import { CnameResponseRule } from '../response.js';
import type { RewriteState } from '../state.js';
import type { MatchKind } from './name.js';
import { compileGoRegex, expandGroups, MAX_REGEXP_LEN } from './regex.js';
import { normalize, RuleError, type Mode, type Rule } from './rule.js';

export interface CnameTarget {
  /** [from, to] for a CNAME target, or null when the rule does not apply to it. */
  targets(target: string): [string, string] | null;
}

class CnameRule implements Rule, CnameTarget {
  readonly looksUp = true;
  constructor(
    readonly mode: Mode,
    private readonly kind: MatchKind,
    private readonly from: string,
    private readonly to: string,
    private readonly re: RegExp | null,
  ) {}
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

export function newCnameRule(mode: Mode, args: readonly string[]): Rule {
  let kind: string;
  let from: string;
  let to: string;
  if (args.length === 3) {
    kind = args[0]!.toLowerCase();
    if (!['exact', 'prefix', 'suffix', 'substring', 'regex'].includes(kind))
      throw new RuleError(`unknown cname rewrite type: ${kind}`);
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
    if (from.length > MAX_REGEXP_LEN)
      throw new RuleError(`regex pattern too long in a cname rule: ${from.length} > ${MAX_REGEXP_LEN}`);
    try {
      re = compileGoRegex(from);
    } catch (e) {
      throw new RuleError(
        `invalid cname rewrite regex pattern: ${e instanceof Re2Error ? `error parsing regexp: ${e.message}` : String(e)}`,
      );
    }
  }
  return new CnameRule(mode, kind as MatchKind, from, to, re);
}
