/**
 * PROXY protocol headers for tests (haproxy's proxy-protocol.txt): v1 lines and v2 binary headers
 * written the way a load balancer sends them, to put in front of a DNS message.
 */
import { isIPv4 } from 'node:net';
import { ipv6ToBytes } from '../../src/dns/name.js';

const SIG_V2 = Buffer.from([0x0d, 0x0a, 0x0d, 0x0a, 0x00, 0x0d, 0x0a, 0x51, 0x55, 0x49, 0x54, 0x0a]);

/** `PROXY TCP4 src dst sport dport\r\n` (TCP6 for IPv6 addresses). */
export function proxyV1(src: string, srcPort: number, dst: string, dstPort: number): Buffer {
  const proto = isIPv4(src) ? 'TCP4' : 'TCP6';
  return Buffer.from(`PROXY ${proto} ${src} ${dst} ${srcPort} ${dstPort}\r\n`, 'latin1');
}

export interface V2Options {
  /** 'udp' (default) or 'tcp'. */
  readonly transport?: 'udp' | 'tcp';
  /** LOCAL instead of PROXY. */
  readonly local?: boolean;
  /** TLVs: [type, value]. */
  readonly tlvs?: readonly (readonly [number, Buffer])[];
}

/** A v2 header for `src`:`srcPort` → `dst`:`dstPort` (both of one family). */
export function proxyV2(src: string, srcPort: number, dst: string, dstPort: number, o: V2Options = {}): Buffer {
  const v4 = isIPv4(src);
  const addr = v4
    ? Buffer.concat([Buffer.from(src.split('.').map(Number)), Buffer.from(dst.split('.').map(Number))])
    : Buffer.concat([Buffer.from(ipv6ToBytes(src)!), Buffer.from(ipv6ToBytes(dst)!)]);
  const ports = Buffer.alloc(4);
  ports.writeUInt16BE(srcPort, 0);
  ports.writeUInt16BE(dstPort, 2);
  const tlvs = (o.tlvs ?? []).map(([t, v]) => {
    const h = Buffer.alloc(3);
    h[0] = t;
    h.writeUInt16BE(v.length, 1);
    return Buffer.concat([h, v]);
  });
  const body = Buffer.concat([addr, ports, ...tlvs]);
  const head = Buffer.alloc(16);
  SIG_V2.copy(head);
  head[12] = o.local ? 0x20 : 0x21;
  head[13] = (v4 ? 0x10 : 0x20) | (o.transport === 'tcp' ? 0x01 : 0x02);
  head.writeUInt16BE(body.length, 14);
  return Buffer.concat([head, body]);
}

/** A DNS message framed for TCP (two-byte length). */
export function tcpFrame(msg: Buffer): Buffer {
  const len = Buffer.alloc(2);
  len.writeUInt16BE(msg.length);
  return Buffer.concat([len, msg]);
}
