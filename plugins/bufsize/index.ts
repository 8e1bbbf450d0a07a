/**
 * bufsize: lowers the EDNS UDP buffer size a query advertises to SIZE (default 1232, the DNS flag
 * day 2020 value) before the rest of the chain sees it (docs/plugins.md, bufsize). Forwarded
 * queries carry the lower size, and the reply is fitted to it.
 */
import type { Dispenser } from '../../src/corefile/dispenser.js';
import { directive, parseOccurrence, str } from '../../src/corefile/options.js';
import { ConfigError } from '../../src/corefile/types.js';
import { nextOrFailure, type Handler, type PluginDef } from '../../src/plugin.js';
import type { Query } from '../../src/query.js';

/** RFC 6891's bounds, as CoreDNS checks them. */
export const MIN_BUFSIZE = 512;
export const MAX_BUFSIZE = 4096;
export const DEFAULT_BUFSIZE = 1232;

/** Arguments are checked in setup, where CoreDNS's single wording for all of them is kept. */
export const BUFSIZE_OPTIONS = directive('bufsize', { args: { rest: str('SIZE'), min: 0 } });

export class BufsizeHandler implements Handler {
  readonly name = 'bufsize';
  constructor(
    private readonly size: number,
    private readonly next: Handler | null,
  ) {}

  serve(q: Query): number | Promise<number> {
    const edns = q.req.edns;
    if (edns !== null && edns.udpSize > this.size) q.clampUdpSize(this.size);
    return nextOrFailure(this.name, this.next, q);
  }
}

/**
 * The size of the first occurrence (CoreDNS reads only the first `bufsize` of a block). Every bad
 * argument — too many, not a number, outside 512..4096 — is CoreDNS's ArgErr after the last one.
 */
export function parseBufsize(d: Dispenser): number {
  d.next();
  const occ = parseOccurrence(d, BUFSIZE_OPTIONS);
  const raw = occ.directive.raw;
  if (raw.length === 0) return DEFAULT_BUFSIZE;
  const n = /^[+-]?\d+$/.test(raw[0]!) ? Number(raw[0]) : NaN;
  if (raw.length > 1 || !(n >= MIN_BUFSIZE && n <= MAX_BUFSIZE)) {
    const tok = occ.directive.token;
    throw new ConfigError(
      `Wrong argument count or unexpected line ending after '${raw[raw.length - 1]!}'`,
      tok.file,
      tok.line,
      'bufsize',
    );
  }
  return n;
}

export const bufsize: PluginDef = {
  name: 'bufsize',
  repeat: 'first',
  options: BUFSIZE_OPTIONS,
  setup(d) {
    const size = parseBufsize(d);
    return (next) => new BufsizeHandler(size, next);
  },
};
