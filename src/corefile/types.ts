/** Tokens and server blocks produced by the Corefile lexer/parser (docs/corefile.md §2, §3). */

export interface Token {
  /** Text after quote removal, escape handling and environment substitution. */
  readonly text: string;
  /** File the token was read from (as given, e.g. `Corefile` or `/etc/coredns/Corefile`). */
  readonly file: string;
  /** Line the token starts on (1-based). */
  readonly line: number;
  /** Line the token ends on (differs from `line` only for quoted tokens containing newlines). */
  readonly endLine: number;
  /** The token was written in quotes (so `"{"` is not a brace). */
  readonly quoted: boolean;
}

/** A parsed server block: its keys and, per directive, all its tokens concatenated in file order. */
export interface ServerBlock {
  /** Keys as written (after env substitution), e.g. `.:53`, `dns://cluster.local`. Empty keys removed. */
  readonly keys: Token[];
  /**
   * For each directive used in the block, the tokens of all its occurrences in file order. Each
   * occurrence starts with the directive-name token, followed by its arguments and nested block.
   */
  readonly directives: Map<string, Token[]>;
  /**
   * For each directive, where each of its occurrences starts in `directives.get(name)` (index of
   * the directive-name token), as the parser read them: one entry per line that uses it.
   */
  readonly starts: Map<string, number[]>;
}

/** A configuration error with a location; printed as `file:line - Error during parsing: message`. */
export class ConfigError extends Error {
  constructor(
    message: string,
    readonly file?: string,
    readonly line?: number,
    /** `plugin/<name>` prefix for setup errors; undefined for parse errors. */
    readonly plugin?: string,
  ) {
    super(message);
    this.name = 'ConfigError';
  }

  /** One-line description with location, the way the CLI and the reload plugin print it. */
  describe(): string {
    const where = this.file !== undefined ? `${this.file}:${this.line ?? 0} - ` : '';
    const prefix = this.plugin ? `plugin/${this.plugin}: ` : '';
    return `${prefix}${where}Error during parsing: ${this.message}`;
  }
}

/**
 * A setup error Go's plugin returns as it is, not through Caddy's `c.Err`: printed as
 * `plugin/NAME: MESSAGE`, without a location or "Error during parsing" (view's expression errors).
 */
export class BareSetupError extends ConfigError {
  constructor(message: string, file: string | undefined, line: number | undefined, plugin: string) {
    super(message, file, line, plugin);
    this.name = 'BareSetupError';
  }

  override describe(): string {
    return `plugin/${this.plugin ?? ''}: ${this.message}`;
  }
}

/**
 * A setup error Go's plugin returns from Caddy's `c.Errf` without `plugin.Error`: printed with its
 * location but without the `plugin/NAME: ` prefix (proxyproto's `unknown option`).
 */
export class UnwrappedSetupError extends ConfigError {
  constructor(message: string, file: string | undefined, line: number | undefined, plugin: string) {
    super(message, file, line, plugin);
    this.name = 'UnwrappedSetupError';
  }

  override describe(): string {
    const where = this.file !== undefined ? `${this.file}:${this.line ?? 0} - ` : '';
    return `${where}Error during parsing: ${this.message}`;
  }
}

/**
 * Several configuration errors of one directive, thrown by the generic option parser so that
 * `-validate` reports every bad option at once; a normal start reports the first.
 */
export class ConfigErrorList extends Error {
  constructor(readonly errors: readonly ConfigError[]) {
    super(errors.map((e) => e.message).join('; '));
    this.name = 'ConfigErrorList';
  }
}
