/**
 * A lookup "through the whole server" (CoreDNS's `upstream.Lookup`, which re-enters `ServeDNS`):
 * the derived query is sent to the server's own DNS listener, so it is routed to the matching
 * server block and passes its plugins (cache, kubernetes, hosts, forward …). A name already being
 * looked up along the same chain of nested lookups is not looked up again (guards against CNAME
 * cycles); lookups for different clients run independently.
 *
 * The chain bookkeeping lives in a `SelfLookupChains` object the caller keeps per process
 * (`ctx.shared`), not in module state.
 */
import * as dgram from 'node:dgram';
import { isIP } from 'node:net';
import { decode, type Message } from '../dns/message.js';
import { randomId } from '../dns/ids.js';
import type { Query } from '../query.js';

/** Local port of each in-flight lookup socket → the `qtype lname` keys looked up along its chain. */
export type SelfLookupChains = Map<number, ReadonlySet<string>>;

export interface SelfTarget {
  /** Address of a listener of this server (loopback when it listens on all interfaces). */
  host: () => string;
  port: () => number;
  timeoutMs?: number;
}

/** Send `sub` (a derived query: same EDNS as the client's) to the server itself; null on failure. */
export async function selfLookup(sub: Query, t: SelfTarget, chains: SelfLookupChains): Promise<Message | null> {
  const key = `${sub.qtype} ${sub.lname}`;
  const from = sub.transport.remoteAddress;
  const parent = from.startsWith('127.') || from === '::1' ? chains.get(sub.transport.remotePort) : undefined;
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
    return reply ? decode(reply) : null;
  } catch {
    return null;
  } finally {
    if (port >= 0) chains.delete(port);
  }
}
