/**
 * The Corefile lexer (docs/corefile.md §2) and environment substitution (§4).
 *
 * Modelled on the Caddy v1 lexer that CoreDNS embeds (`caddyfile/lexer.go`): a token is a maximal
 * run of non-space characters, or a quoted string when the run *starts* with `"`. Every token
 * remembers the line it starts on and the line it ends on; the parser's "same line" rules depend on
 * both (a quoted token may span lines).
 *
 * The lexer does no environment substitution: substitution is applied by the parser per token
 * (`substituteEnv`), after lexing, so a value with spaces or braces never changes the token
 * structure, and snippet bodies are stored raw and substituted where they are expanded.
 */
import type { Token } from './types.js';

const LF = 0x0a;
const CR = 0x0d;
const QUOTE = 0x22; // "
const HASH = 0x23; // #
const BACKSLASH = 0x5c; // \
const BOM = 0xfeff;

/**
 * Go's `unicode.IsSpace`: ASCII/Latin-1 spaces (`\t \n \v \f \r`, space, U+0085 NEL, U+00A0 NBSP)
 * plus the Unicode White_Space characters above Latin-1. Deliberately not JS `\s`, which also
 * contains U+FEFF and lacks U+0085.
 */
export function isSpace(c: number): boolean {
  if (c <= 0xff) {
    return c === 0x20 || (c >= 0x09 && c <= 0x0d) || c === 0x85 || c === 0xa0;
  }
  return (
    c === 0x1680 ||
    (c >= 0x2000 && c <= 0x200a) ||
    c === 0x2028 ||
    c === 0x2029 ||
    c === 0x202f ||
    c === 0x205f ||
    c === 0x3000
  );
}

/**
 * Split Corefile text into tokens. `file` is recorded in every token (for error locations and the
 * "same line" rule, which never holds across files).
 *
 * Rules (docs/corefile.md §2):
 * - a leading U+FEFF is discarded;
 * - `\r` outside quotes is skipped without ending the token (so CRLF files lex like LF files);
 * - an unquoted `#` starts a comment anywhere, even inside a word (`whoami#x` → `whoami`);
 * - a token starting with `"` runs to the next unescaped `"`; inside, only `\"` is an escape, every
 *   other backslash is kept with its following character; newlines are kept and counted;
 * - `""` is an empty token; an unterminated quote at EOF yields what was read (nothing if empty),
 *   as Caddy does;
 * - braces are not special here: `{` is a token only when it stands alone (the parser decides).
 */
export function lex(text: string, file: string): Token[] {
  const tokens: Token[] = [];
  const n = text.length;
  let i = text.charCodeAt(0) === BOM ? 1 : 0;
  let line = 1;

  while (i < n) {
    const c = text.charCodeAt(i);

    if (c === LF) {
      line++;
      i++;
      continue;
    }
    if (isSpace(c)) {
      i++;
      continue;
    }
    if (c === HASH) {
      i = skipComment(text, i);
      continue;
    }

    const startLine = line;
    if (c === QUOTE) {
      // Quoted token: everything up to the next unescaped quote, newlines included.
      i++;
      let value = '';
      let chunk = i; // start of the not-yet-copied run
      let closed = false;
      while (i < n) {
        const q = text.charCodeAt(i);
        if (q === BACKSLASH && i + 1 < n) {
          const nx = text.charCodeAt(i + 1);
          if (nx === QUOTE) {
            // `\"` is the only escape: drop the backslash, keep the quote.
            value += text.slice(chunk, i) + '"';
            i += 2;
            chunk = i;
            continue;
          }
          // Any other backslash stays, together with the character it precedes (which is
          // therefore never a closing quote).
          if (nx === LF) line++;
          i += 2;
          continue;
        }
        if (q === QUOTE) {
          value += text.slice(chunk, i);
          i++;
          closed = true;
          break;
        }
        if (q === LF) line++;
        i++;
      }
      if (!closed) {
        // Unterminated quote at EOF: Caddy emits what it has, or nothing when that is empty.
        value += text.slice(chunk, i);
        if (value === '') break;
      }
      tokens.push({ text: value, file, line: startLine, endLine: line, quoted: true });
      continue;
    }

    // Bare word: up to whitespace or a comment. `\r` is skipped *inside* the word too (Caddy drops
    // it wherever it appears outside quotes), so build the value in runs around it.
    let value = '';
    let chunk = i;
    while (i < n) {
      const w = text.charCodeAt(i);
      if (w === CR) {
        value += text.slice(chunk, i);
        i++;
        chunk = i;
        continue;
      }
      if (w === HASH || isSpace(w)) break;
      i++;
    }
    value += text.slice(chunk, i);
    tokens.push({ text: value, file, line: startLine, endLine: startLine, quoted: false });
    if (i < n && text.charCodeAt(i) === HASH) i = skipComment(text, i);
  }
  return tokens;
}

/** Index of the `\n` ending the comment that starts at `i` (or end of text); the `\n` is kept. */
function skipComment(text: string, i: number): number {
  const nl = text.indexOf('\n', i);
  return nl < 0 ? text.length : nl;
}

/** The environment seen by substitution: unset and `undefined` both read as ''. */
export type Env = Readonly<Record<string, string | undefined>>;

/**
 * Environment substitution for one token (docs/corefile.md §4): `{%NAME%}` references are replaced
 * first, then `{$NAME}` ones; an unset variable becomes ''. Several references per token are
 * allowed. `{$}` / `{%%}` (empty name) and an unterminated reference are left as literal text.
 *
 * `onUnset` is called with the name of each referenced variable that is not set (`-validate` names
 * them); a variable set to the empty string is set.
 *
 * Each pass is a single left-to-right scan and inserted values are not scanned again by the same
 * pass. (Caddy's `replaceEnvVars` re-scans the whole string after each replacement, which loops
 * forever on `A={$A}`, and stops at the first `{$}`; neither is behaviour anyone can rely on.)
 */
export function substituteEnv(text: string, env: Env, onUnset?: (name: string) => void): string {
  // Fast path: the vast majority of tokens contain no reference at all.
  if (!text.includes('{')) return text;
  return replaceRefs(replaceRefs(text, '{%', '%}', env, onUnset), '{$', '}', env, onUnset);
}

function replaceRefs(
  s: string,
  open: string,
  close: string,
  env: Env,
  onUnset: ((name: string) => void) | undefined,
): string {
  let start = s.indexOf(open);
  if (start < 0) return s;
  let out = '';
  let done = 0; // s[0..done) has been copied to out
  while (start >= 0) {
    const nameStart = start + open.length;
    // Search from start+1 as Caddy does, so in `{%}` the `%}` overlapping the opener is found
    // and the reference counts as empty (literal) rather than swallowing later text.
    const end = s.indexOf(close, start + 1);
    if (end < 0) break; // unterminated: the rest is literal
    if (end <= nameStart) {
      // Empty name: keep literally.
      out += s.slice(done, end + close.length);
    } else {
      const name = s.slice(nameStart, end);
      out += s.slice(done, start) + lookup(env, name, onUnset);
    }
    done = end + close.length;
    start = s.indexOf(open, done);
  }
  return out + s.slice(done);
}

function lookup(env: Env, name: string, onUnset: ((name: string) => void) | undefined): string {
  // Own properties only: a plain object env must not expose `constructor`, `__proto__`...
  const value = Object.prototype.hasOwnProperty.call(env, name) ? env[name] : undefined;
  if (value === undefined) {
    onUnset?.(name);
    return '';
  }
  return value;
}
