/**
 * any: answers every ANY query with one HINFO record, as RFC 8482 §4.2 allows (docs/plugins.md,
 * any); every other query goes on down the chain untouched.
 */
import { Qtype } from '../../src/dns/constants.js';
import { replyTo } from '../../src/dns/message.js';
import { directive, parseOccurrence } from '../../src/corefile/options.js';
import { nextOrFailure, type Handler, type PluginDef } from '../../src/plugin.js';
import type { Query } from '../../src/query.js';
import { toPacketName } from '../../src/dns/name.js';

export const ANY_OPTIONS = directive('any');

/** TTL of the HINFO record (the RFC's number, as CoreDNS uses). */
const HINFO_TTL = 8482;

export class AnyHandler implements Handler {
  readonly name = 'any';
  constructor(private readonly next: Handler | null) {}

  serve(q: Query): number | Promise<number> {
    if (q.qtype !== Qtype.ANY) return nextOrFailure(this.name, this.next, q);
    const m = replyTo(q.request);
    m.answers.push({
      name: toPacketName(q.name),
      type: 'HINFO',
      class: 'IN',
      ttl: HINFO_TTL,
      data: { cpu: 'ANY obsoleted', os: 'See RFC 8482' },
    });
    q.write(m, this.name);
    return 0;
  }
}

export const any: PluginDef = {
  name: 'any',
  repeat: 'first',
  options: ANY_OPTIONS,
  setup(d) {
    d.next();
    parseOccurrence(d, ANY_OPTIONS);
    return (next) => new AnyHandler(next);
  },
};
