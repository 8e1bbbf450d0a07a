/**
 * minimal: drops the authority and additional sections of positive answers (docs/plugins.md,
 * minimal). Denials, errors, delegations and replies of any other kind pass through as written.
 */
import { directive, parseOccurrence } from '../../src/corefile/options.js';
import { rcodeOf, type Message } from '../../src/dns/message.js';
import { nextOrFailure, type Handler, type PluginDef } from '../../src/plugin.js';
import type { Query } from '../../src/query.js';

export const MINIMAL_OPTIONS = directive('minimal');

/**
 * Is `m` what CoreDNS's response.Typify calls NoError: NOERROR with answers, or NOERROR with no
 * SOA and no NS in the authority section (an empty reply with only additional records counts).
 * The other kinds — NameError, NoData, Delegation, errors, Meta (AXFR/IXFR/NOTIFY), Update —
 * pass through as written.
 */
export function isPositiveAnswer(m: Message, opcode: number): boolean {
  if (opcode === 4 || opcode === 5) return false; // NOTIFY, UPDATE
  const qt = m.questions[0]?.type;
  if (qt === 'AXFR' || qt === 'IXFR') return false;
  if (rcodeOf(m) !== 0) return false;
  if (m.answers.length > 0) return true;
  return !m.authorities.some((r) => r.type === 'SOA' || r.type === 'NS');
}

export class MinimalHandler implements Handler {
  readonly name = 'minimal';
  constructor(private readonly next: Handler | null) {}

  serve(q: Query): number | Promise<number> {
    const r = nextOrFailure(this.name, this.next, q);
    return typeof r === 'number' ? this.after(q, r) : r.then((rc) => this.after(q, rc));
  }

  private after(q: Query, rc: number): number {
    const reply = q.reply;
    if (reply === null) return rc;
    // Cheap exits on the wire header: nothing to drop, or not a NOERROR answer with records.
    if (reply.isWire) {
      const w = reply.wire();
      if (w.readUInt16BE(8) === 0 && w.readUInt16BE(10) === 0) return 0;
      if ((w[3]! & 0xf) !== 0) return 0;
    }
    const peek = reply.peek();
    if (!isPositiveAnswer(peek, q.req.opcode)) return 0;
    if (peek.authorities.length === 0 && peek.additionals.length === 0) return 0;
    const m = reply.message();
    m.authorities = [];
    // The OPT goes too, as in CoreDNS: the server rebuilds it from the query's.
    m.additionals = [];
    return 0;
  }
}

export const minimal: PluginDef = {
  name: 'minimal',
  repeat: 'first',
  options: MINIMAL_OPTIONS,
  setup(d) {
    d.next();
    parseOccurrence(d, MINIMAL_OPTIONS);
    return (next) => new MinimalHandler(next);
  },
};
