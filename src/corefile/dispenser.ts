/**
 * A cursor over one directive's tokens, modelled on the Caddy v1 `Dispenser` that CoreDNS plugins
 * use for their setup: `next`, `nextArg`, `nextBlock`, `val`, `argErr`... so that plugin setup code
 * reads like its Go counterpart and fails in the same situations.
 */
import { ConfigError, type Token } from './types.js';

export class Dispenser {
  private cursor = -1;
  private nesting = 0;

  constructor(
    readonly tokens: readonly Token[],
    /** Plugin name for error prefixes (`plugin/<name>: `). */
    readonly plugin = '',
  ) {}

  /** Advance to the next token, wherever it is. */
  next(): boolean {
    if (this.cursor < this.tokens.length - 1) {
      this.cursor++;
      return true;
    }
    return false;
  }

  /** Advance only if the next token is on the same line as the current one. */
  nextArg(): boolean {
    if (this.cursor < 0) {
      this.cursor++;
      return true;
    }
    if (this.cursor >= this.tokens.length - 1) return false;
    const cur = this.tokens[this.cursor]!;
    const nxt = this.tokens[this.cursor + 1]!;
    if (cur.file === nxt.file && cur.endLine === nxt.line) {
      this.cursor++;
      return true;
    }
    return false;
  }

  /** Advance only if the next token starts a new line. */
  nextLine(): boolean {
    if (this.cursor < 0) {
      this.cursor++;
      return true;
    }
    if (this.cursor >= this.tokens.length - 1) return false;
    const cur = this.tokens[this.cursor]!;
    const nxt = this.tokens[this.cursor + 1]!;
    if (cur.file !== nxt.file || cur.endLine < nxt.line) {
      this.cursor++;
      return true;
    }
    return false;
  }

  /**
   * Iterate over the lines of a nested block: call in a `while (d.nextBlock())` loop; each
   * iteration leaves the cursor on the first token of a block line. The block must open on the
   * current line (Caddy semantics).
   */
  nextBlock(): boolean {
    if (this.nesting > 0) {
      if (!this.next()) return false;
      if (this.isBrace('}')) {
        this.nesting--;
        return false;
      }
      return true;
    }
    if (!this.nextArg()) return false;
    if (!this.isBrace('{')) {
      this.cursor--;
      return false;
    }
    this.next();
    if (this.isBrace('}')) return false;
    this.nesting++;
    return true;
  }

  /** Step back one token (undo a `next`/`nextArg` that read too far). */
  cursorBack(): void {
    if (this.cursor >= 0) this.cursor--;
  }

  /** Current nesting depth of `nextBlock` iteration. */
  get nest(): number {
    return this.nesting;
  }

  /** Text of the current token ('' before the first `next`). */
  val(): string {
    return this.token()?.text ?? '';
  }

  /** The current token, if any. */
  token(): Token | undefined {
    return this.cursor >= 0 ? this.tokens[this.cursor] : undefined;
  }

  line(): number {
    return this.token()?.line ?? this.tokens[0]?.line ?? 0;
  }

  file(): string {
    return this.token()?.file ?? this.tokens[0]?.file ?? '';
  }

  /** True when the current token is an unquoted brace `{` or `}`. */
  isBrace(which: '{' | '}'): boolean {
    const t = this.token();
    return t !== undefined && !t.quoted && t.text === which;
  }

  /** Remaining arguments on the current line (stops before a `{` that opens a block). */
  remainingArgs(): string[] {
    const args: string[] = [];
    while (this.nextArg()) {
      if (this.isBrace('{')) {
        this.cursor--;
        break;
      }
      args.push(this.val());
    }
    return args;
  }

  /** Remaining argument tokens on the current line (like `remainingArgs`, keeping locations). */
  remainingArgTokens(): Token[] {
    const args: Token[] = [];
    while (this.nextArg()) {
      if (this.isBrace('{')) {
        this.cursor--;
        break;
      }
      args.push(this.token()!);
    }
    return args;
  }

  /** Skip the rest of the current line and any nested block that opens on it. */
  skipLine(): void {
    this.remainingArgs();
    if (!this.nextArg()) return;
    if (!this.isBrace('{')) {
      this.cursor--;
      return;
    }
    // A nested block: skip to its matching closing brace.
    let depth = 1;
    while (depth > 0 && this.next()) {
      if (this.isBrace('{')) depth++;
      else if (this.isBrace('}')) depth--;
    }
  }

  /** Error with the current location. */
  err(message: string): ConfigError {
    return new ConfigError(message, this.file(), this.line(), this.plugin || undefined);
  }

  /** `Wrong argument count or unexpected line ending after 'X'`. */
  argErr(): ConfigError {
    return this.err(`Wrong argument count or unexpected line ending after '${this.val()}'`);
  }

  /** `Syntax error: Unexpected token 'X', expecting 'Y'`. */
  syntaxErr(expected: string): ConfigError {
    return this.err(`Syntax error: Unexpected token '${this.val()}', expecting '${expected}'`);
  }
}
