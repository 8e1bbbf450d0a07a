/** The expr-lang lexer: numbers, strings, identifiers and operators. */
import { ExprCompileError } from './errors.js';

export interface Tok {
  t: 'num' | 'str' | 'id' | 'op' | 'eof';
  v: string;
  pos: number;
}

const OPS = [
  '**',
  '==',
  '!=',
  '<=',
  '>=',
  '&&',
  '||',
  '??',
  '..',
  '?.',
  '=',
  ';',
  '<',
  '>',
  '+',
  '-',
  '*',
  '/',
  '%',
  '!',
  '?',
  ':',
  '(',
  ')',
  '[',
  ']',
  '{',
  '}',
  ',',
  '.',
  '#',
  '|',
];

export function lex(src: string): Tok[] {
  const out: Tok[] = [];
  let i = 0;
  while (i < src.length) {
    const c = src[i]!;
    if (/\s/.test(c)) {
      i++;
      continue;
    }
    if (/[0-9]/.test(c)) {
      const m = /^(0[xX][0-9a-fA-F_]+|0[oO][0-7_]+|0[bB][01_]+|[0-9][0-9_]*(\.[0-9_]+)?([eE][+-]?[0-9]+)?)/.exec(
        src.slice(i),
      )!;
      // `1..3` is a range, not a float.
      let text = m[0];
      if (text.includes('.') && src.startsWith('..', i + text.indexOf('.'))) text = text.slice(0, text.indexOf('.'));
      out.push({ t: 'num', v: text, pos: i });
      i += text.length;
      continue;
    }
    if (c === '"' || c === "'" || c === '`') {
      let j = i + 1;
      let s = '';
      while (j < src.length && src[j] !== c) {
        if (src[j] === '\\' && c !== '`') {
          const n = src[j + 1];
          const map: Record<string, string> = { n: '\n', t: '\t', r: '\r', '\\': '\\', "'": "'", '"': '"', '0': '\0' };
          if (n === undefined || map[n] === undefined)
            throw new ExprCompileError(`invalid escape in string literal (1:${j + 1})`);
          s += map[n];
          j += 2;
          continue;
        }
        s += src[j];
        j++;
      }
      if (j >= src.length) throw new ExprCompileError(`literal not terminated (1:${i + 1})`);
      out.push({ t: 'str', v: s, pos: i });
      i = j + 1;
      continue;
    }
    if (/[A-Za-z_$]/.test(c)) {
      const m = /^[A-Za-z_$][A-Za-z0-9_$]*/.exec(src.slice(i))!;
      out.push({ t: 'id', v: m[0], pos: i });
      i += m[0].length;
      continue;
    }
    const op = OPS.find((o) => src.startsWith(o, i));
    if (!op) throw new ExprCompileError(`unexpected token ${JSON.stringify(c)} (1:${i + 1})`);
    out.push({ t: 'op', v: op, pos: i });
    i += op.length;
  }
  out.push({ t: 'eof', v: '', pos: src.length });
  return out;
}
