/**
 * header: sets or clears the AA, RA and RD flags of queries (before the rest of the chain sees
 * them) and of replies (after it wrote one), in the order the rules are written
 * (docs/plugins.md, header).
 */
import type { Dispenser } from '../../src/corefile/dispenser.js';
import { directive, option, parseOccurrence, str, type ParsedOccurrence } from '../../src/corefile/options.js';
import { ConfigError, ConfigErrorList } from '../../src/corefile/types.js';
import { Flag } from '../../src/dns/constants.js';
import { nextOrFailure, type Handler, type PluginDef } from '../../src/plugin.js';
import type { Query } from '../../src/query.js';

export const HEADER_OPTIONS = directive('header', {
  // CoreDNS ignores words after `header`; so does clusterdns (README, Bugs).
  args: { rest: str('IGNORED'), min: 0 },
  options: [
    option('query', { rest: str('ACTION FLAGS'), min: 0, repeat: 'all', summary: 'set|clear flags of the query' }),
    option('response', { rest: str('ACTION FLAGS'), min: 0, repeat: 'all', summary: 'set|clear flags of the reply' }),
  ],
});

const FLAGS: Readonly<Record<string, number>> = { aa: Flag.AA, ra: Flag.RA, rd: Flag.RD };

/** The rules of one selector folded into two masks: bits to set, then bits to clear (last rule wins per flag). */
export interface FlagRules {
  readonly set: number;
  readonly clear: number;
}

export function applyRules(flags: number, r: FlagRules): number {
  return (flags | r.set) & ~r.clear;
}

function ruleError(message: string): Error {
  return new Error(`setting up rule: ${message}`);
}

/** One `SELECTOR ACTION FLAGS...` line, in CoreDNS's wording; folds it into `acc`. */
function addRule(acc: { set: number; clear: number }, args: readonly string[]): void {
  const action = args[0] ?? '';
  if (action === '') throw ruleError('no flag action provided');
  if (args.length < 2) throw ruleError('invalid length for flags, at least one should be provided');
  const a = action.toLowerCase();
  if (a !== 'set' && a !== 'clear') throw ruleError(`unknown flag action=${a}, should be set or clear`);
  for (const f of args.slice(1)) {
    const bit = FLAGS[f.toLowerCase()];
    if (bit === undefined) throw ruleError(`unknown/unsupported flag=${f.toLowerCase()}`);
    if (a === 'set') {
      acc.set |= bit;
      acc.clear &= ~bit;
    } else {
      acc.clear |= bit;
      acc.set &= ~bit;
    }
  }
}

export interface HeaderConfig {
  readonly query: FlagRules;
  readonly response: FlagRules;
}

/** Parse the first occurrence that has rules (CoreDNS ignores the others). */
export function parseHeader(d: Dispenser): HeaderConfig {
  let last: ParsedOccurrence | null = null;
  while (d.next()) {
    let occ: ParsedOccurrence;
    try {
      occ = parseOccurrence(d, HEADER_OPTIONS);
    } catch (e) {
      throw selectorErrors(e);
    }
    last = occ;
    if (occ.options.length === 0) continue;
    const query = { set: 0, clear: 0 };
    const response = { set: 0, clear: 0 };
    for (const o of occ.options) {
      try {
        addRule(o.name === 'query' ? query : response, o.raw);
      } catch (e) {
        throw new ConfigError((e as Error).message, o.token.file, o.token.line, 'header');
      }
    }
    return { query, response };
  }
  // No rules at all: CoreDNS's ArgErr after the last token read (`header` or the block's `}`).
  const tok = last?.directive.token;
  const after = d.val();
  throw new ConfigError(
    `Wrong argument count or unexpected line ending after '${after}'`,
    d.token()?.file ?? tok?.file,
    d.token()?.line ?? tok?.line,
    'header',
  );
}

/** An unknown block keyword is CoreDNS's "invalid selector". */
function selectorErrors(e: unknown): unknown {
  const fix = (x: ConfigError): ConfigError => {
    const m = /^unknown property '(.*)'$/.exec(x.message);
    if (!m) return x;
    const sel = m[1]!.toLowerCase();
    // CoreDNS accepts any letter case here; the declared options are matched as written.
    const hint = sel === 'query' || sel === 'response' ? ` (write '${sel}' in lower case)` : '';
    return new ConfigError(
      `setting up rule: invalid selector=${hint ? m[1]! : sel} should be query or response${hint}`,
      x.file,
      x.line,
      x.plugin,
    );
  };
  if (e instanceof ConfigErrorList) return new ConfigErrorList(e.errors.map(fix));
  if (e instanceof ConfigError) return fix(e);
  return e;
}

export class HeaderHandler implements Handler {
  readonly name = 'header';
  constructor(
    private readonly cfg: HeaderConfig,
    private readonly next: Handler | null,
  ) {}

  serve(q: Query): number | Promise<number> {
    const qr = this.cfg.query;
    if (qr.set !== 0 || qr.clear !== 0) {
      const flags = applyRules(q.req.flags, qr);
      if (flags !== q.req.flags) q.setRequestFlags(flags);
    }
    const r = nextOrFailure(this.name, this.next, q);
    return typeof r === 'number' ? this.after(q, r) : r.then((rc) => this.after(q, rc));
  }

  private after(q: Query, rc: number): number {
    const reply = q.reply;
    const rr = this.cfg.response;
    if (reply === null || (rr.set === 0 && rr.clear === 0)) return rc;
    if (reply.isWire) {
      const w = reply.wire();
      const flags = applyRules(w.readUInt16BE(2), rr);
      if (flags === w.readUInt16BE(2)) return rc;
      // A copy: the bytes belong to the plugin that wrote them.
      const out = Buffer.from(w);
      out.writeUInt16BE(flags, 2);
      q.writeWire(out, reply.plugin);
      q.reply!.ednsOptions = reply.ednsOptions;
      return rc;
    }
    const m = reply.message();
    m.flags = applyRules(m.flags ?? 0, rr) & 0x7fff;
    return rc;
  }
}

export const header: PluginDef = {
  name: 'header',
  repeat: 'all',
  options: HEADER_OPTIONS,
  setup(d) {
    const cfg = parseHeader(d);
    return (next) => new HeaderHandler(cfg, next);
  },
};
