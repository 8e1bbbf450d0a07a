/** `rewrite type` and `rewrite class`: replace the question's type or class. */
import { qclassFromName, qtypeFromName } from '../../../src/dns/constants.js';
import type { RewriteState } from '../state.js';
import type { Mode, QuestionView, Rule } from './rule.js';

/** miekg/dns StringToType: mnemonics only (no TYPEnnn form). */
export function typeFromName(s: string): number | undefined {
  if (/^TYPE\d+$/.test(s)) return undefined;
  return qtypeFromName(s);
}

export function classFromName(s: string): number | undefined {
  if (/^CLASS\d+$/.test(s)) return undefined;
  if (s === 'CS') return 2;
  return qclassFromName(s);
}

export class TypeRule implements Rule {
  constructor(
    readonly mode: Mode,
    private readonly from: number,
    private readonly to: number,
  ) {}
  matches(q: QuestionView): boolean {
    return this.from > 0 && this.to > 0 && q.qtype === this.from;
  }
  apply(st: RewriteState): boolean {
    st.setType(this.to);
    return true;
  }
}

export class ClassRule implements Rule {
  constructor(
    readonly mode: Mode,
    private readonly from: number,
    private readonly to: number,
  ) {}
  matches(q: QuestionView): boolean {
    return this.from > 0 && this.to > 0 && q.qclass === this.from;
  }
  apply(st: RewriteState): boolean {
    st.setClass(this.to);
    return true;
  }
}
