/**
 * Declared options: a plugin describes its directive's arguments and block options as data, and one
 * generic parser turns a directive occurrence into checked values with CoreDNS's error wording and
 * the token's file:line (docs/corefile.md, "Declared options").
 *
 *     export const CACHE_OPTIONS = directive('cache', {
 *       args: { rest: zoneArg(), max: Infinity },
 *       options: [
 *         option('servfail', { args: [duration({ max: 300_000 })] }),
 *         option('keepttl'),
 *         option('disable', { args: [oneOf(['success', 'denial'])], rest: zoneArg(), repeat: 'all' }),
 *       ],
 *     });
 *     const occ = parseOccurrence(d, CACHE_OPTIONS);   // cursor on the `cache` token
 *     occ.last('servfail')?.values[0]                  // number (milliseconds)
 *
 * What the declaration cannot say (arguments whose meaning depends on each other, such as cache's
 * optional leading TTL) stays in the plugin's setup, which reads the raw values from the result.
 * Every error of the occurrence is collected; one is thrown as a ConfigError, several as a
 * ConfigErrorList so that `-validate` reports all of them.
 */
import { isIP } from 'node:net';
import type { Dispenser } from './dispenser.js';
import { ConfigError, ConfigErrorList, type Token } from './types.js';
import { DurationError, parseGoDuration } from '../util/duration.js';
import { normalizeZoneArg } from '../dns/name.js';
import { splitHostPort } from '../util/hostport.js';

/** A parsed argument value: numbers for int/duration (milliseconds), strings otherwise. */
export type Value = string | number;

/** How one argument is checked and converted. `check` adds a plugin-specific rule (returns an error text or null). */
export type ArgType =
  | {
      readonly kind: 'int';
      readonly min?: number;
      readonly max?: number;
      readonly range?: (v: number) => string;
      readonly invalid?: (v: string, goError: string) => string;
      readonly meta: string;
    }
  | {
      readonly kind: 'float';
      readonly min?: number;
      readonly max?: number;
      readonly range?: (v: number) => string;
      readonly invalid?: (v: string, goError: string) => string;
      readonly meta: string;
    }
  | {
      readonly kind: 'percentage';
      readonly min?: number;
      readonly max?: number;
      readonly range?: (v: number) => string;
      readonly meta: string;
    }
  | {
      readonly kind: 'duration';
      readonly min?: number;
      readonly max?: number;
      readonly range?: (ms: number, v: string) => string;
      readonly invalid?: (v: string, goError: string) => string;
      readonly meta: string;
    }
  | {
      readonly kind: 'enum';
      readonly values: readonly string[];
      readonly meta: string;
      readonly invalid?: (v: string) => string;
    }
  | { readonly kind: 'listen'; readonly meta: string }
  | { readonly kind: 'cidr'; readonly meta: string }
  | { readonly kind: 'ip'; readonly meta: string }
  | { readonly kind: 'hostport'; readonly meta: string }
  | { readonly kind: 'zone'; readonly meta: string }
  | { readonly kind: 'file'; readonly meta: string }
  | { readonly kind: 'regex'; readonly meta: string }
  | { readonly kind: 'string'; readonly meta: string; readonly check?: (v: string) => string | null };

export interface ArgsDecl {
  /** Positional argument types, in order. */
  readonly args?: readonly ArgType[];
  /** Type of the arguments after the positional ones (none allowed when absent). */
  readonly rest?: ArgType;
  /** Fewest arguments (default: the number of positional ones). */
  readonly min?: number;
  /** Most arguments (default: positional count, or Infinity with `rest`). */
  readonly max?: number;
  /** The error text for a wrong argument count (given the count), where the plugin does not use CoreDNS's generic one. */
  readonly arity?: string | ((count: number) => string);
}

export interface OptionDecl extends ArgsDecl {
  /** The block keyword. */
  readonly name: string;
  /**
   * A second occurrence in the same block: `last` keeps the last one (most CoreDNS plugins simply
   * overwrite), `all` keeps every one in order, `error` rejects it with `option 'x' already set`.
   */
  readonly repeat: 'last' | 'all' | 'error';
  /** With `repeat: 'error'`, the plugin's own text for the second occurrence. */
  readonly repeated?: string;
  /** One line for docs (the README text is the reference; this is for `-validate` hints). */
  readonly summary?: string;
}

export interface DirectiveDecl {
  readonly name: string;
  /** The arguments on the directive line. */
  readonly args: ArgsDecl;
  /** Block options, in README order. Empty: the directive takes no block. */
  readonly options: readonly OptionDecl[];
  /** The error text for a block keyword that is not declared (default `unknown property 'x'`). */
  readonly unknown?: (name: string) => string;
  /**
   * `keep`: a line whose keyword is not declared is kept as an option named `*` (its keyword is the
   * first raw value) instead of being an error — for free-form lines such as hosts' inline entries.
   */
  readonly other?: 'keep';
  /**
   * The setup reads a block even though it declares no option (CoreDNS's chaos loops over
   * `NextBlock`): a block line is `unknown property 'x'` instead of Caddy's error on the `{`.
   */
  readonly readsBlock?: true;
}

// ---- Declaration helpers ---------------------------------------------------------------------

type NumOpts<R> = { min?: number; max?: number; range?: R; meta?: string };

/** A decimal integer (Go's strconv.Atoi); `invalid` rewords a non-number, `range` an out-of-range one. */
export function int(
  o: NumOpts<(v: number) => string> & { invalid?: (v: string, goError: string) => string } = {},
): ArgType {
  return { kind: 'int', meta: o.meta ?? 'NUMBER', ...o };
}
/** A decimal number with an optional sign and fraction (`0.5`, `20`, `-1`). */
export function float(
  o: NumOpts<(v: number) => string> & { invalid?: (v: string, goError: string) => string } = {},
): ArgType {
  return { kind: 'float', meta: o.meta ?? 'NUMBER', ...o };
}
/** An integer followed by `%` (`20%`), the value without the sign. */
export function percentage(o: NumOpts<(v: number) => string> = {}): ArgType {
  return { kind: 'percentage', meta: o.meta ?? 'PERCENTAGE', ...o };
}
/**
 * A Go duration, in milliseconds. `invalid` rewords Go's parse error (it gets the text and Go's
 * message), `range` a value outside min..max (it gets the milliseconds and the text).
 */
export function duration(
  o: NumOpts<(ms: number, v: string) => string> & { invalid?: (v: string, goError: string) => string } = {},
): ArgType {
  return { kind: 'duration', meta: o.meta ?? 'DURATION', ...o };
}
/** One of a fixed set of words; `invalid` rewords the error for any other word. */
export function oneOf(values: readonly string[], meta = values.join('|'), invalid?: (v: string) => string): ArgType {
  return invalid ? { kind: 'enum', values, meta, invalid } : { kind: 'enum', values, meta };
}
/** A listen address `[HOST]:PORT` checked like Go's net.SplitHostPort (`address x: missing port in address`). */
export function listenAddr(meta = 'ADDRESS'): ArgType {
  return { kind: 'listen', meta };
}
export function cidr(meta = 'CIDR'): ArgType {
  return { kind: 'cidr', meta };
}
export function ip(meta = 'ADDRESS'): ArgType {
  return { kind: 'ip', meta };
}
export function hostPort(meta = 'HOST:PORT'): ArgType {
  return { kind: 'hostport', meta };
}
export function zoneArg(meta = 'ZONES'): ArgType {
  return { kind: 'zone', meta };
}
export function file(meta = 'FILE'): ArgType {
  return { kind: 'file', meta };
}
export function regex(meta = 'REGEX'): ArgType {
  return { kind: 'regex', meta };
}
export function str(meta = 'VALUE', check?: (v: string) => string | null): ArgType {
  return check ? { kind: 'string', meta, check } : { kind: 'string', meta };
}

export function option(name: string, o: Partial<Omit<OptionDecl, 'name'>> = {}): OptionDecl {
  return { name, repeat: o.repeat ?? 'last', ...o };
}

export function directive(name: string, o: Partial<Omit<DirectiveDecl, 'name'>> = {}): DirectiveDecl {
  return { ...o, name, args: o.args ?? {}, options: o.options ?? [] };
}

// ---- Parsing ---------------------------------------------------------------------------------

/** One parsed block option (or the directive line itself). */
export interface ParsedOption {
  readonly name: string;
  /** Converted values, in order (int/duration as numbers, zones normalised, others as written). */
  readonly values: readonly Value[];
  /** The arguments as written. */
  readonly raw: readonly string[];
  /** The keyword's token (file:line for later errors). */
  readonly token: Token;
}

/** The result of one directive occurrence. */
export class ParsedOccurrence {
  constructor(
    /** The directive line. */
    readonly directive: ParsedOption,
    /** Block options in file order. */
    readonly options: readonly ParsedOption[],
    /** The plugin name for errors (`plugin/<name>: `). */
    readonly plugin = '',
  ) {}

  /** A configuration error at an option's (or any token's) file:line, for the plugin's own rules. */
  error(at: ParsedOption | Token, message: string): ConfigError {
    const t = 'token' in at ? at.token : at;
    return new ConfigError(message, t.file, t.line, this.plugin || undefined);
  }

  /** Every occurrence of a block option, in order. */
  all(name: string): ParsedOption[] {
    return this.options.filter((o) => o.name === name);
  }

  /** The last occurrence of a block option (what `repeat: 'last'` keeps). */
  last(name: string): ParsedOption | undefined {
    for (let i = this.options.length - 1; i >= 0; i--) if (this.options[i]!.name === name) return this.options[i];
    return undefined;
  }

  has(name: string): boolean {
    return this.options.some((o) => o.name === name);
  }

  /** A numeric value of the last occurrence of `name` (int or duration), or `fallback`. */
  num(name: string, index: number, fallback: number): number {
    const v = this.last(name)?.values[index];
    return typeof v === 'number' ? v : fallback;
  }

  /** A string value of the last occurrence of `name`, or `fallback`. */
  str(name: string, index: number, fallback: string): string {
    const v = this.last(name)?.values[index];
    return typeof v === 'string' ? v : fallback;
  }
}

/** Go's strconv.Atoi error text. */
function atoiError(v: string): string {
  return /^[+-]?\d+$/.test(v)
    ? `strconv.Atoi: parsing ${JSON.stringify(v)}: value out of range`
    : `strconv.Atoi: parsing ${JSON.stringify(v)}: invalid syntax`;
}

/** The number if inside the type's min..max; otherwise throws the type's range text. */
function inRange(t: { min?: number; max?: number; range?: (v: number) => string; meta: string }, n: number): number {
  if ((t.min !== undefined && n < t.min) || (t.max !== undefined && n > t.max)) {
    throw new Error(
      t.range ? t.range(n) : `${t.meta.toLowerCase()} must be between ${t.min ?? '-inf'} and ${t.max ?? 'inf'}: ${n}`,
    );
  }
  return n;
}

/** Convert one argument; returns the value or throws the error text. */
export function convertArg(t: ArgType, v: string): Value[] {
  switch (t.kind) {
    case 'int': {
      const n = /^[+-]?\d+$/.test(v) ? Number(v) : NaN;
      if (!Number.isSafeInteger(n)) throw new Error(t.invalid ? t.invalid(v, atoiError(v)) : atoiError(v));
      return [inRange(t, n)];
    }
    case 'float': {
      const n = /^[+-]?(\d+(\.\d*)?|\.\d+)$/.test(v) ? Number(v) : NaN;
      const goError = `strconv.ParseFloat: parsing ${JSON.stringify(v)}: invalid syntax`;
      if (!Number.isFinite(n)) throw new Error(t.invalid ? t.invalid(v, goError) : goError);
      return [inRange(t, n)];
    }
    case 'percentage': {
      if (!v.endsWith('%')) throw new Error(`last character of percentage should be \`%\`, but is: '${v.slice(-1)}'`);
      const num = v.slice(0, -1);
      const n = /^[+-]?\d+$/.test(num) ? Number(num) : NaN;
      if (!Number.isSafeInteger(n)) throw new Error(atoiError(num));
      return [inRange(t, n)];
    }
    case 'duration': {
      let ms: number;
      try {
        ms = parseGoDuration(v);
      } catch (e) {
        const goError = e instanceof DurationError ? e.message : String(e);
        throw new Error(t.invalid ? t.invalid(v, goError) : goError);
      }
      if ((t.min !== undefined && ms < t.min) || (t.max !== undefined && ms > t.max)) {
        throw new Error(t.range ? t.range(ms, v) : `${t.meta.toLowerCase()} out of range: ${v}`);
      }
      return [ms];
    }
    case 'enum':
      if (!t.values.includes(v))
        throw new Error(
          t.invalid ? t.invalid(v) : `unknown value '${v}', expected ${t.values.map((x) => `'${x}'`).join(', ')}`,
        );
      return [v];
    case 'listen':
      splitHostPort(v); // throws Go's `address x: …` text
      return [v];
    case 'cidr': {
      const m = /^(.+)\/(\d{1,3})$/.exec(v);
      const fam = m ? isIP(m[1]!) : 0;
      if (!m || fam === 0 || Number(m[2]) > (fam === 4 ? 32 : 128)) throw new Error(`invalid CIDR address: ${v}`);
      return [v];
    }
    case 'ip':
      if (isIP(v) === 0) throw new Error(`not an IP address: ${v}`);
      return [v];
    case 'hostport':
      if (!/^(\[[^\]]+\]|[^:\s]+):\d{1,5}$/.test(v) && isIP(v) === 0 && !/^[^:\s]+$/.test(v))
        throw new Error(`invalid address: ${v}`);
      return [v];
    case 'zone':
      return normalizeZoneArg(v);
    case 'regex':
      try {
        new RegExp(v);
      } catch (e) {
        throw new Error(`error parsing regexp: ${(e as Error).message}: \`${v}\``);
      }
      return [v];
    case 'file':
      return [v];
    case 'string': {
      const why = t.check?.(v) ?? null;
      if (why !== null) throw new Error(why);
      return [v];
    }
  }
}

/** Check and convert the arguments of one line against `decl`; errors are pushed, not thrown. */
function parseArgs(d: Dispenser, decl: ArgsDecl, name: string, keyword: Token, errors: ConfigError[]): ParsedOption {
  const argTokens = d.remainingArgTokens();
  const positional = decl.args ?? [];
  const min = decl.min ?? positional.length;
  const max = decl.max ?? (decl.rest ? Infinity : positional.length);
  const raw = argTokens.map((t) => t.text);
  const values: Value[] = [];
  if (argTokens.length < min || argTokens.length > max) {
    // CoreDNS's ArgErr names the token the cursor is on: the last one read (RemainingArgs), or for
    // a directive that takes no arguments the first extra one (NextArg + ArgErr).
    const at = (max === 0 ? argTokens[0] : argTokens[argTokens.length - 1]) ?? keyword;
    const msg =
      typeof decl.arity === 'function'
        ? decl.arity(argTokens.length)
        : (decl.arity ?? `Wrong argument count or unexpected line ending after '${at.text}'`);
    errors.push(new ConfigError(msg, at.file, at.line, d.plugin || undefined));
    return { name, values, raw, token: keyword };
  }
  argTokens.forEach((tok, i) => {
    const type = positional[i] ?? decl.rest;
    if (!type) return;
    try {
      values.push(...convertArg(type, tok.text));
    } catch (e) {
      errors.push(new ConfigError((e as Error).message, tok.file, tok.line, d.plugin || undefined));
    }
  });
  return { name, values, raw, token: keyword };
}

/**
 * Parse one occurrence of `decl`: the cursor is on the directive's name token (after `d.next()`).
 * Leaves the cursor after the occurrence's block. Throws a ConfigError, or a ConfigErrorList when
 * several options are wrong.
 */
export function parseOccurrence(d: Dispenser, decl: DirectiveDecl): ParsedOccurrence {
  const errors: ConfigError[] = [];
  const keyword = d.token();
  if (!keyword) throw d.err(`missing directive '${decl.name}'`);
  const line = parseArgs(d, decl.args, decl.name, keyword, errors);
  const options: ParsedOption[] = [];
  if (decl.options.length === 0 && decl.other === undefined && decl.readsBlock === undefined && d.nextArg()) {
    // A directive without block options: Caddy's ArgErr on the `{` that opens one.
    const brace = d.token()!;
    errors.push(
      new ConfigError("Unexpected token '{', expecting argument", brace.file, brace.line, d.plugin || undefined),
    );
    d.cursorBack();
    skipRestOfLine(d);
  }
  const byName = new Map(decl.options.map((o) => [o.name, o]));
  while (d.nextBlock()) {
    const tok = d.token()!;
    const o = byName.get(tok.text);
    if (!o) {
      if (decl.other === 'keep') {
        const raw = [tok.text, ...d.remainingArgs()];
        options.push({ name: '*', values: raw, raw, token: tok });
        continue;
      }
      const msg = decl.unknown ? decl.unknown(tok.text) : `unknown property '${tok.text}'`;
      errors.push(new ConfigError(msg, tok.file, tok.line, d.plugin || undefined));
      skipRestOfLine(d);
      continue;
    }
    if (o.repeat === 'error' && options.some((x) => x.name === o.name)) {
      errors.push(
        new ConfigError(o.repeated ?? `option '${o.name}' already set`, tok.file, tok.line, d.plugin || undefined),
      );
      d.remainingArgs();
      continue;
    }
    options.push(parseArgs(d, o, o.name, tok, errors));
  }
  if (errors.length === 1) throw errors[0]!;
  if (errors.length > 1) throw new ConfigErrorList(errors);
  return new ParsedOccurrence(line, options, d.plugin);
}

/** Skip the arguments of the current block line and a nested `{ … }` that opens on it. */
function skipRestOfLine(d: Dispenser): void {
  d.remainingArgs();
  if (!d.nextArg()) return;
  if (!d.isBrace('{')) return;
  for (let depth = 1; depth > 0 && d.next(); ) {
    if (d.isBrace('{')) depth++;
    else if (d.isBrace('}')) depth--;
  }
}

/**
 * Parse every occurrence of the directive in `d` (for plugins whose occurrences accumulate),
 * applying `each` (the plugin's own rules) to each. Errors of all occurrences are collected.
 */
export function parseOccurrences<T = ParsedOccurrence>(
  d: Dispenser,
  decl: DirectiveDecl,
  each?: (occ: ParsedOccurrence) => T,
): T[] {
  const out: T[] = [];
  const errors: ConfigError[] = [];
  while (d.next()) {
    try {
      const occ = parseOccurrence(d, decl);
      out.push(each ? each(occ) : (occ as T));
    } catch (e) {
      if (e instanceof ConfigErrorList) errors.push(...e.errors);
      else if (e instanceof ConfigError) errors.push(e);
      else throw e;
      skipToOccurrenceEnd(d);
    }
  }
  if (errors.length === 1) throw errors[0]!;
  if (errors.length > 1) throw new ConfigErrorList(errors);
  return out;
}

/** After a plugin rule failed mid-occurrence: leave the cursor at the end of the occurrence's block. */
function skipToOccurrenceEnd(d: Dispenser): void {
  while (d.nest > 0 && d.nextBlock()) skipRestOfLine(d);
}

/**
 * The block option names a README's Syntax section documents: the first word of each line inside
 * the `{ … }` of its fenced (`~~~` or ```` ``` ````) code blocks (test/docs/readme-options.test.ts compares them with
 * the declaration).
 */
export function readmeOptionNames(readme: string): string[] {
  const syntax = /## Syntax\n([\s\S]*?)(\n## |$)/.exec(readme)?.[1] ?? '';
  const names = new Set<string>();
  const blocks = syntax.split(/^(?:~~~|```).*$/m).filter((_, i) => i % 2 === 1);
  for (const b of blocks) {
    let depth = 0;
    for (const rawLine of b.split('\n')) {
      const l = rawLine.trim();
      if (l === '' || l.startsWith('#')) continue;
      if (depth >= 1 && l !== '}' && !l.startsWith('}')) {
        const w = l.split(/\s+/)[0]!;
        if (depth === 1 && /^[a-z][a-z0-9_-]*$/.test(w)) names.add(w);
      }
      depth += (l.match(/\{/g) ?? []).length - (l.match(/\}/g) ?? []).length;
    }
  }
  return [...names];
}
