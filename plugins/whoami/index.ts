/**
 * whoami: answers every query with the client's address and port in the additional section
 * (docs/plugins.md, whoami). Terminal: never calls the next plugin.
 *
 * The reply is built straight into wire bytes: header, the question copied from the request
 * (client's letter case), then the A/AAAA and SRV records with their owner names written out in
 * full. CoreDNS's whoami does not compress (`dns.Msg.Compress` stays false), so its reply to
 * `version.bind. CH A` behind chaos is 94 bytes; pointers made ours 70 (issue #27, item 8).
 */
import { isIPv4 } from 'node:net';
import { Flag, Qtype } from '../../src/dns/constants.js';
import { ipv6ToBytes } from '../../src/dns/name.js';
import { directive, parseOccurrence } from '../../src/corefile/options.js';
import type { Handler, PluginDef } from '../../src/plugin.js';
import type { Query } from '../../src/query.js';

/** The client address; an IPv4-mapped IPv6 address (`::ffff:a.b.c.d`) counts as IPv4, as Go's To4 does. */
function clientAddress(addr: string): string {
  if (addr.length < 14 || addr.slice(0, 7).toLowerCase() !== '::ffff:') return addr;
  const tail = addr.slice(7);
  return isIPv4(tail) ? tail : addr;
}

function whoamiReply(q: Query): Buffer {
  const raw = q.raw;
  const qEnd = q.req.questionEnd;
  const remote = clientAddress(q.transport.remoteAddress);
  const isV4 = isIPv4(remote);
  const addrLen = isV4 ? 4 : 16;
  const proto = q.transport.proto === 'tcp' ? '_tcp' : '_udp';
  // The question name's wire bytes (uncompressed in a request), written again as each owner.
  const qnameStart = 12;
  const qnameEnd = qEnd - 4;
  const qnameLen = qnameEnd - qnameStart;
  // SRV owner: `_udp.<qname>` = one label + the question name (root: `_udp.`).
  const srvOwnerLen = 1 + proto.length + qnameLen;
  const size = qEnd + qnameLen + 10 + addrLen + srvOwnerLen + 10 + 7;
  const out = Buffer.allocUnsafe(size);
  raw.copy(out, 0, 0, qEnd);
  const reqFlags = raw.readUInt16BE(2);
  out.writeUInt16BE(Flag.QR | Flag.AA | (reqFlags & (0x7800 | Flag.RD | Flag.CD)), 2);
  out.writeUInt16BE(1, 4);
  out.writeUInt16BE(0, 6);
  out.writeUInt16BE(0, 8);
  out.writeUInt16BE(2, 10);
  let o = qEnd;
  // Address record.
  o += raw.copy(out, o, qnameStart, qnameEnd);
  out.writeUInt16BE(isV4 ? Qtype.A : Qtype.AAAA, o);
  out.writeUInt16BE(q.qclass, o + 2);
  out.writeUInt32BE(0, o + 4);
  out.writeUInt16BE(addrLen, o + 8);
  o += 10;
  if (isV4) {
    for (const part of remote.split('.')) out[o++] = Number(part);
  } else {
    const b = ipv6ToBytes(remote) ?? new Uint8Array(16);
    out.set(b, o);
    o += 16;
  }
  // SRV record `_udp.<qname> 0 IN SRV 0 0 <port> .`
  out[o++] = proto.length;
  o += out.write(proto, o, 'latin1');
  o += raw.copy(out, o, qnameStart, qnameEnd);
  out.writeUInt16BE(Qtype.SRV, o);
  out.writeUInt16BE(q.qclass, o + 2);
  out.writeUInt32BE(0, o + 4);
  out.writeUInt16BE(7, o + 8);
  o += 10;
  out.writeUInt16BE(0, o);
  out.writeUInt16BE(0, o + 2);
  out.writeUInt16BE(q.transport.remotePort, o + 4);
  out[o + 6] = 0;
  o += 7;
  return o === size ? out : out.subarray(0, o);
}

class WhoamiHandler implements Handler {
  readonly name = 'whoami';
  serve(q: Query): number {
    q.writeWire(whoamiReply(q), 'whoami');
    return 0;
  }
}

export const WHOAMI_OPTIONS = directive('whoami');

export const whoami: PluginDef = {
  name: 'whoami',
  repeat: 'first',
  options: WHOAMI_OPTIONS,
  setup(d) {
    d.next();
    parseOccurrence(d, WHOAMI_OPTIONS);
    return () => new WhoamiHandler();
  },
};
