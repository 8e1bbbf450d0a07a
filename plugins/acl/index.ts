/**
 * acl: allows, blocks, filters or drops queries by query type and client network (docs/plugins.md,
 * acl). Each `acl` occurrence is a rule for its zones; within a rule the first policy that matches
 * the query decides, and an `allow` ends the checking. Blocked queries get REFUSED with extended
 * error 15 (Blocked), filtered ones an empty NOERROR with extended error 17 (Filtered), dropped ones
 * no reply at all, as CoreDNS 1.15.0 answers them.
 */
import { isIPv4 } from 'node:net';
import { Rcode } from '../../src/dns/constants.js';
import { replyTo, type Message } from '../../src/dns/message.js';
import { matchZone } from '../../src/dns/name.js';
import { nextOrFailure, type Handler, type PluginDef } from '../../src/plugin.js';
import type { Query } from '../../src/query.js';
import * as metrics from './metrics.js';
import { ACL_OPTIONS, parseAcl, type Action, type Policy, type Rule } from './setup.js';

/** Extended DNS Error option code and the two info codes acl uses (RFC 8914). */
const EDE_CODE = 15;
const EDE_BLOCKED = 15;
const EDE_FILTERED = 17;

/** The client address without a zone index, an IPv4-mapped IPv6 address as IPv4 (Go's To4). */
function clientAddress(addr: string): string {
  const pct = addr.indexOf('%');
  if (pct >= 0) addr = addr.slice(0, pct);
  if (addr.length > 7 && addr.slice(0, 7).toLowerCase() === '::ffff:' && isIPv4(addr.slice(7))) return addr.slice(7);
  return addr;
}

function matches(p: Policy, qtype: number, ip: string, v4: boolean): boolean {
  if (p.qtypes !== null && !p.qtypes.has(qtype)) return false;
  if (p.anyNet) return true;
  return v4 ? p.v4 !== null && p.v4.check(ip, 'ipv4') : p.v6 !== null && p.v6.check(ip, 'ipv6');
}

/** The action of the first matching policy, or null. */
export function decide(policies: readonly Policy[], qtype: number, remoteAddress: string): Action | null {
  let ip: string | null = null;
  let v4 = false;
  for (const p of policies) {
    if (p.qtypes !== null && !p.qtypes.has(qtype)) continue;
    if (ip === null) {
      ip = clientAddress(remoteAddress);
      v4 = isIPv4(ip);
    }
    if (matches(p, qtype, ip, v4)) return p.action;
  }
  return null;
}

/** The reply CoreDNS's acl writes: the query's header and question, an OPT of 4096 with DO and the EDE. */
function edeReply(q: Query, rcode: number, info: number): Message {
  const m = replyTo(q.request, rcode);
  const data = Buffer.alloc(2);
  data.writeUInt16BE(info, 0);
  m.additionals.push({
    type: 'OPT',
    name: '.',
    udpPayloadSize: 4096,
    flags: 0x8000,
    options: [{ code: EDE_CODE, data }],
  } as unknown as Message['additionals'][number]);
  return m;
}

export class AclHandler implements Handler {
  readonly name = 'acl';
  /** The allowed counter of the last server label (one listener per handler in practice). */
  private allowedServer = '';
  private allowedCell: { inc(): void } | null = null;
  constructor(
    private readonly rules: readonly Rule[],
    private readonly next: Handler | null,
    /** The block's view name, the `view` label ('' without a view). */
    private readonly view = '',
  ) {}

  serve(q: Query): number | Promise<number> {
    const server = q.transport.server;
    rules: for (const rule of this.rules) {
      const zone = matchZone(rule.zones, q.lname);
      if (zone === undefined) continue;
      switch (decide(rule.policies, q.qtype, q.transport.remoteAddress)) {
        case 'drop':
          metrics.dropped.labels(server, zone, this.view).inc();
          q.dropped = true;
          return Rcode.NOERROR;
        case 'block':
          q.write(edeReply(q, Rcode.REFUSED, EDE_BLOCKED), this.name);
          metrics.blocked.labels(server, zone, this.view).inc();
          return Rcode.NOERROR;
        case 'filter':
          q.write(edeReply(q, Rcode.NOERROR, EDE_FILTERED), this.name);
          metrics.filtered.labels(server, zone, this.view).inc();
          return Rcode.NOERROR;
        case 'allow':
          break rules;
        case null:
          break;
      }
    }
    if (this.allowedCell === null || this.allowedServer !== server) {
      this.allowedCell = metrics.allowed.labels(server, this.view);
      this.allowedServer = server;
    }
    this.allowedCell.inc();
    return nextOrFailure(this.name, this.next, q);
  }
}

export const acl: PluginDef = {
  name: 'acl',
  repeat: 'all',
  options: ACL_OPTIONS,
  setup(d, ctx) {
    const rules = parseAcl(d, ctx.block.zones);
    return (next, block) => new AclHandler(rules, next, block.view ?? '');
  },
};
