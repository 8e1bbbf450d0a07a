/**
 * nsid: puts a Name Server Identifier (RFC 5001) in the reply's OPT when the query asked for one
 * with an (empty) NSID option (docs/plugins.md, nsid). The identifier defaults to the host name.
 * The option travels on the reply (`Reply.ednsOptions`); the server merges it into the OPT.
 */
import { hostname } from 'node:os';
import { directive, parseOccurrence, str } from '../../src/corefile/options.js';
import { nextOrFailure, type Handler, type PluginDef } from '../../src/plugin.js';
import type { Query } from '../../src/query.js';

export const NSID_OPTIONS = directive('nsid', { args: { rest: str('DATA'), min: 0 } });

/** EDNS0 option code of NSID. */
export const NSID_CODE = 3;

/** Does the OPT RDATA `options` hold an option with `code`? */
export function hasOption(options: Buffer, code: number): boolean {
  let off = 0;
  while (off + 4 <= options.length) {
    if (options.readUInt16BE(off) === code) return true;
    off += 4 + options.readUInt16BE(off + 2);
  }
  return false;
}

export class NsidHandler implements Handler {
  readonly name = 'nsid';
  private readonly data: Buffer;
  constructor(
    data: string,
    private readonly next: Handler | null,
  ) {
    this.data = Buffer.from(data, 'utf8');
  }

  serve(q: Query): number | Promise<number> {
    const edns = q.req.edns;
    if (edns === null || edns.options.length === 0 || !hasOption(edns.options, NSID_CODE))
      return nextOrFailure(this.name, this.next, q);
    const r = nextOrFailure(this.name, this.next, q);
    return typeof r === 'number' ? this.after(q, r) : r.then((rc) => this.after(q, rc));
  }

  private after(q: Query, rc: number): number {
    const reply = q.reply;
    if (reply !== null)
      reply.ednsOptions = [
        ...(reply.ednsOptions ?? []).filter((o) => o.code !== NSID_CODE),
        { code: NSID_CODE, data: this.data },
      ];
    return rc;
  }
}

export const nsid: PluginDef = {
  name: 'nsid',
  repeat: 'error',
  options: NSID_OPTIONS,
  setup(d) {
    d.next();
    const occ = parseOccurrence(d, NSID_OPTIONS);
    const data = occ.directive.raw.length > 0 ? occ.directive.raw.join(' ') : hostname() || 'localhost';
    return (next) => new NsidHandler(data, next);
  },
};
