/**
 * Comparing two DNS replies to the same query (reference = CoreDNS, candidate = clusterdns), for
 * the differential test suite and the `shadow` plugin. See compare.ts for the API and the
 * difference kinds, rules.ts for the tolerated differences.
 */
export {
  compareReplies,
  differenceKinds,
  renderDiff,
  renderMessage,
  ruleMatches,
  DIFF_KINDS,
  type CompareContext,
  type CompareOptions,
  type Comparison,
  type DiffKind,
  type Difference,
  type RuleMatch,
  type Section,
  type Side,
  type ToleranceRule,
  type Tolerated,
} from './compare.js';
export {
  parseMessage,
  recordText,
  type ParseOutcome,
  type WireMessage,
  type WireOpt,
  type WireQuestion,
  type WireRecord,
} from './parse.js';
export { TOLERANCE_RULES } from './rules.js';
