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
    if (await bindsUdp(port, host)) return port;
  }
  throw new Error('no free port found');
}

/** Can a UDP socket bind `port` on `host` now (nothing else holds it)? */
function bindsUdp(port: number, host: string): Promise<boolean> {
  return new Promise<boolean>((resolve) => {
    const s = dgram.createSocket(net.isIPv6(host) ? 'udp6' : 'udp4');
    s.once('error', () => resolve(false));
    s.bind(port, host, () => s.close(() => resolve(true)));
  });
}

/** Can a TCP server listen on `port` on `host` now? */
function listensTcp(port: number, host: string): Promise<boolean> {
  return new Promise<boolean>((resolve) => {
    const srv = net.createServer();
    srv.once('error', () => resolve(false));
    srv.listen(port, host, () => srv.close(() => resolve(true)));
  });
}

/** The lowest port of the kernel's ephemeral range (`ip_local_port_range`), which it gives to sockets bound to 0. */
function ephemeralLow(): number {
  try {
    const lo = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    if (lo > 0) return lo;
  } catch {
    // Not Linux: the IANA dynamic range.
  }
  return 49152;
}

/**
 * A port where nothing listens, for UDP and TCP on `host`, that stays that way: taken below the
 * kernel's ephemeral range, so no socket bound to port 0 (a test's client, a server's upstream
 * socket) can be given it later. A port from {@link freePort} can: a "dead upstream" there once
 * received a server's forwarded query on the test client's own socket, which read it as the reply.
 */
export async function deadPort(host = '127.0.0.1'): Promise<number> {
  const below = Math.max(1025, ephemeralLow() - 1);
  for (let attempt = 0; attempt < 200; attempt++) {
    const port = 1024 + Math.floor(Math.random() * (below - 1024));
    if ((await listensTcp(port, host)) && (await bindsUdp(port, host))) return port;
  }
  throw new Error('no free port below the ephemeral range found');
}
