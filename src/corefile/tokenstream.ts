/** The parser's view of the tokens: one cursor over the Corefile's tokens with imported tokens spliced in, and the line and brace tests on tokens. */
import type { Token } from './types.js';

interface Frame {
  readonly tokens: readonly Token[];
  pos: number;
}

/**
 * A cursor over the token stream with imports spliced in as frames. `cur` is the current token
 * (it stays on the last token at EOF, as Caddy's cursor does, so EOF errors point at it), and
 * `newLine` says whether `cur` starts a new line relative to the token read before it.
 */
export class TokenStream {
  private readonly frames: Frame[];
  cur: Token | undefined;
  newLine = true;
  // One level of `unread` is all the grammar needs.
  private lastFrame: Frame | undefined;
  /** The token read before `cur`. */
  prevCur: Token | undefined;
  private prevNewLine = true;

  constructor(tokens: readonly Token[]) {
    this.frames = [{ tokens, pos: 0 }];
  }

  next(): boolean {
    const frames = this.frames;
    while (frames.length > 0) {
      const top = frames[frames.length - 1]!;
      if (top.pos < top.tokens.length) {
        const tok = top.tokens[top.pos++]!;
        this.prevCur = this.cur;
        this.prevNewLine = this.newLine;
        this.newLine = this.cur === undefined || !sameLine(this.cur, tok);
        this.cur = tok;
        this.lastFrame = top;
        return true;
      }
      frames.pop();
    }
    return false;
  }

  /** Advance only if the next token is on the current token's line. */
  nextArg(): boolean {
    if (!this.next()) return false;
    if (!this.newLine) return true;
    this.unread();
    return false;
  }

  /** Step back one token (Caddy's `cursor--`); the same token is returned by the next `next()`. */
  unread(): void {
    if (this.lastFrame === undefined) throw new Error('corefile parser: nothing to unread');
    this.lastFrame.pos--;
    this.lastFrame = undefined;
    this.cur = this.prevCur;
    this.newLine = this.prevNewLine;
  }

  /**
   * Insert tokens to be read next, in place of an `import PATTERN` statement. `before` is the
   * token that preceded `import`: like Caddy, which splices the two tokens out of its array, the
   * first imported token's `newLine` is judged against it, not against the import's argument.
   * (Otherwise a file whose first line is `import x` would, when imported by a line `import x`
   * of the same file and line number, look like a continuation of that line.)
   */
  push(tokens: readonly Token[], before: Token | undefined): void {
    // Drop exhausted frames first so a long chain of imports at the end of files does not grow
    // the stack. Safe: `unread` is never pending when an import is pushed.
    while (this.frames.length > 0) {
      const top = this.frames[this.frames.length - 1]!;
      if (top.pos < top.tokens.length) break;
      this.frames.pop();
    }
    this.lastFrame = undefined;
    this.cur = before;
    this.newLine = true;
    if (tokens.length > 0) this.frames.push({ tokens, pos: 0 });
  }
}

/**
 * "Same line": `b` starts on the line where `a` ends, in the same file. (A multi-line quoted token
 * ends on a later line than it starts.) Tokens from different files are never on the same line.
 * This is the rule of `Dispenser.nextArg`, so the parser and the plugins agree.
 */
export function sameLine(a: Token, b: Token): boolean {
  return a.file === b.file && a.endLine === b.line;
}

/** An unquoted `{` or `}` token (a quoted `"{"` is an ordinary argument; see Token.quoted). */
export function isBrace(t: Token | undefined, which: '{' | '}'): boolean {
  return t !== undefined && !t.quoted && t.text === which;
}
