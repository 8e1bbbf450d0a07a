/**
 * Kubernetes label selectors (k8s.io/apimachinery/pkg/labels/selector.go), once for the repo: the
 * sandbox API server matches objects with them, and the kubernetes plugin checks and normalises
 * its `labels` / `namespace_labels` options with them (as CoreDNS does with
 * `meta.ParseToLabelSelector` at setup) before sending them to the API server.
 *
 * Comma-separated requirements, all must hold: `key`, `!key`, `key=v`, `key==v`, `key!=v`,
 * `key in (a,b)`, `key notin (a,b)`, `key>N`, `key<N` (integer comparison).
 */

export class SelectorError extends Error {}

export type Op = 'exists' | '!exists' | '=' | '!=' | 'in' | 'notin' | 'gt' | 'lt';

export interface LabelRequirement {
  key: string;
  op: Op;
  values: string[];
}

export type Labels = Readonly<Record<string, string>>;
export type LabelSelector = (labels: Labels) => boolean;

// Qualified name with optional DNS-subdomain prefix, as validation.IsQualifiedName allows.
const KEY_RE =
  /^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;
const VALUE_RE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;

type Token =
  | { t: 'id'; v: string }
  | { t: 'op'; v: '=' | '==' | '!=' | '!' | '>' | '<' }
  | { t: 'in' }
  | { t: 'notin' }
  | { t: '(' }
  | { t: ')' }
  | { t: ',' };

function lexLabels(s: string): Token[] {
  const out: Token[] = [];
  let i = 0;
  while (i < s.length) {
    const c = s[i] as string;
    if (c === ' ' || c === '\t' || c === '\n' || c === '\r') {
      i++;
      continue;
    }
    if (c === '(' || c === ')' || c === ',') {
      out.push({ t: c });
      i++;
      continue;
    }
    if (c === '=' || c === '!' || c === '>' || c === '<') {
      if (s.startsWith('==', i)) {
        out.push({ t: 'op', v: '==' });
        i += 2;
      } else if (s.startsWith('!=', i)) {
        out.push({ t: 'op', v: '!=' });
        i += 2;
      } else {
        out.push({ t: 'op', v: c });
        i++;
      }
      continue;
    }
    let j = i;
    while (j < s.length && !' \t\n\r(),=!<>'.includes(s[j] as string)) j++;
    const word = s.slice(i, j);
    if (word === 'in') out.push({ t: 'in' });
    else if (word === 'notin') out.push({ t: 'notin' });
    else out.push({ t: 'id', v: word });
    i = j;
  }
  return out;
}

function checkKey(k: string): string {
  if (k.length === 0 || k.length > 317 || !KEY_RE.test(k)) {
    throw new SelectorError(`unable to parse requirement: invalid label key "${k}"`);
  }
  return k;
}

function checkValue(v: string): string {
  if (v.length > 63 || !VALUE_RE.test(v)) {
    throw new SelectorError(`unable to parse requirement: invalid label value: "${v}"`);
  }
  return v;
}

export function parseLabelSelector(text: string): LabelSelector {
  const reqs = parseLabelRequirements(text);
  if (reqs.length === 0) return () => true;
  return (labels) => reqs.every((r) => matchRequirement(r, labels));
}

export function parseLabelRequirements(text: string): LabelRequirement[] {
  const toks = lexLabels(text);
  const reqs: LabelRequirement[] = [];
  let i = 0;
  const peek = (): Token | undefined => toks[i];
  const fail = (msg: string): never => {
    throw new SelectorError(`unable to parse requirement: ${msg} in selector "${text}"`);
  };
  while (i < toks.length) {
    let tok = peek();
    if (tok?.t === 'op' && tok.v === '!') {
      i++;
      tok = peek();
      if (tok?.t !== 'id') fail('expected a label key after "!"');
      reqs.push({ key: checkKey((tok as { v: string }).v), op: '!exists', values: [] });
      i++;
    } else if (tok?.t === 'id') {
      const key = checkKey(tok.v);
      i++;
      const op = peek();
      if (op === undefined || op.t === ',') {
        reqs.push({ key, op: 'exists', values: [] });
      } else if (op.t === 'op') {
        i++;
        const val = peek();
        let v = '';
        if (val?.t === 'id') {
          v = val.v;
          i++;
        }
        switch (op.v) {
          case '=':
          case '==':
            reqs.push({ key, op: '=', values: [checkValue(v)] });
            break;
          case '!=':
            reqs.push({ key, op: '!=', values: [checkValue(v)] });
            break;
          case '>':
          case '<':
            if (!/^-?\d+$/.test(v)) fail(`for 'Gt', 'Lt' operators, the value must be an integer`);
            reqs.push({ key, op: op.v === '>' ? 'gt' : 'lt', values: [v] });
            break;
          default:
            fail(`unexpected operator "${op.v}"`);
        }
      } else if (op.t === 'in' || op.t === 'notin') {
        i++;
        if (peek()?.t !== '(') fail('expected "(" after in/notin');
        i++;
        const values: string[] = [];
        for (;;) {
          const t = peek();
          if (t === undefined) fail('missing ")"');
          if (t?.t === ')') {
            i++;
            break;
          }
          if (t?.t === ',') {
            // empty value between commas, or a leading comma: an empty string value
            if (values.length === 0 || toks[i - 1]?.t === ',') values.push('');
            i++;
            continue;
          }
          if (t?.t === 'id') {
            values.push(checkValue(t.v));
            i++;
            continue;
          }
          fail('unexpected token in value list');
        }
        // `()` is the set of the empty value, as apimachinery's parseValues reads it (`a in ()`:
        // the label is present and empty; `a notin ()`: absent or not empty).
        if (values.length === 0) values.push('');
        reqs.push({ key, op: op.t, values });
      } else {
        fail('unexpected token after key');
      }
    } else {
      fail('expected a label key');
    }
    const sep = peek();
    if (sep === undefined) break;
    if (sep.t !== ',') fail('expected ","');
    i++;
    if (i >= toks.length) fail('trailing ","');
  }
  return reqs;
}

function matchRequirement(r: LabelRequirement, labels: Labels): boolean {
  const has = Object.prototype.hasOwnProperty.call(labels, r.key);
  const v = has ? labels[r.key] : undefined;
  switch (r.op) {
    case 'exists':
      return has;
    case '!exists':
      return !has;
    case '=':
      return has && v === r.values[0];
    case '!=':
      return !has || v !== r.values[0];
    case 'in':
      return has && r.values.includes(v as string);
    case 'notin':
      return !has || !r.values.includes(v as string);
    case 'gt':
    case 'lt': {
      if (!has || !/^-?\d+$/.test(v as string)) return false;
      const n = Number(v);
      const bound = Number(r.values[0]);
      return r.op === 'gt' ? n > bound : n < bound;
    }
  }
}

/**
 * The selector in the API's `labelSelector` query form (`a=b,!e,f,g notin (x,y)`), checked as
 * `meta.ParseToLabelSelector` does: at least one requirement, and only what a
 * metav1.LabelSelector can express — no `!=` (CoreDNS 1.15.0 rejects it: write `key notin (v)`)
 * and no `>`/`<`. Throws SelectorError with CoreDNS's reason.
 */
export function normalizeLabelSelector(text: string): string {
  const reqs = parseLabelRequirements(text);
  if (reqs.length === 0) throw new SelectorError('empty selector');
  return reqs.map(formatRequirement).join(',');
}

function formatRequirement(r: LabelRequirement): string {
  switch (r.op) {
    case 'exists':
      return r.key;
    case '!exists':
      return `!${r.key}`;
    case '=':
      return `${r.key}=${r.values[0]}`;
    case '!=':
      throw new SelectorError('"!=" is not a valid label selector operator');
    case 'in':
    case 'notin':
      return `${r.key} ${r.op} (${r.values.join(',')})`;
    case 'gt':
    case 'lt':
      throw new SelectorError(`"${r.op}" isn't supported in label selectors`);
  }
}
