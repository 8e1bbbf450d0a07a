/**
 * Zones whose records come from a cloud DNS API (route53, clouddns, azure; docs/plugins.md,
 * route53): each zone name has one or more hosted zones (a private and a public zone of the same
 * name), each an in-memory `ZoneData` answered as the file plugin answers (src/zone/zone.ts) and
 * replaced whole when a refresh fetched it again. Shared so the three plugins answer alike, as
 * CoreDNS 1.15.0's three copies of the same ServeDNS do.
 */
import type { Answer } from 'dns-packet';
import { Flag, Rcode } from '../dns/constants.js';
import { replyTo } from '../dns/message.js';
import { matchZone } from '../dns/name.js';
import { type Fallthrough, fallsThrough } from '../fallthrough.js';
import { nextOrFailure, type Handler, type SelfLookup } from '../plugin.js';
import type { Query } from '../query.js';
import { lookupZone } from '../zone/answer.js';
import { type LookupOut, Result, ZoneData } from '../zone/zone.js';

/** One hosted zone: what the API calls it (id, project:zone, resource group) and its current data. */
export interface HostedZone {
  readonly name: string;
  readonly id: string;
  /** Empty (no SOA: SERVFAIL) until the first fetch; then the last fetch that succeeded. */
  data: ZoneData;
}

/** The zone names of one plugin occurrence and their hosted zones, in Corefile order. */
export class HostedZones {
  /** Zone names (absolute, lower case) in order of first appearance: CoreDNS's `zoneNames`. */
  readonly names: string[] = [];
  readonly byName = new Map<string, HostedZone[]>();

  add(name: string, id: string): HostedZone {
    let list = this.byName.get(name);
    if (list === undefined) {
      list = [];
      this.byName.set(name, list);
      this.names.push(name);
    }
    const z: HostedZone = { name, id, data: new ZoneData(name) };
    list.push(z);
    return z;
  }

  all(): HostedZone[] {
    return [...this.byName.values()].flat();
  }

  /** Go's `%v` of the zone names, as the refresh error line prints them: `[example.org. example.com.]`. */
  namesText(): string {
    return `[${this.names.join(' ')}]`;
  }
}

/**
 * The handler of route53, clouddns and azure (their ServeDNS): the longest zone name that matches,
 * then its hosted zones in order until one has an answer or the name with another type (NODATA);
 * `fallthrough` when none had, NXDOMAIN with the last zone's SOA otherwise.
 */
export class HostedZonesHandler implements Handler {
  constructor(
    readonly name: string,
    private readonly zones: HostedZones,
    private readonly fallthrough: Fallthrough,
    private readonly next: Handler | null,
    private readonly selfLookup: SelfLookup,
  ) {}

  serve(q: Query): number | Promise<number> {
    const zone = matchZone(this.zones.names, q.lname);
    if (zone === undefined) return nextOrFailure(this.name, this.next, q);
    return this.answer(q, this.zones.byName.get(zone)!);
  }

  private async answer(q: Query, hosted: readonly HostedZone[]): Promise<number> {
    let r: LookupOut | null = null;
    for (const h of hosted) {
      const out = await lookupZone(q, h.data, this.selfLookup, this.name);
      if (typeof out === 'number') return out;
      r = out;
      if (out.answer.length !== 0 || out.result === Result.NoData) break;
    }
    const res = r!;
    if (res.answer.length === 0 && res.result !== Result.NoData && fallsThrough(this.fallthrough, q.lname)) {
      return nextOrFailure(this.name, this.next, q);
    }
    let rcode: number = Rcode.NOERROR;
    let aa = true;
    switch (res.result) {
      case Result.NameError:
        rcode = Rcode.NXDOMAIN;
        break;
      case Result.Delegation:
        aa = false;
        break;
      case Result.ServerFailure:
        // CoreDNS returns SERVFAIL without writing: the server writes the bare reply.
        return Rcode.SERVFAIL;
    }
    const msg = replyTo(q.request, rcode, aa);
    if (!aa) msg.flags = (msg.flags ?? 0) & ~Flag.AA;
    // Fresh record objects: the zone's records are shared by every reply, and plugins above may
    // change the reply they get.
    msg.answers = res.answer.map(fresh);
    msg.authorities = res.ns.map(fresh);
    msg.additionals = res.extra.map(fresh);
    q.write(msg, this.name);
    return rcode;
  }
}

function fresh(rr: Answer): Answer {
  const data = (rr as { data?: unknown }).data;
  if (data !== null && typeof data === 'object' && !Buffer.isBuffer(data)) {
    return { ...rr, data: Array.isArray(data) ? [...(data as unknown[])] : { ...(data as object) } } as Answer;
  }
  return { ...rr };
}
