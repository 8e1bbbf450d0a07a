/** Ports for tests: a port free for both UDP and TCP on 127.0.0.1, and one that stays unused. */
import * as dgram from 'node:dgram';
import { readFileSync } from 'node:fs';
import * as net from 'node:net';

export async function freePort(host = '127.0.0.1'): Promise<number> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const port = await new Promise<number>((resolve, reject) => {
      const srv = net.createServer();
      srv.once('error', reject);
      srv.listen(0, host, () => {
        const p = (srv.address() as net.AddressInfo).port;
        srv.close(() => resolve(p));
      });
    });
    const udpOk = await new Promise<boolean>((resolve) => {
      const s = dgram.createSocket(net.isIPv6(host) ? 'udp6' : 'udp4');
      s.once('error', () => resolve(false));
      s.bind(port, host, () => s.close(() => resolve(true)));
    });
    if (udpOk) return port;
  }
  throw new Error('no free port found');
}

/** The kernel's ephemeral range (`ip_local_port_range`): ports it gives to sockets bound to 0. */
function ephemeralRange(): [number, number] {
  try {
    const [lo, hi] = readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/).map(Number);
    if (lo !== undefined && hi !== undefined && lo > 0 && hi >= lo) return [lo, hi];
  } catch {
    // Not Linux: the IANA dynamic range.
  }
  return [49152, 65535];
}

/**
 * A port where nothing listens, for UDP and TCP on `host`, that stays that way: taken below the
 * kernel's ephemeral range, so no socket bound to port 0 (a test's client, a server's upstream
 * socket) can be given it later. A port from {@link freePort} can: a "dead upstream" there once
 * received a server's forwarded query on the test client's own socket, which read it as the reply.
 */
export async function deadPort(host = '127.0.0.1'): Promise<number> {
  const [lo] = ephemeralRange();
  const below = Math.max(1025, lo - 1);
  for (let attempt = 0; attempt < 200; attempt++) {
    const port = 1024 + Math.floor(Math.random() * (below - 1024));
    const tcpOk = await new Promise<boolean>((resolve) => {
      const srv = net.createServer();
      srv.once('error', () => resolve(false));
      srv.listen(port, host, () => srv.close(() => resolve(true)));
    });
    if (!tcpOk) continue;
    const udpOk = await new Promise<boolean>((resolve) => {
      const s = dgram.createSocket(net.isIPv6(host) ? 'udp6' : 'udp4');
      s.once('error', () => resolve(false));
      s.bind(port, host, () => s.close(() => resolve(true)));
    });
    if (udpOk) return port;
  }
  throw new Error('no free port below the ephemeral range found');
}
