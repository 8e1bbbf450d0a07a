/**
 * A TCP proxy for fault injection between a client and the sandbox API server (or any TCP
 * server on loopback). `freeze()` makes every connection open at that moment stop relaying in
 * both directions without closing it — no FIN, no RST, as when a NAT entry, a firewall or a
 * partition drops a flow — while connections made afterwards are relayed normally.
 */
import * as net from 'node:net';

export interface FaultProxy {
  /** `http://127.0.0.1:PORT` of the proxy */
  url: string;
  port: number;
  /** Stop relaying on every open connection, leaving it open; returns how many were frozen. */
  freeze(): number;
  /** Connections accepted so far. */
  accepted(): number;
  /** Connections currently relayed (not frozen, not closed). */
  live(): number;
  close(): Promise<void>;
}

interface Pair {
  client: net.Socket;
  upstream: net.Socket;
  frozen: boolean;
}

/** Start a proxy on 127.0.0.1 (ephemeral port) to `target` (host defaults to 127.0.0.1). */
export async function startFaultProxy(target: { host?: string; port: number }): Promise<FaultProxy> {
  const pairs = new Set<Pair>();
  let accepted = 0;
  const server = net.createServer((client) => {
    accepted++;
    const upstream = net.connect(target.port, target.host ?? '127.0.0.1');
    const pair: Pair = { client, upstream, frozen: false };
    pairs.add(pair);
    const relay = (from: net.Socket, to: net.Socket): void => {
      from.on('data', (d) => {
        if (!pair.frozen) to.write(d);
      });
      from.on('end', () => {
        if (!pair.frozen) to.end();
      });
      from.on('error', () => undefined);
      from.on('close', () => {
        // A frozen flow carries nothing, not even the close, to the other side.
        if (pair.frozen) return;
        to.destroy();
        pairs.delete(pair);
      });
    };
    relay(client, upstream);
    relay(upstream, client);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as net.AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    freeze: () => {
      let n = 0;
      for (const p of pairs) {
        if (p.frozen) continue;
        p.frozen = true;
        p.client.pause();
        p.upstream.pause();
        n++;
      }
      return n;
    },
    accepted: () => accepted,
    live: () => [...pairs].filter((p) => !p.frozen && !p.client.destroyed).length,
    close: async () => {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const p of pairs) {
        p.client.destroy();
        p.upstream.destroy();
      }
      pairs.clear();
      await closed;
    },
  };
}
