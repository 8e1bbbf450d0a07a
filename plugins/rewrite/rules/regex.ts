/** Go regular expressions in rewrite rules: compiling them with CoreDNS's checks, matching names, and `{N}` group expansion. */
import { compileRe2, requiredLiteral } from '../../../src/util/re2.js';
import { RuleError } from './rule.js';

/** CoreDNS's limit on the length of a regex pattern in a rule. */
export const MAX_REGEXP_LEN = 10000;

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
export function compileGoRegex(src: string): RegExp {
  return compileRe2(src, { noNewline: true }).re;
}

/** A test of a lower-cased name against `re`, with the pattern's required literal checked first. */
export function nameTester(re: RegExp, source: string): (lname: string) => boolean {
  const lit = requiredLiteral(source);
  if (lit === '') return (l) => re.test(l);
  return (l) => l.includes(lit) && re.test(l);
}

export function numSubexp(re: RegExp): number {
  return (new RegExp(`${re.source}|`, re.flags).exec('')?.length ?? 1) - 1;
}

/** CoreDNS's isValidRegexPattern. */
export function validRegex(from: string, to: string): RegExp {
  if (from.length > MAX_REGEXP_LEN) throw new RuleError(`regex pattern too long: ${from.length} > ${MAX_REGEXP_LEN}`);
  let re: RegExp;
  try {
    re = compileGoRegex(from);
  } catch {
    throw new RuleError(`invalid regex matching pattern: ${from}`);
  }
  if (subExprUsage(to) > numSubexp(re)) {
    throw new RuleError(
      `the rewrite regex pattern (${to}) uses more subexpressions than its corresponding matching regex pattern (${from})`,
    );
  }
  return re;
}
