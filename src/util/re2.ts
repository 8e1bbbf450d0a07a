/**
 * Go regular expressions (RE2 syntax, as Corefiles write them for CoreDNS) compiled to JavaScript
 * RegExps. Translated: `(?P<name>…)` named groups, leading `(?i)`/`(?s)`/`(?m)` flags, `\A` and
 * `\z`, `\Q…\E`, `\pL`/`\p{Greek}`, `\x{…}`, POSIX classes `[[:alpha:]]`, a leading `]` in a class,
 * escaped punctuation. Rejected with Go's own wording where Go rejects them too (look-arounds,
 * back-references), and with an error that names the construct where clusterdns does not
 * translate it (inline flag groups such as `(?i:…)`, `(?U)`, `\C`, negated POSIX classes), so a
 * pattern never silently matches something else than in CoreDNS. Matching backtracks (JavaScript
 * engines are not linear-time like RE2); the patterns come from the Corefile, the input is a name
 * of at most 255 octets.
 */

export class Re2Error extends Error {}

const POSIX: Record<string, string> = {
  alnum: '0-9A-Za-z',
  alpha: 'A-Za-z',
  ascii: '\\x00-\\x7f',
  blank: '\\t ',
  cntrl: '\\x00-\\x1f\\x7f',
  digit: '0-9',
  graph: '!-~',
  lower: 'a-z',
  print: ' -~',
  punct: '!-\\/:-@\\[-`{-~',
  space: '\\t\\n\\v\\f\\r ',
  upper: 'A-Z',
  word: '0-9A-Za-z_',
  xdigit: '0-9A-Fa-f',
};

function hexEscape(c: string): string {
  return `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`;
}

/** Translate one escape at `p[i] === '\\'`; returns [js text, new index, needs unicode flag]. */
function escape(p: string, i: number, inClass: boolean): [string, number, boolean] {
  const c = p[i + 1];
  if (c === undefined) throw new Re2Error('trailing backslash at end of expression: ``');
  if ('dDsSwW'.includes(c)) return [`\\${c}`, i + 2, false];
  if ('bB'.includes(c) && !inClass) return [`\\${c}`, i + 2, false];
  if ('ntrfv'.includes(c)) return [`\\${c}`, i + 2, false];
  if (c === 'a') return ['\\x07', i + 2, false];
  if (c === 'A' && !inClass) return ['(?<![\\s\\S])', i + 2, false];
  if (c === 'z' && !inClass) return ['(?![\\s\\S])', i + 2, false];
  if (c === 'x') {
    if (p[i + 2] === '{') {
      const end = p.indexOf('}', i + 3);
      if (end < 0) throw new Re2Error(`invalid escape sequence: \`${p.slice(i, i + 3)}\``);
      const hex = p.slice(i + 3, end);
      if (!/^[0-9A-Fa-f]{1,6}$/.test(hex)) throw new Re2Error(`invalid escape sequence: \`${p.slice(i, end + 1)}\``);
      return [`\\u{${hex}}`, end + 1, true];
    }
    const hex = p.slice(i + 2, i + 4);
    if (!/^[0-9A-Fa-f]{2}$/.test(hex)) throw new Re2Error(`invalid escape sequence: \`${p.slice(i, i + 4)}\``);
    return [`\\x${hex}`, i + 4, false];
  }
  if (c === 'p' || c === 'P') {
    if (p[i + 2] === '{') {
      const end = p.indexOf('}', i + 3);
      if (end < 0) throw new Re2Error(`invalid character class range: \`${p.slice(i)}\``);
      let name = p.slice(i + 3, end);
      let neg = c === 'P';
      if (name.startsWith('^')) { neg = !neg; name = name.slice(1); }
      return [`\\${neg ? 'P' : 'p'}{${name === 'Any' ? 'Any' : name}}`.replace('\\p{Any}', '[\\s\\S]').replace('\\P{Any}', '[^\\s\\S]'), end + 1, true];
    }
    const one = p[i + 2];
    if (one === undefined || !/[A-Za-z]/.test(one)) throw new Re2Error(`invalid character class range: \`${p.slice(i, i + 3)}\``);
    return [`\\${c}{${one}}`, i + 3, true];
  }
  if (/[0-9]/.test(c)) throw new Re2Error(`invalid escape sequence: \`\\${c}\``);
  if (c === 'C') throw new Re2Error('`\\C` (any byte) is not supported by clusterdns');
  if (/[!-/:-@[-`{-~]/.test(c)) return [hexEscape(c), i + 2, false];
  throw new Re2Error(`invalid escape sequence: \`\\${c}\``);
}

/** A compiled Go regexp: the JS RegExp and its group names by index (Go's SubexpNames). */
export interface CompiledRe2 {
  readonly source: string;
  readonly re: RegExp;
}

/** Compile a Go regular expression. Throws Re2Error with a reason. */
export function compileRe2(pattern: string): CompiledRe2 {
  let out = '';
  let flags = '';
  let unicode = false;
  let i = 0;
  // Leading flag groups (?i) (?s) (?m) (?is) …
  for (;;) {
    const m = /^\(\?([a-zA-Z]+)\)/.exec(pattern.slice(i));
    if (!m) break;
    for (const f of m[1]!) {
      if (f === 'i' || f === 's' || f === 'm') {
        if (!flags.includes(f)) flags += f;
      } else if (f === 'U') throw new Re2Error('the flag `(?U)` (ungreedy) is not supported by clusterdns');
      else throw new Re2Error(`invalid or unsupported Perl syntax: \`(?${f}\``);
    }
    i += m[0].length;
  }
  while (i < pattern.length) {
    const c = pattern[i]!;
    if (c === '\\') {
      if (pattern[i + 1] === 'Q') {
        const end = pattern.indexOf('\\E', i + 2);
        const lit = end < 0 ? pattern.slice(i + 2) : pattern.slice(i + 2, end);
        for (const ch of lit) out += /[A-Za-z0-9_]/.test(ch) ? ch : ch.charCodeAt(0) < 128 ? hexEscape(ch) : ch;
        i = end < 0 ? pattern.length : end + 2;
        continue;
      }
      const [js, next, u] = escape(pattern, i, false);
      out += js;
      unicode ||= u;
      i = next;
      continue;
    }
    if (c === '(') {
      if (pattern[i + 1] === '?') {
        const rest = pattern.slice(i + 2);
        if (rest.startsWith('P<')) {
          out += '(?<';
          i += 4;
          continue;
        }
        if (rest.startsWith(':')) {
          out += '(?:';
          i += 3;
          continue;
        }
        if (rest.startsWith('<') && !rest.startsWith('<=') && !rest.startsWith('<!')) {
          out += '(?<';
          i += 3;
          continue;
        }
        if (/^[=!]|^<[=!]|^P=|^P>/.test(rest)) throw new Re2Error(`invalid or unsupported Perl syntax: \`(?${rest.slice(0, rest.startsWith('<') || rest.startsWith('P') ? 2 : 1)}\``);
        const fm = /^[a-zA-Z-]+[:)]/.exec(rest);
        if (fm) throw new Re2Error(`the inline flag group \`(?${fm[0]}\` is not supported by clusterdns (flags only at the start of the pattern)`);
        throw new Re2Error(`invalid or unsupported Perl syntax: \`(?${rest.slice(0, 1)}\``);
      }
      out += '(';
      i++;
      continue;
    }
    if (c === '[') {
      let j = i + 1;
      let cls = '[';
      if (pattern[j] === '^') {
        cls += '^';
        j++;
      }
      if (pattern[j] === ']') {
        cls += '\\]';
        j++;
      }
      let closed = false;
      while (j < pattern.length) {
        const d = pattern[j]!;
        if (d === ']') {
          closed = true;
          j++;
          break;
        }
        if (d === '[' && pattern[j + 1] === ':') {
          const end = pattern.indexOf(':]', j + 2);
          if (end < 0) throw new Re2Error(`missing closing ]: \`${pattern.slice(i)}\``);
          let name = pattern.slice(j + 2, end);
          if (name.startsWith('^')) throw new Re2Error(`the negated POSIX class \`[:${name}:]\` is not supported by clusterdns`);
          const r = POSIX[name];
          if (!r) throw new Re2Error(`invalid character class range: \`[:${name}:]\``);
          cls += r;
          j = end + 2;
          name = '';
          continue;
        }
        if (d === '\\') {
          const [js, next, u] = escape(pattern, j, true);
          cls += js;
          unicode ||= u;
          j = next;
          continue;
        }
        if (d === '[') {
          cls += '\\[';
          j++;
          continue;
        }
        cls += d;
        j++;
      }
      if (!closed) throw new Re2Error(`missing closing ]: \`${pattern.slice(i)}\``);
      out += cls + ']';
      i = j;
      continue;
    }
    out += c;
    i++;
  }
  try {
    return { source: pattern, re: new RegExp(out, flags + (unicode ? 'u' : '')) };
  } catch (e) {
    throw new Re2Error((e as Error).message.replace(/^Invalid regular expression: /, ''));
  }
}

/** Go's SubexpNames for a compiled pattern: index 0 is the whole match (''), then one entry per group. */
export function subexpNames(c: CompiledRe2): string[] {
  const src = c.re.source;
  const names = [''];
  let inClass = false;
  for (let i = 0; i < src.length; i++) {
    const ch = src[i]!;
    if (ch === '\\') {
      i++;
      continue;
    }
    if (inClass) {
      if (ch === ']') inClass = false;
      continue;
    }
    if (ch === '[') {
      inClass = true;
      continue;
    }
    if (ch !== '(') continue;
    if (src[i + 1] !== '?') names.push('');
    else {
      const m = /^\(\?<([A-Za-z_$][\w$]*)>/.exec(src.slice(i));
      if (m) names.push(m[1]!);
    }
  }
  return names;
}
