/**
 * rewrite rules (docs/plugins.md, rewrite): parsing one rule from its flattened arguments, with
 * CoreDNS 1.15.0's checks and error texts, into a rule object the handler applies.
 *
 * Every rule has a cheap `matches` test on the current question (lower-cased name, type, class)
 * that allocates nothing, and an `apply` that changes the request state and may add response rules
 * (what to do to the reply on its way back). Names are compared the way CoreDNS compares them: the
 * lower-cased question name, absolute.
 */
import { newCnameRule } from './cname.js';
import { newEdnsRule } from './edns0.js';
import { newNameRule } from './name.js';
import { RuleError, type Mode, type Rule } from './rule.js';
import { newRcodeRule, newTtlRule } from './ttl-rcode.js';
import { classFromName, ClassRule, typeFromName, TypeRule } from './type-class.js';

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
