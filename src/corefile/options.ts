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

/** A parsed argument value: numbers for int/duration (milliseconds), strings otherwise. */
export type Value = string | number;

/** How one argument is checked and converted. `check` adds a plugin-specific rule (returns an error text or null). */
export type ArgType =
  | { readonly kind: 'int'; readonly min?: number; readonly max?: number; readonly range?: (v: number) => string; readonly meta: string }
  | { readonly kind: 'duration'; readonly min?: number; readonly max?: number; readonly range?: (ms: number) => string; readonly meta: string }
  | { readonly kind: 'enum'; readonly values: readonly string[]; readonly meta: string }
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
}

export interface OptionDecl extends ArgsDecl {
  /** The block keyword. */
  readonly name: string;
  /**
   * A second occurrence in the same block: `last` keeps the last one (most CoreDNS plugins simply
   * overwrite), `all` keeps every one in order, `error` rejects it with `option 'x' already set`.
   */
  readonly repeat: 'last' | 'all' | 'error';
  /** One line for docs (the README text is the reference; this is for `-validate` hints). */
  readonly summary?: string;
}

export interface DirectiveDecl {
  readonly name: string;
  /** The arguments on the directive line. */
  readonly args: ArgsDecl;
  /** Block options, in README order. Empty: the directive takes no block. */
  readonly options: readonly OptionDecl[];
}

// ---- Declaration helpers ---------------------------------------------------------------------

export function int(o: { min?: number; max?: number; range?: (v: number) => string; meta?: string } = {}): ArgType {
  return { kind: 'int', meta: o.meta ?? 'NUMBER', ...o };
}
export function duration(o: { min?: number; max?: number; range?: (ms: number) => string; meta?: string } = {}): ArgType {
  return { kind: 'duration', meta: o.meta ?? 'DURATION', ...o };
}
export function oneOf(values: readonly string[], meta = values.join('|')): ArgType {
  return { kind: 'enum', values, meta };
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

export function directive(name: string, o: { args?: ArgsDecl; options?: readonly OptionDecl[] } = {}): DirectiveDecl {
  return { name, args: o.args ?? {}, options: o.options ?? [] };
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
  ) {}

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
  return /^[+-]?\d+$/.test(v) ? `strconv.Atoi: parsing ${JSON.stringify(v)}: value out of range` : `strconv.Atoi: parsing ${JSON.stringify(v)}: invalid syntax`;
}

/** Convert one argument; returns the value or throws the error text. */
export function convertArg(t: ArgType, v: string): Value[] {
  switch (t.kind) {
    case 'int': {
      if (!/^[+-]?\d+$/.test(v)) throw new Error(atoiError(v));
      const n = Number(v);
      if (!Number.isSafeInteger(n)) throw new Error(atoiError(v));
      if ((t.min !== undefined && n < t.min) || (t.max !== undefined && n > t.max)) {
        throw new Error(t.range ? t.range(n) : `${t.meta.toLowerCase()} must be between ${t.min ?? '-inf'} and ${t.max ?? 'inf'}: ${n}`);
      }
      return [n];
    }
    case 'duration': {
      let ms: number;
      try {
        ms = parseGoDuration(v);
      } catch (e) {
        throw new Error(e instanceof DurationError ? e.message : String(e));
      }
      if ((t.min !== undefined && ms < t.min) || (t.max !== undefined && ms > t.max)) {
        throw new Error(t.range ? t.range(ms) : `${t.meta.toLowerCase()} out of range: ${v}`);
      }
      return [ms];
    }
    case 'enum':
      if (!t.values.includes(v)) throw new Error(`unknown value '${v}', expected ${t.values.map((x) => `'${x}'`).join(', ')}`);
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
      if (!/^(\[[^\]]+\]|[^:\s]+):\d{1,5}$/.test(v) && isIP(v) === 0 && !/^[^:\s]+$/.test(v)) throw new Error(`invalid address: ${v}`);
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
    // Too many: the last one allowed, or for a directive without arguments the first extra one (CoreDNS's NextArg + ArgErr).
    const at = argTokens.length > max ? argTokens[Math.max(max - 1, 0)] ?? keyword : argTokens[argTokens.length - 1] ?? keyword;
    errors.push(new ConfigError(`Wrong argument count or unexpected line ending after '${at.text}'`, at.file, at.line, d.plugin || undefined));
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
  const byName = new Map(decl.options.map((o) => [o.name, o]));
  while (d.nextBlock()) {
    const tok = d.token()!;
    const o = byName.get(tok.text);
    if (!o) {
      errors.push(new ConfigError(`unknown property '${tok.text}'`, tok.file, tok.line, d.plugin || undefined));
      d.skipLine();
      continue;
    }
    if (o.repeat === 'error' && options.some((x) => x.name === o.name)) {
      errors.push(new ConfigError(`option '${o.name}' already set`, tok.file, tok.line, d.plugin || undefined));
      d.remainingArgs();
      continue;
    }
    options.push(parseArgs(d, o, o.name, tok, errors));
  }
  if (errors.length === 1) throw errors[0]!;
  if (errors.length > 1) throw new ConfigErrorList(errors);
  return new ParsedOccurrence(line, options);
}

/** Parse every occurrence of the directive in `d` (for plugins whose occurrences accumulate). */
export function parseOccurrences(d: Dispenser, decl: DirectiveDecl): ParsedOccurrence[] {
  const out: ParsedOccurrence[] = [];
  while (d.next()) out.push(parseOccurrence(d, decl));
  return out;
}

/**
 * The block option names a README's Syntax section documents: the first word of each line inside
 * the `{ … }` of its `~~~ txt` code blocks (test/docs/readme-options.test.ts compares them with
 * the declaration).
 */
export function readmeOptionNames(readme: string): string[] {
  const syntax = /## Syntax\n([\s\S]*?)(\n## |$)/.exec(readme)?.[1] ?? '';
  const names = new Set<string>();
  const blocks = syntax.split(/^~~~.*$/m).filter((_, i) => i % 2 === 1);
  for (const b of blocks) {
    let depth = 0;
    for (const rawLine of b.split('\n')) {
      const l = rawLine.trim();
      if (l === '' || l.startsWith('#')) continue;
      if (depth >= 1 && l !== '}' && !l.startsWith('}')) {
        const w = l.split(/\s+/)[0]!;
        if (depth === 1 && /^[a-z][a-z0-9_]*$/.test(w)) names.add(w);
      }
      depth += (l.match(/\{/g) ?? []).length - (l.match(/\}/g) ?? []).length;
    }
  }
  return [...names];
}
