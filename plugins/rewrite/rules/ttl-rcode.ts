/** `rewrite ttl` and `rewrite rcode`: response-only rules, selected by the question name. */
import { Rcode, rcodeFromName } from '../../../src/dns/constants.js';
import { RcodeResponseRule, TtlResponseRule, type ResponseRule } from '../response.js';
import type { RewriteState } from '../state.js';
import { compileGoRegex, MAX_REGEXP_LEN, nameTester } from './regex.js';
import { normalize, RuleError, type Mode, type QuestionView, type Rule } from './rule.js';

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
      if (arg.length > MAX_REGEXP_LEN)
        throw new RuleError(`regex pattern too long in a ${what} rule: ${arg.length} > ${MAX_REGEXP_LEN}`);
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
  constructor(
    readonly mode: Mode,
    private readonly test: NameTest,
    private readonly rule: ResponseRule,
  ) {}
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

export function newTtlRule(mode: Mode, args: readonly string[]): Rule {
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

/**
 * CoreDNS's rcode rule value: a number up to 23 or a mnemonic. miekg/dns's StringToRcode also
 * reads BADSIG as 16 (the TSIG name of the code BADVERS shares), which rcodeName never prints.
 */
function rcodeValue(v: string): number | undefined {
  if (/^\d+$/.test(v)) {
    const n = Number(v);
    return n <= 23 ? n : undefined;
  }
  if (v.toUpperCase() === 'BADSIG') return Rcode.BADVERS;
  return rcodeFromName(v);
}

export function newRcodeRule(mode: Mode, args: readonly string[]): Rule {
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
