/**
 * A lookup "through the whole server" (CoreDNS's `upstream.Lookup`, which re-enters `ServeDNS`):
 * the derived query is sent to the server's own DNS listener, so it is routed to the matching
 * server block and passes its plugins (cache, kubernetes, hosts, forward …). Used by kubernetes
 * (ExternalName targets outside the zone, docs/records.md §2.6, and k8s_external's CNAMEs to
 * load-balancer hostnames) and template (CNAME targets). A name already being looked up along the
 * same chain of nested lookups is not looked up again (guards against CNAME and ExternalName
 * cycles, also across zones and plugins); lookups of the same name for different clients run
 * independently. It works the same in a query thread (docs/multicore.md): the lookup goes to the
 * shared listener port and whichever thread receives it serves it.
 *
 * The chains in flight are process-wide (a lookup may nest through any block's plugins): one
 * `SelfLookups` per process, `selfLookups(ctx)` (kept in `ctx.shared`, not in module state).
 */
import * as dgram from 'node:dgram';
import { isIP } from 'node:net';
import { decode, type Message } from '../dns/message.js';
import { randomId } from '../dns/ids.js';
import type { SetupContext } from '../plugin.js';
import type { Query } from '../query.js';

export interface SelfTarget {
  /** Address of a listener of this server (loopback when it listens on all interfaces). */
  host: () => string;
  port: () => number;
  timeoutMs?: number;
}

export class SelfLookups {
  /** Local port of each in-flight lookup socket → the `qtype lname` keys looked up along its chain. */
  private readonly chains = new Map<number, ReadonlySet<string>>();

  /** Send `sub` (a derived query: same EDNS as the client's) to the server itself; null on failure. */
  lookup(sub: Query, t: SelfTarget): Promise<Message | null> {
    return selfLookup(this.chains, sub, t);
  }

  /** Self-lookups in flight (for tests). */
  get inFlight(): number {
    return this.chains.size;
  }
}

/** The process's `SelfLookups` (one for every plugin and block, so chains nest across them). */
export function selfLookups(ctx: SetupContext): SelfLookups {
  return ctx.shared('server:self-lookups', () => new SelfLookups());
}

/** Where the server block being set up answers: its first specific bind address, else loopback. */
export function blockTarget(ctx: SetupContext): SelfTarget {
  return {
    host: (): string => ctx.block.bindAddresses.find((x) => isIP(x) !== 0 && x !== '0.0.0.0' && x !== '::') ?? '127.0.0.1',
    port: (): number => ctx.block.port,
  };
}

async function selfLookup(chains: Map<number, ReadonlySet<string>>, sub: Query, t: SelfTarget): Promise<Message | null> {
  const key = `${sub.qtype} ${sub.lname}`;
  // A query that arrived from one of our own lookup sockets is nested in that lookup's chain.
  const from = sub.transport.remoteAddress;
  const parent = from.startsWith('127.') || from === '::1' || from === '::ffff:127.0.0.1' ? chains.get(sub.transport.remotePort) : undefined;
  if (parent?.has(key)) return null;
  const chain = new Set(parent ?? []);
  chain.add(key);
  let port = -1;
  try {
    const packet = Buffer.from(sub.raw);
    const id = randomId();
    packet.writeUInt16BE(id, 0);
    const host = t.host();
    const reply = await new Promise<Buffer | null>((resolve) => {
      const sock = dgram.createSocket(isIP(host) === 6 ? 'udp6' : 'udp4');
      const done = (b: Buffer | null): void => {
        clearTimeout(timer);
        sock.close();
        resolve(b);
      };
      const timer = setTimeout(() => done(null), t.timeoutMs ?? 5000);
      sock.on('message', (msg) => {
        if (msg.length >= 12 && msg.readUInt16BE(0) === id) done(msg);
      });
      sock.on('error', () => done(null));
      sock.bind(0, () => {
        port = sock.address().port;
        chains.set(port, chain);
        sock.send(packet, t.port(), host);
      });
    });
    // Any reply counts (CoreDNS keeps the CNAME whatever the RCODE); no reply is a failure.
    return reply ? decode(reply) : null;
  } catch {
    return null;
  } finally {
    if (port >= 0) chains.delete(port);
  }
}
