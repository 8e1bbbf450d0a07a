/** Small address predicates and forms shared by plugins and the server. */
import { isIPv4 } from 'node:net';

/** A loopback address: 127.0.0.0/8, ::1, or 127/8 as IPv4-mapped IPv6 (`::ffff:127.0.0.1`). */
export function isLoopback(ip: string): boolean {
  return ip.startsWith('127.') || ip === '::1' || /^::ffff:127\./i.test(ip);
}

/** An IPv4 address as a dual-stack socket reports it (`::ffff:a.b.c.d`) in its IPv4 form. */
export function unmapV4(addr: string): string {
  return addr.startsWith('::ffff:') && isIPv4(addr.slice(7)) ? addr.slice(7) : addr;
}
