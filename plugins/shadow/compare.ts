/**
 * The shadow plugin's use of src/dnscompare: the same comparison and the same tolerance rules as
 * the differential test suite, plus the operator's `ignore` list, which names
 * - a difference kind (`ttl`): never a mismatch;
 * - a kind and field (`flags:AA`, `edns:options`): that header bit or EDNS field is never a mismatch;
 * - a tolerance rule id (`loadbalance-shuffle`): the rule applies whatever plugins this block has
 *   (e.g. the reference runs loadbalance and this block does not).
 */
import {
  compareReplies,
  DIFF_KINDS,
  TOLERANCE_RULES,
  type Comparison,
  type CompareContext,
  type DiffKind,
  type ToleranceRule,
} from '../../src/dnscompare/index.js';

/** Fields a `kind:field` ignore entry may name (the `field` of dnscompare's differences). */
const FIELDS: ReadonlyMap<string, readonly string[]> = new Map([
  ['flags', ['opcode', 'QR', 'AA', 'RD', 'RA', 'Z', 'AD', 'CD']],
  ['edns', ['presence', 'count', 'version', 'udpsize', 'do', 'z', 'options']],
]);

function isKind(s: string): s is DiffKind {
  return (DIFF_KINDS as readonly string[]).includes(s);
}

/** Is `name` something `ignore` accepts? */
export function isIgnorable(name: string): boolean {
  if (isKind(name)) return true;
  if (TOLERANCE_RULES.some((r) => r.id === name)) return true;
  const colon = name.indexOf(':');
  if (colon < 0) return false;
  const fields = FIELDS.get(name.slice(0, colon));
  return fields !== undefined && fields.includes(name.slice(colon + 1));
}

/** Everything `compareReplies` needs for one block, built once at setup. */
export interface ComparePlan {
  readonly kinds: readonly DiffKind[];
  readonly rules: readonly ToleranceRule[];
  readonly context: CompareContext;
}

export function comparePlan(ignore: ReadonlySet<string>, blockPlugins: readonly string[]): ComparePlan {
  const kinds: DiffKind[] = [];
  const rules: ToleranceRule[] = [...TOLERANCE_RULES];
  const plugins = new Set(blockPlugins);
  const tags = new Set<string>(['shadow']);
  for (const name of ignore) {
    if (isKind(name)) {
      kinds.push(name);
      continue;
    }
    const rule = TOLERANCE_RULES.find((r) => r.id === name);
    if (rule) {
      for (const p of rule.match.plugins ?? []) plugins.add(p);
      for (const t of rule.match.tags ?? []) tags.add(t);
      continue;
    }
    const colon = name.indexOf(':');
    const kind = name.slice(0, colon);
    if (isKind(kind))
      rules.push({
        id: `ignore ${name}`,
        reason: 'shadow ignore option',
        match: { kinds: [kind], fields: [name.slice(colon + 1)] },
      });
  }
  return { kinds, rules, context: { proto: 'udp', plugins: [...plugins], tags: [...tags] } };
}

/** Compare the reference's reply with ours for `query` (every buffer complete; never throws). */
export function compareShadow(plan: ComparePlan, query: Buffer, theirs: Buffer, ours: Buffer): Comparison {
  return compareReplies(query, theirs, ours, { rules: plan.rules, ignore: plan.kinds, context: plan.context });
}
