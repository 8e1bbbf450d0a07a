/**
 * Shell-style splitting of an `on` command line, as Caddy's SplitCommandAndArgs does it on Unix
 * (github.com/flynn/go-shlex): words separated by spaces, tabs and newlines; `"…"` with backslash
 * escapes, `'…'` literal, `\` escaping one character, `#` at the start of a word a comment to the
 * end of the line. Only the ASCII characters go-shlex classifies are accepted; any other character
 * is its `Unknown rune: N` error. Errors carry go-shlex's text.
 */

const CHARS = new Set('abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-,/@$*()+=><:;&^%~|!?[]{}');
const SPACE = new Set(' \t\r\n');

type Kind = 'char' | 'space' | 'dquote' | 'squote' | 'escape' | 'comment' | 'unknown' | 'eof';

function kind(c: string | undefined): Kind {
  if (c === undefined) return 'eof';
  if (CHARS.has(c)) return 'char';
  if (SPACE.has(c)) return 'space';
  if (c === '"') return 'dquote';
  if (c === "'") return 'squote';
  if (c === '\\') return 'escape';
  if (c === '#') return 'comment';
  return 'unknown';
}

/** The words of `s`, or throws an Error with go-shlex's message. */
export function shlexSplit(s: string): string[] {
  const runes = [...s];
  const words: string[] = [];
  let i = 0;
  const next = (): [string | undefined, Kind] => {
    const c = runes[i++];
    return [c, kind(c)];
  };
  const codePoint = (c: string | undefined): number => c?.codePointAt(0) ?? 0;
  for (;;) {
    let state: 'start' | 'word' | 'esc' | 'escq' | 'dq' | 'sq' | 'comment' = 'start';
    let value = '';
    let isWord = false;
    let err: string | null = null;
    scan: for (;;) {
      const [c, k] = next();
      switch (state) {
        case 'start':
          if (k === 'eof') return words;
          if (k === 'char') [value, isWord, state] = [value + c, true, 'word'];
          else if (k === 'space') continue;
          else if (k === 'dquote') [isWord, state] = [true, 'dq'];
          else if (k === 'squote') [isWord, state] = [true, 'sq'];
          else if (k === 'escape') [isWord, state] = [true, 'esc'];
          else if (k === 'comment') [isWord, state] = [false, 'comment'];
          else throw new Error(`Unknown rune: ${codePoint(c)}`);
          break;
        case 'word':
          if (k === 'eof') break scan;
          if (k === 'char' || k === 'comment') value += c;
          else if (k === 'space') {
            i--;
            break scan;
          } else if (k === 'dquote') state = 'dq';
          else if (k === 'squote') state = 'sq';
          else if (k === 'escape') state = 'esc';
          else throw new Error(`Uknown rune: ${codePoint(c)}`);
          break;
        case 'esc':
        case 'escq':
          if (k === 'eof') {
            err = 'EOF found after escape character';
            break scan;
          }
          if (k === 'unknown') throw new Error(`Uknown rune: ${codePoint(c)}`);
          value += c;
          state = state === 'esc' ? 'word' : 'dq';
          break;
        case 'dq':
          if (k === 'eof') {
            err = 'EOF found when expecting closing quote.';
            break scan;
          }
          if (k === 'dquote') state = 'word';
          else if (k === 'escape') state = 'escq';
          else value += c;
          break;
        case 'sq':
          if (k === 'eof') {
            err = 'EOF found when expecting closing quote.';
            break scan;
          }
          if (k === 'squote') state = 'word';
          else value += c;
          break;
        case 'comment':
          if (k === 'eof') break scan;
          if (c === '\n') break scan;
          value += c;
          break;
      }
    }
    if (err !== null) throw new Error(err);
    if (isWord) words.push(value);
  }
}
