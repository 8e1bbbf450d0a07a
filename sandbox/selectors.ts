/**
 * Field selectors with the Kubernetes grammar (k8s.io/apimachinery/pkg/fields/selector.go):
 * comma-separated `field=v`, `field==v`, `field!=v`; `\,` `\=` `\\` escapes. Label selectors are
 * src/util/labelselector.ts (shared with the kubernetes plugin), re-exported here.
 */
import { SelectorError } from '../src/util/labelselector.js';

export {
  SelectorError,
  parseLabelRequirements,
  parseLabelSelector,
  type LabelSelector,
  type Labels,
} from '../src/util/labelselector.js';

export interface FieldRequirement {
  field: string;
  neg: boolean;
  value: string;
}

/** Split on unescaped `sep`, keeping escapes in the parts. */
function splitUnescaped(s: string, sep: string): string[] {
  const parts: string[] = [];
  let cur = '';
  for (let i = 0; i < s.length; i++) {
    const c = s[i] as string;
    if (c === '\\' && i + 1 < s.length) {
      cur += c + (s[i + 1] as string);
      i++;
    } else if (c === sep) {
      parts.push(cur);
      cur = '';
    } else {
      cur += c;
    }
  }
  parts.push(cur);
  return parts;
}

function unescapeField(s: string): string {
  let out = '';
  for (let i = 0; i < s.length; i++) {
    const c = s[i] as string;
    if (c === '\\') {
      const n = s[i + 1];
      if (n === '\\' || n === ',' || n === '=') {
        out += n;
        i++;
        continue;
      }
      throw new SelectorError(`invalid field selector: invalid escape sequence in "${s}"`);
    }
    out += c;
  }
  return out;
}

export function parseFieldSelector(text: string): FieldRequirement[] {
  const reqs: FieldRequirement[] = [];
  if (text.trim() === '') return reqs;
  for (const part of splitUnescaped(text, ',')) {
    if (part === '') continue;
    // find the first unescaped operator
    let idx = -1;
    let opLen = 0;
    let neg = false;
    for (let i = 0; i < part.length; i++) {
      const c = part[i];
      if (c === '\\') {
        i++;
        continue;
      }
      if (c === '!' && part[i + 1] === '=') {
        idx = i;
        opLen = 2;
        neg = true;
        break;
      }
      if (c === '=') {
        idx = i;
        opLen = part[i + 1] === '=' ? 2 : 1;
        break;
      }
    }
    if (idx < 0) throw new SelectorError(`invalid selector: '${text}'; can't understand '${part}'`);
    const field = part.slice(0, idx).trim();
    const value = unescapeField(part.slice(idx + opLen));
    reqs.push({ field, neg, value });
  }
  return reqs;
}

export function matchFields(reqs: readonly FieldRequirement[], fields: (name: string) => string): boolean {
  for (const r of reqs) {
    const v = fields(r.field);
    if (r.neg ? v === r.value : v !== r.value) return false;
  }
  return true;
}
