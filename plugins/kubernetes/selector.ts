/**
 * Label-selector validation for `labels` / `namespace_labels` (docs/records.md §4.5). The
 * selector is evaluated by the API server; here it is only checked (as CoreDNS does at setup with
 * `meta.ParseToLabelSelector`) and normalised into the `labelSelector` query-parameter form.
 * Grammar: comma-separated `key`, `!key`, `key=v`, `key==v`, `key!=v`, `key in (a,b)`,
 * `key notin (a,b)`.
 */

const KEY_RE = /^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;
const VALUE_RE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;

type Tok = { t: 'id'; v: string } | { t: 'op'; v: string } | { t: '(' | ')' | ',' | 'in' | 'notin' };

function lex(s: string): Tok[] {
  const out: Tok[] = [];
  let i = 0;
  while (i < s.length) {
    const c = s[i]!;
    if (/\s/.test(c)) { i++; continue; }
    if (c === '(' || c === ')' || c === ',') { out.push({ t: c }); i++; continue; }
    if (s.startsWith('==', i) || s.startsWith('!=', i)) { out.push({ t: 'op', v: s.slice(i, i + 2) }); i += 2; continue; }
    if (c === '=' || c === '!') { out.push({ t: 'op', v: c }); i++; continue; }
    let j = i;
    while (j < s.length && !/[\s(),=!]/.test(s[j]!)) j++;
    const w = s.slice(i, j);
    out.push(w === 'in' || w === 'notin' ? { t: w } : { t: 'id', v: w });
    i = j;
  }
  return out;
}

function key(k: string): string {
  if (!k || k.length > 317 || !KEY_RE.test(k)) throw new Error(`invalid label key "${k}"`);
  return k;
}

function value(v: string): string {
  if (v.length > 63 || !VALUE_RE.test(v)) throw new Error(`invalid label value: "${v}"`);
  return v;
}

/** Normalised selector text, or throws with the reason. */
export function normalizeSelector(text: string): string {
  const toks = lex(text);
  const reqs: string[] = [];
  let i = 0;
  const at = (): Tok | undefined => toks[i];
  while (i < toks.length) {
    let t = at();
    if (t?.t === 'op' && t.v === '!') {
      i++;
      t = at();
      if (t?.t !== 'id') throw new Error('expected a label key after "!"');
      reqs.push(`!${key(t.v)}`);
      i++;
    } else if (t?.t === 'id') {
      const k = key(t.v);
      i++;
      const op = at();
      if (op === undefined || op.t === ',') reqs.push(k);
      else if (op.t === 'op' && op.v !== '!') {
        i++;
        const v = at();
        let val = '';
        if (v?.t === 'id') { val = v.v; i++; }
        reqs.push(`${k}${op.v === '!=' ? '!=' : '='}${value(val)}`);
      } else if (op.t === 'in' || op.t === 'notin') {
        i++;
        if (at()?.t !== '(') throw new Error(`expected "(" after ${op.t}`);
        i++;
        const vals: string[] = [];
        let closed = false;
        while (i < toks.length) {
          const x = at()!;
          i++;
          if (x.t === ')') { closed = true; break; }
          if (x.t === ',') continue;
          if (x.t !== 'id') throw new Error('unexpected token in value list');
          vals.push(value(x.v));
        }
        if (!closed) throw new Error('missing ")"');
        if (vals.length === 0) throw new Error(`for '${op.t}' operator, values set can't be empty`);
        reqs.push(`${k} ${op.t} (${vals.join(',')})`);
      } else throw new Error(`unexpected token after key "${k}"`);
    } else throw new Error('expected a label key');
    const sep = at();
    if (sep === undefined) break;
    if (sep.t !== ',') throw new Error('expected ","');
    i++;
    if (i >= toks.length) throw new Error('trailing ","');
  }
  if (reqs.length === 0) throw new Error('empty selector');
  return reqs.join(',');
}
