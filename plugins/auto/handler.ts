/**
 * The auto handler (CoreDNS 1.15.0 plugin/auto/auto.go): a name outside the plugin's zones goes to
 * the next plugin; inside them, the longest loaded zone answers exactly as *file* would
 * (src/zone/answer.ts), and a name in no loaded zone is REFUSED (or passed on when a plugin follows).
 */
import { Qtype, Rcode } from '../../src/dns/constants.js';
import { matchZone } from '../../src/dns/name.js';
import { nextOrFailure, type Handler, type SelfLookup } from '../../src/plugin.js';
import type { Query } from '../../src/query.js';
import { lookupZone, writeZoneAnswer } from '../../src/zone/answer.js';
import type { AutoConfig } from './setup.js';
import type { AutoZones } from './walk.js';

export class AutoHandler implements Handler {
  readonly name = 'auto';

  constructor(
    private readonly cfg: AutoConfig,
    private readonly zones: AutoZones,
    private readonly next: Handler | null,
    private readonly selfLookup: SelfLookup,
  ) {}

  serve(q: Query): number | Promise<number> {
    // Precheck with the origins: may this plugin look here at all?
    if (matchZone(this.cfg.origins, q.lname) === undefined) return nextOrFailure(this.name, this.next, q);
    const zone = matchZone(this.zones.names, q.lname);
    if (zone === undefined) {
      if (this.next === null) return Rcode.REFUSED;
      return nextOrFailure(this.name, this.next, q);
    }
    const z = this.zones.z.get(zone);
    if (z === undefined) return Rcode.SERVFAIL;
    // Without *transfer* in the block these reach here: no transfer allowed.
    if (q.qtype === Qtype.AXFR || q.qtype === Qtype.IXFR) return Rcode.REFUSED;
    return this.answer(q, z.data);
  }

  private async answer(q: Query, data: Parameters<typeof lookupZone>[1]): Promise<number> {
    const r = await lookupZone(q, data, this.selfLookup, this.name);
    if (typeof r === 'number') return r;
    return writeZoneAnswer(q, r, this.name);
  }
}
