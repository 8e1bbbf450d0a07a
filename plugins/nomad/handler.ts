/**
 * The nomad handler (README.md): `SERVICE.NAMESPACE.<zone>` looked up in Nomad's service catalogue
 * for every query (CoreDNS 1.15.0 keeps nothing; put *cache* in front), answered as its ServeDNS:
 * A/AAAA per registration of that family, SRV (priority 10, weight 10) with the address as
 * additional record, NXDOMAIN with a made-up SOA in the answer section when there is none, a type
 * it does not serve or an address it cannot read, and an empty NOERROR when Nomad cannot be asked.
 */
import type { Answer } from 'dns-packet';
import { isIPv4, isIPv6 } from 'node:net';
import { Qtype, Rcode } from '../../src/dns/constants.js';
import { replyTo } from '../../src/dns/message.js';
import { fqdn, toPacketName } from '../../src/dns/name.js';
import type { Logger } from '../../src/log.js';
import { nextOrFailure, type Handler } from '../../src/plugin.js';
import type { Query } from '../../src/query.js';
import type { NomadClient } from './client.js';
import { failedRequests, successRequests } from './metrics.js';
import type { NomadConfig } from './setup.js';

/** The agent to ask (CoreDNS's getClient on a copy of the plugin: `current` is the start-up one). */
export interface ClientPicker {
  /** Filled by the start-up hook. */
  readonly clients: NomadClient[];
  /** Index of the first agent that answered at start, -1 when none did. */
  current: number;
}

/** A v4 or v4-mapped address as Go's `To4()` sees it, else null. */
function to4(addr: string): string | null {
  if (isIPv4(addr)) return addr;
  const m = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(addr);
  return m && isIPv4(m[1]!) ? m[1]! : null;
}

export class NomadHandler implements Handler {
  readonly name = 'nomad';
  private readonly zoneLabels: number;
  private readonly mbox: string;

  constructor(
    private readonly cfg: NomadConfig,
    private readonly picker: ClientPicker,
    private readonly next: Handler | null,
    private readonly log: Logger,
  ) {
    const z = fqdn(cfg.zone);
    this.zoneLabels = z === '.' ? 0 : z.split('.').length - 1;
    this.mbox = toPacketName(fqdn(`hostmaster.${cfg.zone}`));
  }

  serve(q: Query): number | Promise<number> {
    // dnsutil.TrimZone: drop the zone's number of labels from the right (it does not compare them).
    const labels = q.lname === '.' ? [] : q.lname.slice(0, -1).split('.');
    if (labels.length <= this.zoneLabels) return nextOrFailure(this.name, this.next, q);
    const base = labels.slice(0, labels.length - this.zoneLabels);
    if (base.length < 2) return nextOrFailure(this.name, this.next, q);
    return this.answer(q, base[0]!, base[1]!);
  }

  /** getClient: the only agent, or the first from the start-up one that answers /v1/agent/self. */
  private async client(): Promise<NomadClient | 'panic' | null> {
    const { clients, current } = this.picker;
    if (clients.length === 0) return null;
    if (clients.length === 1) return clients[0]!;
    for (let i = 0; i < clients.length; i++) {
      const idx = (current + i) % clients.length; // Go's %: -1 with no start-up agent, and Go panics
      if (idx < 0) return 'panic';
      try {
        await clients[idx]!.self();
        return clients[idx]!;
      } catch {
        // the next agent
      }
    }
    return null;
  }

  private async answer(q: Query, service: string, namespace: string): Promise<number> {
    const server = q.transport.server;
    const ttl = this.cfg.ttl;
    const qname = toPacketName(q.name);
    const original = toPacketName(q.lname);
    const msg = replyTo(q.request, Rcode.NOERROR, true);
    const nxdomain = (err: Error | null): number => {
      msg.flags = ((msg.flags ?? 0) & ~0xf) | Rcode.NXDOMAIN;
      msg.answers!.push({
        name: original,
        type: 'SOA',
        class: 'IN',
        ttl,
        data: {
          mname: `ns1.${original}`,
          rname: this.mbox,
          serial: 0,
          refresh: 3600,
          retry: 600,
          expire: 86400,
          minimum: 30,
        },
      } as Answer);
      q.write(msg, this.name);
      failedRequests.labels(server, namespace).inc();
      return err ? q.fail(err, Rcode.NXDOMAIN) : Rcode.NXDOMAIN;
    };

    this.log.debug(`Looking up record for svc: ${service} namespace: ${namespace}`);
    const c = await this.client();
    if (c === 'panic') return Rcode.SERVFAIL;
    let regs;
    try {
      if (c === null) throw new Error('no Nomad client available');
      regs = await c.service(service, namespace, this.cfg.filter);
    } catch (e) {
      // Logged, and an empty NOERROR written (CoreDNS then also returns SERVFAIL, which its server
      // answers with a second reply the client never reads).
      this.log.warning((e as Error).message);
      q.write(msg, this.name);
      failedRequests.labels(server, namespace).inc();
      return Rcode.NOERROR;
    }
    if (regs.length === 0) return nxdomain(null);
    const answers = msg.answers!;
    const extras = msg.additionals!;
    for (const s of regs) {
      const addr = typeof s.Address === 'string' ? s.Address : '';
      const v4 = to4(addr);
      if (v4 === null && !isIPv6(addr)) return nxdomain(new Error('error parsing IP address'));
      switch (q.qtype) {
        case Qtype.A:
          if (v4 !== null) answers.push({ name: qname, type: 'A', class: 'IN', ttl, data: v4 });
          break;
        case Qtype.AAAA:
          if (v4 === null) answers.push({ name: qname, type: 'AAAA', class: 'IN', ttl, data: addr });
          break;
        case Qtype.SRV:
          answers.push({
            name: qname,
            type: 'SRV',
            class: 'IN',
            ttl,
            data: { priority: 10, weight: 10, port: s.Port & 0xffff, target: original },
          } as Answer);
          extras.push(
            v4 !== null
              ? { name: original, type: 'A', class: 'IN', ttl, data: v4 }
              : { name: original, type: 'AAAA', class: 'IN', ttl, data: addr },
          );
          break;
        default:
          return nxdomain(new Error('query type not implemented'));
      }
    }
    q.write(msg, this.name);
    successRequests.labels(server, namespace).inc();
    return Rcode.NOERROR;
  }
}
