/** The `$GENERATE` directive: its range and modifiers expanded into master-file lines. */
import { V, type Lex, type ZLexer } from './lexer.js';

/** `$GENERATE start-stop[/step] rest...`: the text of the generated lines (miekg/dns's generateReader). */
export function expandGenerate(c: ZLexer, l: Lex, fail: (reason: string, l: Lex) => never): string {
  let token = l.token;
  let step = 1;
  const slash = token.indexOf('/');
  if (slash >= 0) {
    const st = token.slice(slash + 1);
    if (!/^[+-]?\d+$/.test(st) || Number(st) <= 0) fail('bad step in $GENERATE range', l);
    step = Number(st);
    token = token.slice(0, slash);
  }
  const dash = token.indexOf('-');
  if (dash < 0) fail('bad start-stop in $GENERATE range', l);
  const startStr = token.slice(0, dash);
  const endStr = token.slice(dash + 1);
  if (!/^[+-]?\d+$/.test(startStr)) fail('bad start in $GENERATE range', l);
  if (!/^[+-]?\d+$/.test(endStr)) fail('bad stop in $GENERATE range', l);
  const start = Number(startStr);
  const end = Number(endStr);
  if (end < 0 || start < 0 || end < start || Math.floor((end - start) / step) > 65535)
    fail('bad range in $GENERATE range', l);
  const [b] = c.next();
  if (b.value !== V.Blank) fail('garbage after $GENERATE range', b);
  let s = '';
  for (let [t, ok] = c.next(); ok; [t, ok] = c.next()) {
    if (t.err) fail('bad data in $GENERATE directive', t);
    if (t.value === V.Newline) break;
    s += t.token;
  }
  const lines: string[] = [];
  for (let cur = start; cur <= end; cur += step) {
    let line = '';
    let escape = false;
    for (let i = 0; i < s.length; i++) {
      const ch = s[i]!;
      if (ch === '\\') {
        if (escape) {
          escape = false;
          line += '\\';
        } else escape = true;
        continue;
      }
      if (ch === '$') {
        if (escape) {
          escape = false;
          line += '$';
          continue;
        }
        if (s[i + 1] === '$') {
          line += '$';
          i++;
          continue;
        }
        let base = 'd';
        let width = 0;
        let offset = 0;
        if (s[i + 1] === '{') {
          const close = s.indexOf('}', i + 2);
          // Errors point into the directive's text, as miekg/dns's generateReader reports them.
          const at = (endAt: number): Lex => ({ ...b, token: s.slice(i, endAt), column: b.column + i + 1 });
          if (close < 0) fail('bad modifier in $GENERATE', at(s.length));
          const parts = s.slice(i + 2, close).split(',');
          if (parts.length > 3) fail('bad modifier in $GENERATE', at(close + 1));
          base = parts[2] ?? 'd';
          if (!['o', 'd', 'x', 'X'].includes(base)) fail('bad base in $GENERATE', at(close + 1));
          if (!/^[+-]?\d+$/.test(parts[0]!)) fail('bad offset in $GENERATE', at(close + 1));
          offset = Number(parts[0]);
          const w = parts[1] ?? '0';
          if (!/^\d+$/.test(w) || Number(w) > 255) fail('bad width in $GENERATE', at(close + 1));
          width = Number(w);
          if (start + offset < 0 || end + offset > 2 ** 31 - 1) fail('bad offset in $GENERATE', at(close + 1));
          i = close;
        }
        const v = cur + offset;
        const neg = v < 0;
        let digits = Math.abs(v).toString(base === 'o' ? 8 : base === 'd' ? 10 : 16);
        if (base === 'X') digits = digits.toUpperCase();
        digits = digits.padStart(neg ? width - 1 : width, '0');
        line += neg ? `-${digits}` : digits;
        continue;
      }
      if (escape) {
        // miekg/dns drops an escaped character other than `\\` and `$`.
        escape = false;
        continue;
      }
      line += ch;
    }
    lines.push(line);
  }
  return lines.length ? `${lines.join('\n')}\n` : '';
}
