/**
 * Go (RE2) regular expressions as the rewrite plugin's Corefile rules write them, compiled to
 * JavaScript RegExps (docs/plugins.md, rewrite). The common syntax is the same (leftmost-first
 * submatches, `.`, classes, anchors, repetition); the translation covers what differs:
 * `(?P<name>…)` groups, a leading flag group such as `(?i)`, `\A`/`\z`, POSIX classes inside
 * brackets, and `\Q…\E`. What RE2 rejects and JavaScript would accept (back-references,
 * look-around) is rejected here too, so a rule that CoreDNS refuses is refused.
 */

/** A Go regexp compile error, worded as Go's `regexp.Compile` words the common cases. */
export class GoRegexError extends Error {}

const POSIX: Record<string, string> = {
  alnum: '0-9A-Za-z', alpha: 'A-Za-z', ascii: '\\x00-\\x7F', blank: '\\t ', cntrl: '\\x00-\\x1F\\x7F', digit: '0-9',
  graph: '!-~', lower: 'a-z', print: ' -~', punct: '!-\\/:-@\\[-`{-~', space: '\\t\\n\\v\\f\\r ', upper: 'A-Z',
  word: '0-9A-Za-z_', xdigit: '0-9A-Fa-f',
};

function goError(code: string, frag: string): GoRegexError {
  return new GoRegexError(`error parsing regexp: ${code}: \`${frag}\``);
}

/** Check the parenthesis/bracket structure the way RE2 reports its most common errors. */
function structure(src: string): void {
  let depth = 0;
  let inClass = false;
  for (let i = 0; i < src.length; i++) {
    const c = src[i];
    if (c === '\\') {
      i++;
      continue;
    }
    if (inClass) {
      if (c === ']' && src[i - 1] !== '[' && !(src[i - 1] === '^' && src[i - 2] === '[')) inClass = false;
      continue;
    }
    if (c === '[') inClass = true;
    else if (c === '(') depth++;
    else if (c === ')') {
      if (depth === 0) throw goError('unexpected )', src);
      depth--;
    }
  }
  if (inClass) throw goError('missing closing ]', src.slice(src.lastIndexOf('[')));
  if (depth > 0) throw goError('missing closing )', src);
}

/** Compile a Go regular expression; throws GoRegexError when Go would refuse it. */
export function compileGoRegex(src: string): RegExp {
  structure(src);
  let flags = '';
  let body = src;
  const lead = /^\(\?([imsU]+)\)/.exec(body);
  if (lead) {
    for (const f of lead[1]!) {
      if (f === 'i' || f === 'm' || f === 's') flags += flags.includes(f) ? '' : f;
    }
    body = body.slice(lead[0].length);
  }
  let out = '';
  let inClass = false;
  for (let i = 0; i < body.length; i++) {
    const c = body[i]!;
    if (c === '\\') {
      const n = body[i + 1];
      if (n === undefined) throw goError('trailing backslash at end of expression', '');
      if (n === 'Q') {
        const end = body.indexOf('\\E', i + 2);
        const lit = body.slice(i + 2, end < 0 ? undefined : end);
        out += lit.replace(/[\\^$.*+?()[\]{}|/-]/g, '\\$&');
        i = end < 0 ? body.length : end + 1;
        continue;
      }
      if (!inClass && n === 'A') out += '^';
      else if (!inClass && n === 'z') out += '$(?![\\s\\S])';
      else if (/[1-9]/.test(n)) throw goError('invalid escape sequence', `\\${n}`);
      else if (n === 'p' || n === 'P') {
        if (!flags.includes('u')) flags += 'u';
        out += `\\${n}`;
      } else out += `\\${n}`;
      i++;
      continue;
    }
    if (inClass) {
      const posix = /^\[:(\^?)([a-z]+):\]/.exec(body.slice(i));
      if (posix && POSIX[posix[2]!] !== undefined) {
        if (posix[1]) throw goError('invalid character class range', posix[0]);
        out += POSIX[posix[2]!];
        i += posix[0].length - 1;
        continue;
      }
      if (c === ']' && body[i - 1] !== '[' && !(body[i - 1] === '^' && body[i - 2] === '[')) inClass = false;
      out += c;
      continue;
    }
    if (c === '[') {
      inClass = true;
      out += c;
      continue;
    }
    if (c === '(' && body[i + 1] === '?') {
      const rest = body.slice(i + 2);
      if (rest.startsWith('P<')) {
        out += '(?<';
        i += 3;
        continue;
      }
      if (rest.startsWith('<') && !rest.startsWith('<=') && !rest.startsWith('<!')) {
        out += '(?<';
        i += 2;
        continue;
      }
      if (rest.startsWith(':')) {
        out += '(?:';
        i += 2;
        continue;
      }
      throw goError('invalid or unsupported Perl syntax', `(?${rest.slice(0, 1)}`);
    }
    out += c;
  }
  // A pattern that starts with `.*` finds its leftmost match at position 0 or nowhere (names hold
  // no newline): anchoring it says the same and spares the backtracking engine a retry at every
  // position (RE2 is linear; V8 would be quadratic on `(.*)\.example\.com`).
  if (!flags.includes('m') && /^\(?\.\*/.test(out) && !hasTopLevelAlternation(out)) out = `^${out}`;
  try {
    return new RegExp(out, flags);
  } catch {
    throw goError('invalid or unsupported Perl syntax', src);
  }
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
