/**
 * The Corefile parser (docs/corefile.md §3–§5): groups tokens into server blocks, expands `import`
 * (snippets, files, globs) and environment references, and checks directive names. It does not
 * interpret directive arguments or nested blocks; each plugin reads its own tokens with a
 * `Dispenser`.
 *
 * The control flow follows Caddy v1's `caddyfile/parse.go` (the parser CoreDNS embeds) closely,
 * because "fails in exactly the same situations" is the compatibility requirement. Differences are
 * commented where they are made. Instead of splicing imported tokens into one array (quadratic with
 * many imports), tokens are read from a stack of frames: an import pushes a frame, and the tokens
 * after the import statement follow once it is exhausted.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { coreLog } from '../log.js';
import { globFiles } from './glob.js';
import { lex, substituteEnv, type Env } from './lexer.js';
import { isBrace, sameLine, TokenStream } from './tokenstream.js';
import { ConfigError, type ServerBlock, type Token } from './types.js';

export interface ParseOptions {
  /** Is `name` a known directive (plugin)? Anything else in directive position is an error. */
  isDirective(name: string): boolean;
  /** A directive CoreDNS has but this build does not: named as such in the error. */
  isForeignDirective?(name: string): boolean;
  /** Environment for `{$NAME}` / `{%NAME%}`; default `process.env`. */
  env?: Record<string, string | undefined>;
  /**
   * Read an imported file (absolute path) as UTF-8 text; default `fs.readFileSync`. To report the
   * right error it should throw like node:fs does: `code: 'ENOENT'` when the file does not exist,
   * `code: 'EISDIR'` for a directory.
   */
  readFile?(path: string): string;
  /**
   * Expand an import glob (at most one `*` and one `?`, already checked). `pattern` is the import
   * argument as written (after substitution); relative patterns are relative to `baseDir`, the
   * absolute directory of the importing file. Returns absolute paths of all matching entries
   * (directories included, as Go's `filepath.Glob`) in lexical order. Default `globFiles`.
   */
  glob?(pattern: string, baseDir: string): string[];
  /** Warnings (glob without match, stray `}`...); default: `[WARNING] …` on the server log. */
  warn?(msg: string): void;
  /**
   * Keep going after an error (for `-validate`): every error is collected in `ParseResult.errors`
   * instead of the first one being thrown. The parser resumes at the smallest unit it can skip —
   * the key, the import line, the directive (with its nested block), the snippet — so later
   * errors are real ones, and a block is kept (for setup checks) with the bad parts left out. The
   * first error collected is always the one a normal parse throws; a Corefile without errors parses
   * to exactly the same blocks either way.
   */
  recover?: boolean;
  /** Called for each `{$NAME}` / `{%NAME%}` reference to a variable that is not set. */
  onUnsetEnv?(name: string, token: Token): void;
}

export interface ParseResult {
  blocks: ServerBlock[];
  /**
   * Files the configuration was read from: the main `file` first (as given), then every imported
   * file (absolute paths) in the order first read, without duplicates. The reload plugin watches
   * these; snippets add nothing.
   */
  files: string[];
  /** With `recover`: every error, in the order met (see `sortConfigErrors`); else empty. */
  errors: ConfigError[];
}

/** At most this many snippet expansions per parse (docs/corefile.md §5.1). */
export const MAX_SNIPPET_EXPANSIONS = 10_000;
/** At most this many file/glob import statements expanded per parse (docs/corefile.md §5.1). */
export const MAX_FILE_IMPORTS = 100_000;

/** Parse a Corefile into its server blocks (snippet definitions are not blocks). */
export function parseCorefile(text: string, file: string, opts: ParseOptions): ServerBlock[] {
  return parseCorefileWithFiles(text, file, opts).blocks;
}

/** Like `parseCorefile`, also returning the list of files read (main + imports). */
export function parseCorefileWithFiles(text: string, file: string, opts: ParseOptions): ParseResult {
  const p = new Parser(lex(text, file), file, opts);
  const blocks = p.parseAll();
  return { blocks, files: p.files, errors: p.errors };
}

/**
 * Sort errors into reading order: by file (in the order of `files`, the main file first; unknown
 * files last), then by line. Stable, so errors on one line keep the order they were met in.
 */
export function sortConfigErrors(errors: ConfigError[], files: readonly string[]): ConfigError[] {
  const rank = (e: ConfigError) => {
    const i = e.file === undefined ? -1 : files.indexOf(e.file);
    return i < 0 ? files.length : i;
  };
  return errors.sort((a, b) => rank(a) - rank(b) || (a.line ?? 0) - (b.line ?? 0));
}

/**
 * The built-in configuration used when there is no Corefile or it has no server blocks
 * (docs/corefile.md §1.2).
 */
export function defaultCorefile(dnsPort: number): string {
  return `.:${dnsPort} {\nwhoami\nlog\n}\n`;
}

class Parser {
  private readonly s: TokenStream;
  private readonly env: Env;
  private readonly readFile: (p: string) => string;
  private readonly glob: (pattern: string, baseDir: string) => string[];
  private readonly warn: (msg: string) => void;
  private readonly snippets = new Map<string, readonly Token[]>();
  private snippetExpansions = 0;
  private fileImports = 0;
  private readonly fileSet = new Set<string>();
  readonly files: string[] = [];

  // Error recovery (opts.recover).
  private readonly recover: boolean;
  readonly errors: ConfigError[] = [];
  /** The token after a recovered error starts the next block: parseAll must not read past it. */
  private reuseCur = false;
  /** An error at the end of the file has been reported (later EOF errors would repeat it). */
  private eofReported = false;
  /** A limit error has been reported (each later import past the limit would repeat it). */
  private snippetLimitReported = false;
  private fileLimitReported = false;
  /** Snippets whose definition failed: importing them adds nothing and no second error. */
  private readonly brokenSnippets = new Set<string>();
  private readonly onUnsetEnv: ((name: string, token: Token) => void) | undefined;

  // State of the server block being read.
  private keys: Token[] = [];
  private directives = new Map<string, Token[]>();
  private starts = new Map<string, number[]>();
  /** Addresses hit EOF: the file ended right after a line of keys (a block without plugins). */
  private eof = false;

  constructor(
    tokens: Token[],
    mainFile: string,
    private readonly opts: ParseOptions,
  ) {
    this.s = new TokenStream(tokens);
    this.env = opts.env ?? process.env;
    this.readFile = opts.readFile ?? ((p) => fs.readFileSync(p, 'utf8'));
    this.glob = opts.glob ?? globFiles;
    this.warn = opts.warn ?? ((m) => coreLog.warning(m));
    this.recover = opts.recover === true;
    this.onUnsetEnv = opts.onUnsetEnv;
    this.addFile(mainFile);
  }

  parseAll(): ServerBlock[] {
    const blocks: ServerBlock[] = [];
    for (;;) {
      if (this.reuseCur) this.reuseCur = false;
      else if (!this.s.next()) break;
      this.keys = [];
      this.directives = new Map();
      this.starts = new Map();
      this.eof = false;
      this.parseOne();
      // Snippet definitions and key lines that were all empty produce no block.
      if (this.keys.length > 0) blocks.push({ keys: this.keys, directives: this.directives, starts: this.starts });
    }
    return blocks;
  }

  /** One server block or snippet definition; `s.cur` is its first token. */
  private parseOne(): void {
    this.addresses();
    const snippet = this.snippetName();
    if (this.eof) {
      // Keys and then EOF: a block without plugins. Caddy would even keep `(name)` as a server
      // key here; the spec makes the braces of a snippet mandatory.
      if (snippet !== undefined) {
        this.failEof(this.syntaxErr('{'));
        this.keys = [];
      }
      return;
    }
    if (snippet !== undefined) {
      this.defineSnippet(snippet);
      this.keys = [];
      return;
    }
    this.blockContents();
  }

  /**
   * Read the keys of a block (§3.1): up to a `{`, or up to a token that starts a new line unless
   * the previous key ended in a comma (then the next key may be on the next line).
   */
  private addresses(): void {
    const s = this.s;
    let expectingAnother = false;
    for (;;) {
      const t = s.cur!;

      // A top-level `import` (must begin a line): its tokens replace it and are read as keys etc.
      if (t.text === 'import' && s.newLine) {
        this.doImport();
        if (!s.next()) {
          if (expectingAnother) this.failEof(this.err('Unexpected EOF'));
          this.eof = true;
          return;
        }
        continue;
      }

      if (isBrace(t, '{')) {
        // Recovery: the `{` opens the block, without the missing key.
        if (expectingAnother) this.fail(this.err("Expected another address but had '{' - check for extra comma"));
        return;
      }

      let key = this.subst(t);
      // Empty keys (`""`, an unset `{$VAR}`) are skipped (§2, §4).
      if (key.text !== '') {
        // A trailing comma announces another key, which may be on the next line.
        if (key.text.endsWith(',')) {
          key = { ...key, text: key.text.slice(0, -1) };
          expectingAnother = true;
        } else {
          expectingAnother = false;
        }
        if (key.text === '') {
          // A lone `,` (or `{$UNSET},`): Caddy keeps an empty key here, which CoreDNS then rejects
          // as an invalid zone. Fail the same way, but say why. (Recovery: drop the empty key.)
          this.fail(this.err("Expected an address before ',' - check for extra comma"));
        } else {
          if (isBrace(t, '}')) {
            // §9 #14: a stray `}` after a closed block. CoreDNS accepts it as a server block with
            // key `}` (zone `}.`, no plugins, so that zone is REFUSED); we accept it too, loudly.
            this.warn(
              `${t.file}:${t.line} - stray '}' read as a server block key; it serves zone '}.' with no plugins (remove it)`,
            );
          }
          this.keys.push(key);
        }
      }

      const hasNext = s.next();
      if (expectingAnother && !hasNext) this.failEof(this.err('Unexpected EOF'));
      if (!hasNext) {
        this.eof = true;
        return;
      }
      if (!expectingAnother && s.newLine) return;
    }
  }

  /** The snippet name when the block's only key is `(name)`. */
  private snippetName(): string | undefined {
    if (this.keys.length !== 1) return undefined;
    const k = this.keys[0]!.text;
    if (k.length >= 2 && k.startsWith('(') && k.endsWith(')')) return k.slice(1, -1);
    return undefined;
  }

  /** `(name) { … }`: store the body verbatim (raw tokens, balanced braces) for later imports. */
  private defineSnippet(name: string): void {
    const s = this.s;
    // Recovery: a redeclaration is read and dropped (the first definition stays).
    const redeclared = this.snippets.has(name);
    if (redeclared) this.fail(this.err(`redeclaration of previously declared snippet ${name}`));
    if (!isBrace(s.cur, '{')) {
      // Recovery: the token after `(name)` is on the next line and starts the next block.
      this.fail(this.syntaxErr('{'));
      if (!redeclared) this.brokenSnippets.add(name);
      this.reuseCur = true;
      return;
    }
    const body: Token[] = [];
    let depth = 1;
    for (;;) {
      if (!s.next()) {
        this.failEof(this.syntaxErr('}'));
        if (!redeclared) this.brokenSnippets.add(name);
        return;
      }
      const t = s.cur!;
      if (isBrace(t, '}') && --depth === 0) break;
      if (isBrace(t, '{')) depth++;
      body.push(t);
    }
    // Caddy's guard against the trivial cycle: a body line `import <own name>` fails at
    // definition time, with the same message the expansion cap would give.
    for (let i = 0; i + 1 < body.length; i++) {
      const t = body[i]!;
      const atLineStart = i === 0 || !sameLine(body[i - 1]!, t);
      if (t.text === 'import' && atLineStart && this.subst(body[i + 1]!).text === name) {
        this.fail(new ConfigError(`maximum snippet import depth (${MAX_SNIPPET_EXPANSIONS}) exceeded`, t.file, t.line));
        if (!redeclared) this.brokenSnippets.add(name);
        return;
      }
    }
    if (!redeclared) this.snippets.set(name, body);
  }

  /**
   * The block body: `{ directives }`, or — when the keys are not followed by `{` — a brace-less
   * block that runs to EOF or to a stray `}`.
   */
  private blockContents(): void {
    const s = this.s;
    const opened = isBrace(s.cur, '{');
    if (!opened) s.unread(); // the token after the keys is the first directive
    const closedByBrace = this.directivesLoop();
    if (!opened || closedByBrace) return;
    const last = s.cur!;
    if (isBrace(last, '}')) {
      // Caddy only checks that the *current* token is `}`; at EOF that is the last token of the
      // file, which may be the `}` of a directive's nested block. CoreDNS therefore accepts a file
      // missing its final `}` when it ends with a nested block; so do we, with a warning.
      this.warn(`${last.file}:${last.line} - server block is missing its closing '}' at end of file`);
      return;
    }
    this.failEof(this.syntaxErr('}'));
  }

  /** Directive lines until `}` (returns true) or EOF (returns false). */
  private directivesLoop(): boolean {
    const s = this.s;
    while (s.next()) {
      const t = s.cur!;
      if (isBrace(t, '}')) return true;
      if (t.text === 'import') {
        this.doImport();
        continue;
      }
      this.directive();
    }
    return false;
  }

  /**
   * One directive: its name, the arguments on its line and any nested block (balanced braces,
   * across lines). `import` at the start of a line inside a nested block is expanded.
   */
  private directive(): void {
    const s = this.s;
    const nameTok = this.subst(s.cur!);
    const name = nameTok.text;
    let list: Token[] | undefined;
    let starts: number[] | undefined;
    if (!this.opts.isDirective(name)) {
      const foreign = this.opts.isForeignDirective?.(name) === true;
      this.fail(
        this.err(`Unknown directive '${name}'${foreign ? ' (a CoreDNS plugin clusterdns does not implement)' : ''}`),
      );
      list = []; // recovery: read the directive with its nested block, and drop it
    } else {
      list = this.directives.get(name);
      if (list === undefined) {
        list = [];
        this.directives.set(name, list);
      }
      starts = this.starts.get(name);
      if (starts === undefined) {
        starts = [];
        this.starts.set(name, starts);
      }
    }
    const start = list.length;
    list.push(nameTok);
    starts?.push(start);

    let nesting = 0;
    while (s.next()) {
      const t = s.cur!;
      // Order of the checks matters and is Caddy's: a `{` opens a nested block even at the start
      // of the next line (§9 #4: the block is attached, but the plugin will not see it as its
      // block), while any other token on a new line at depth 0 ends the directive.
      if (isBrace(t, '{')) {
        nesting++;
      } else if (s.newLine && nesting === 0) {
        s.unread();
        break;
      } else if (isBrace(t, '}')) {
        if (nesting === 0) {
          // Recovery: read the `}` as the end of the server block.
          this.fail(this.err("Unexpected '}' because no matching opening brace"));
          s.unread();
          break;
        }
        nesting--;
      } else if (t.text === 'import' && s.newLine) {
        this.doImport();
        continue;
      }
      list.push(this.subst(t));
    }
    if (nesting > 0) {
      // Recovery: the unclosed nested block swallowed the rest of the file; leave it out.
      this.failEof(this.err('Unexpected EOF'));
      list.length = start;
      starts?.pop();
      if (list.length === 0 && this.directives.get(name) === list) {
        this.directives.delete(name);
        this.starts.delete(name);
      }
    }
  }

  /**
   * `import PATTERN` with `s.cur` on `import`: read the argument and push the snippet's or files'
   * tokens so that the next `next()` returns the first imported token (§5).
   */
  private doImport(): void {
    const s = this.s;
    const beforeImport = s.prevCur;
    // Recovery (opts.recover) from any error here: the import adds nothing, and the rest of its
    // line is skipped, so the tokens that follow are read as if the line were not there.
    if (!s.nextArg()) return this.fail(this.err("Wrong argument count or unexpected line ending after 'import'"));
    const argTok = s.cur!;
    const pattern = this.subst(argTok).text;
    if (pattern === '') {
      this.fail(this.err('Import requires a non-empty filepath'));
      return this.skipLine();
    }
    if (s.nextArg()) {
      this.fail(this.err('Import takes only one argument (glob pattern or file)'));
      return this.skipLine();
    }

    // A snippet defined earlier wins over a file of the same name.
    const snippet = this.snippets.get(pattern);
    if (snippet !== undefined) {
      if (this.snippetExpansions >= MAX_SNIPPET_EXPANSIONS) {
        if (this.snippetLimitReported) return;
        this.snippetLimitReported = true;
        return this.fail(this.errAt(argTok, `maximum snippet import depth (${MAX_SNIPPET_EXPANSIONS}) exceeded`));
      }
      this.snippetExpansions++;
      s.push(snippet, beforeImport);
      return;
    }
    // Its definition was reported already.
    if (this.brokenSnippets.has(pattern)) return;

    if (this.fileImports >= MAX_FILE_IMPORTS) {
      if (this.fileLimitReported) return;
      this.fileLimitReported = true;
      return this.fail(this.errAt(argTok, `maximum file import depth (${MAX_FILE_IMPORTS}) exceeded`));
    }
    this.fileImports++;

    // Relative to the directory of the file containing the import (not the working directory).
    const baseDir = path.dirname(path.resolve(argTok.file));
    const full = path.isAbsolute(pattern) ? pattern : path.join(baseDir, pattern);
    // Checked on the joined path, as Caddy does (coredns issue #2096: many wildcards can make a
    // glob hang).
    if (count(full, '*') > 1 || count(full, '?') > 1 || (full.includes('[') && full.includes(']'))) {
      return this.fail(this.errAt(argTok, `Glob pattern may only contain one wildcard (*), but has others: ${full}`));
    }
    if (full.includes('[')) {
      // An unclosed `[` is a malformed pattern for Go's filepath.Glob.
      return this.fail(this.errAt(argTok, `Failed to use import pattern ${pattern}: syntax error in pattern`));
    }

    let matches: string[];
    if (full.includes('*') || full.includes('?')) {
      matches = this.glob(pattern, baseDir);
      if (matches.length === 0) {
        // An empty glob is normal (e.g. an optional conf.d); a missing plain file is not.
        this.warn(`No files matching import glob pattern: ${pattern}`);
      }
    } else {
      matches = [full];
    }

    const imported: Token[] = [];
    for (const m of matches) {
      let text: string;
      try {
        text = this.readFile(m);
      } catch (e) {
        // Recovery: this match adds nothing; the other matches of a glob are still read.
        const code = (e as { code?: unknown } | null)?.code;
        if (matches.length === 1 && m === full && (code === 'ENOENT' || code === 'ENOTDIR')) {
          this.fail(this.errAt(argTok, `File to import not found: ${pattern}`));
        } else if (code === 'EISDIR') {
          this.fail(this.errAt(argTok, `Could not import ${m}: is a directory`));
        } else {
          this.fail(this.errAt(argTok, `Could not import ${m}: ${e instanceof Error ? e.message : String(e)}`));
        }
        continue;
      }
      const abs = path.resolve(m);
      this.addFile(abs);
      // Imported tokens carry their own file name (absolute, as Caddy does) and line numbers.
      for (const t of lex(text, abs)) imported.push(t);
    }
    s.push(imported, beforeImport);
  }

  /** Recovery: skip the remaining tokens of the current line. */
  private skipLine(): void {
    while (this.s.nextArg()) {
      // skip
    }
  }

  /** An error: thrown, or with opts.recover collected (the caller then resumes). */
  private fail(e: ConfigError): void {
    if (!this.recover) throw e;
    this.errors.push(e);
  }

  /** An error at the end of the input: with opts.recover reported once (later ones repeat it). */
  private failEof(e: ConfigError): void {
    if (this.recover && this.eofReported) return;
    this.eofReported = true;
    this.fail(e);
  }

  private addFile(f: string): void {
    if (!this.fileSet.has(f)) {
      this.fileSet.add(f);
      this.files.push(f);
    }
  }

  /**
   * The token with environment references replaced (§4). Applied to each token when it is
   * consumed, never to raw text, so the token structure cannot change. One subtlety: a value that
   * turns an ordinary token into exactly `{` or `}` must not become a brace for the plugins'
   * Dispenser, which recognises braces as unquoted `{`/`}` tokens — such a token is marked quoted.
   */
  private subst(t: Token): Token {
    const onUnset = this.onUnsetEnv;
    const text = substituteEnv(t.text, this.env, onUnset && ((name) => onUnset(name, t)));
    if (text === t.text) return t;
    const quoted = t.quoted || text === '{' || text === '}';
    return { text, file: t.file, line: t.line, endLine: t.endLine, quoted };
  }

  private err(message: string): ConfigError {
    return this.errAt(this.s.cur, message);
  }

  private errAt(t: Token | undefined, message: string): ConfigError {
    return new ConfigError(message, t?.file, t?.line ?? 0);
  }

  /** `Syntax error: Unexpected token 'X', expecting 'Y'` at the current token. */
  private syntaxErr(expected: string): ConfigError {
    const cur = this.s.cur;
    const text = cur === undefined ? '' : this.subst(cur).text;
    return this.err(`Syntax error: Unexpected token '${text}', expecting '${expected}'`);
  }
}

function count(s: string, ch: string): number {
  let n = 0;
  for (let i = s.indexOf(ch); i >= 0; i = s.indexOf(ch, i + 1)) n++;
  return n;
}
