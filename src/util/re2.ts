/**
 * Go regular expressions (RE2 syntax, as Corefiles write them for CoreDNS) compiled to JavaScript
 * RegExps; the one translator every plugin uses (template, rewrite). Translated: `(?P<name>…)` and
 * `(?<name>…)` named groups, leading `(?i)`/`(?s)`/`(?m)`/`(?U)` flags, `\A` and `\z`, `\Q…\E`,
 * `\pL`/`\p{Greek}`, `\x{…}`, octal escapes, POSIX classes `[[:alpha:]]`, a leading `]` in a class,
 * escaped punctuation, `{` that is no repetition. Rejected with Go's own wording where Go rejects
 * them too (look-arounds, back-references, unknown escapes, unbalanced parentheses and brackets,
 * bad repeat counts), and with an error that names the construct where clusterdns does not
 * translate it (inline flag groups such as `(?i:…)`, negated POSIX classes), so a pattern never
 * silently matches something else than in CoreDNS. Matching backtracks (JavaScript engines are not
 * linear-time like RE2); the patterns come from the Corefile, the input is a name of at most 255
 * octets. An error's message is Go's text without its `error parsing regexp: ` prefix.
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
      if (name.startsWith('^')) {
        neg = !neg;
        name = name.slice(1);
      }
      return [
        `\\${neg ? 'P' : 'p'}{${name === 'Any' ? 'Any' : name}}`
          .replace('\\p{Any}', '[\\s\\S]')
          .replace('\\P{Any}', '[^\\s\\S]'),
        end + 1,
        true,
      ];
    }
    const one = p[i + 2];
    if (one === undefined || !/[A-Za-z]/.test(one))
      throw new Re2Error(`invalid character class range: \`${p.slice(i, i + 3)}\``);
    return [`\\${c}{${one}}`, i + 3, true];
  }
  if (/[0-7]/.test(c) && (c === '0' || /[0-7]/.test(p[i + 2] ?? ''))) {
    // Octal: `\0`, `\012`, `\12` (a single non-zero digit would be a back-reference).
    const m = /^[0-7]{1,3}/.exec(p.slice(i + 1))!;
    const digits = c === '0' ? m[0].slice(0, 3) : m[0];
    return [`\\u${parseInt(digits, 8).toString(16).padStart(4, '0')}`, i + 1 + digits.length, false];
  }
  if (/[0-9]/.test(c)) throw new Re2Error(`invalid escape sequence: \`\\${c}\``);
  if (/[!-/:-@[-`{-~]/.test(c)) return [hexEscape(c), i + 2, false];
  throw new Re2Error(`invalid escape sequence: \`\\${c}\``);
}

/** A compiled Go regexp: the JS RegExp and its group names by index (Go's SubexpNames). */
export interface CompiledRe2 {
  readonly source: string;
  readonly re: RegExp;
}

/** How the compiled pattern is used. */
export interface Re2Options {
  /**
   * The inputs never hold a newline (DNS names in text form): a pattern that starts with `.*`
   * finds its leftmost match at position 0 or nowhere, so it is anchored there, which says the
   * same and spares the backtracking engine a retry at every position (RE2 is linear; V8 would be
   * quadratic on `(.*)\.example\.com`).
   */
  readonly noNewline?: boolean;
}

/** The repetition `{n}`, `{n,}` or `{n,m}` at `p[i] === '{'`, or null when `{` is a literal there. */
function repeatAt(p: string, i: number): RegExpExecArray | null {
  return /^\{(\d+)(,(\d*))?\}/.exec(p.slice(i));
}

/** Compile a Go regular expression. Throws Re2Error with Go's reason (without its prefix). */
export function compileRe2(pattern: string, opts: Re2Options = {}): CompiledRe2 {
  let out = '';
  let flags = '';
  let ungreedy = false;
  let unicode = false;
  let depth = 0;
  let i = 0;
  // Leading flag groups (?i) (?s) (?m) (?U) (?is) …
  for (;;) {
    const m = /^\(\?([a-zA-Z]+)\)/.exec(pattern.slice(i));
    if (!m) break;
    let at = i + 2;
    for (const f of m[1]!) {
      at++;
      if (f === 'i' || f === 's' || f === 'm') {
        if (!flags.includes(f)) flags += f;
      } else if (f === 'U') ungreedy = true;
      else throw new Re2Error(`invalid or unsupported Perl syntax: \`${pattern.slice(i, at)}\``);
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
    if (c === '*' || c === '+' || c === '?' || (c === '{' && repeatAt(pattern, i))) {
      // A repetition; `?` after it makes it non-greedy (greedy under (?U)).
      const start = i;
      if (c === '{') {
        const r = repeatAt(pattern, i)!;
        const min = Number(r[1]);
        const max = r[2] === undefined ? min : r[3] === '' ? -1 : Number(r[3]);
        if (min > 1000 || max > 1000 || (max >= 0 && max < min))
          throw new Re2Error(`invalid repeat count: \`${r[0]}\``);
        out += r[0];
        i += r[0].length;
      } else {
        out += c;
        i++;
      }
      const lazy = pattern[i] === '?';
      if (lazy) i++;
      if (lazy !== ungreedy) out += '?';
      const n = pattern[i];
      if (n === '*' || n === '+' || n === '?' || (n === '{' && repeatAt(pattern, i))) {
        const len = n === '{' ? repeatAt(pattern, i)![0].length : 1;
        throw new Re2Error(`invalid nested repetition operator: \`${pattern.slice(start, i + len)}\``);
      }
      continue;
    }
    if (c === '{' || c === '}' || c === ']') {
      out += `\\${c}`;
      i++;
      continue;
    }
    if (c === ')') {
      if (depth === 0) throw new Re2Error(`unexpected ): \`${pattern}\``);
      depth--;
      out += c;
      i++;
      continue;
    }
    if (c === '(') {
      depth++;
      if (pattern[i + 1] === '?') {
        const rest = pattern.slice(i + 2);
        if (rest.startsWith('P<') || rest.startsWith('<')) {
          const end = pattern.indexOf('>', i);
          if (end < 0) throw new Re2Error(`invalid named capture: \`${pattern.slice(i)}\``);
          const name = pattern.slice(i + (rest.startsWith('<') ? 3 : 4), end);
          if (!/^[A-Za-z0-9_]+$/.test(name))
            throw new Re2Error(`invalid named capture: \`${pattern.slice(i, end + 1)}\``);
          out += `(?<${name}>`;
          i = end + 1;
          continue;
        }
        if (rest.startsWith(':')) {
          out += '(?:';
          i += 3;
          continue;
        }
        // Go's flag syntax (?flags) / (?flags:re): valid in Go, translated only at the start.
        let j = i + 2;
        while (j < pattern.length && 'imsU-'.includes(pattern[j]!)) j++;
        if (j > i + 2 && (pattern[j] === ':' || pattern[j] === ')')) {
          throw new Re2Error(
            `the inline flag group \`${pattern.slice(i, j + 1)}\` is not supported by clusterdns (flags only at the start of the pattern)`,
          );
        }
        throw new Re2Error(`invalid or unsupported Perl syntax: \`${pattern.slice(i, j + 1)}\``);
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
          const name = pattern.slice(j + 2, end);
          if (name.startsWith('^'))
            throw new Re2Error(`the negated POSIX class \`[:${name}:]\` is not supported by clusterdns`);
          const r = POSIX[name];
          if (!r) throw new Re2Error(`invalid character class range: \`[:${name}:]\``);
          cls += r;
          j = end + 2;
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
  if (depth > 0) throw new Re2Error(`missing closing ): \`${pattern}\``);
  if (opts.noNewline && !flags.includes('m') && /^\(?\.\*/.test(out) && !hasTopLevelAlternation(out)) out = `^${out}`;
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

function hasTopLevelAlternation(src: string): boolean {
  let depth = 0;
  let inClass = false;
  for (let i = 0; i < src.length; i++) {
    const c = src[i];
    if (c === '\\') {
      i++;
      continue;
    }
    if (inClass) {
      if (c === ']') inClass = false;
      continue;
    }
    if (c === '[') inClass = true;
    else if (c === '(') depth++;
    else if (c === ')') depth--;
    else if (c === '|' && depth === 0) return true;
  }
  return false;
}

/**
 * The longest run of literal characters every match of the Go pattern `src` contains (lower-cased
 * when the pattern is case-insensitive), or '' when none can be told: a cheap `includes` test that
 * rules most names out before the regular expression runs. Conservative: a character is kept only
 * when it is certainly a required literal.
 */
export function requiredLiteral(src: string): string {
  let body = src;
  let fold = false;
  const lead = /^\(\?([imsU]+)\)/.exec(body);
  if (lead) {
    fold = lead[1]!.includes('i');
    body = body.slice(lead[0].length);
  }
  // Alternatives, inline flag changes and quoted runs: nothing is certain.
  if (hasTopLevelAlternation(body) || /\(\?[a-zA-Z-]*[imsU]/.test(body) || body.includes('\\Q')) return '';
  let best = '';
  let run = '';
  const flush = (): void => {
    if (run.length > best.length) best = run;
    run = '';
  };
  const isQuantifier = (at: number): boolean => at < body.length && '*+?{'.includes(body[at]!);
  let i = 0;
  while (i < body.length) {
    const c = body[i]!;
    let atom: string | null = null; // a literal character, or null for anything else
    let end = i + 1; // index after the atom
    if (c === '\\') {
      const e = body[i + 1];
      if (e !== undefined && /[^\w\s]/.test(e)) atom = e;
      end = i + 2;
    } else if (c === '(' || c === '[') {
      let depth = 0;
      let inClass = false;
      let j = i;
      for (; j < body.length; j++) {
        const d = body[j]!;
        if (d === '\\') {
          j++;
          continue;
        }
        if (inClass) {
          if (d === ']' && j > 0 && body[j - 1] !== '[' && !(body[j - 1] === '^' && body[j - 2] === '[')) {
            inClass = false;
            if (depth === 0) break;
          }
          continue;
        }
        if (d === '[') inClass = true;
        else if (d === '(') depth++;
        else if (d === ')' && --depth === 0) break;
      }
      end = j + 1;
    } else if (c === '{') {
      const close = body.indexOf('}', i);
      end = close < 0 ? body.length : close + 1;
    } else if (!'.^$*+?}|)'.includes(c)) {
      atom = c;
    }
    if (isQuantifier(end)) {
      // The atom may be absent or repeated: the run ends before it; skip the quantifier.
      flush();
      let k = end;
      while (isQuantifier(k)) {
        if (body[k] === '{') {
          const close = body.indexOf('}', k);
          k = close < 0 ? body.length : close + 1;
        } else k++;
      }
      i = k;
      continue;
    }
    if (atom === null) flush();
    else run += atom;
    i = end;
  }
  flush();
  return fold ? best.toLowerCase() : best;
}
