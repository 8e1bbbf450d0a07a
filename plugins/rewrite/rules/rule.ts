/** What every rewrite rule is: its mode, a cheap match test on the question, and how it changes the request. */
import { fqdn } from '../../../src/dns/name.js';
import type { RewriteState } from '../state.js';

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

/**
 * CoreDNS's plugin.Name(s).Normalize(): lower case, absolute. Not `lowerName`: Go's
 * strings.ToLower lowers every letter, non-ASCII too, and a rule's name is Corefile text (UTF-8),
 * not a name read off the wire; `lowerName` lowers only A-Z, as DNS does.
 */
export function normalize(s: string): string {
  return fqdn(s.toLowerCase());
}
