/** Small address predicates shared by plugins. */

/** A loopback address: 127.0.0.0/8, ::1, or 127/8 as IPv4-mapped IPv6 (`::ffff:127.0.0.1`). */
export function isLoopback(ip: string): boolean {
  return ip.startsWith('127.') || ip === '::1' || /^::ffff:127\./i.test(ip);
}
