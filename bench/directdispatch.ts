/**
 * The bench:micro method for in-process A/B benches (shadow-ab.ts, dnstap-ab.ts): a server started
 * in this process from a Corefile, and a function that hands one A query straight to its first
 * listener's dispatch function `n` times, so no socket or load generator is measured.
 */
import * as dnsPacket from 'dns-packet';
import { makeDispatch } from '../src/server/dispatch.js';
import type { Exchange } from '../src/server/listener.js';
import { Server } from '../src/server/server.js';

export interface DirectDispatch {
  readonly label: string;
  /** Queries per `run()`. */
  readonly n: number;
  readonly server: Server;
  readonly run: () => void;
  /** One query. */
  readonly runOne: () => void;
  /** CPU nanoseconds per query of each counted round, filled by the bench. */
  readonly perQueryNs: number[];
}

/**
 * A UDP exchange from 127.0.0.1 that throws every reply away: what the in-process benches hand to
 * a listener's dispatch function so that only the server's own work is measured.
 */
export function discardExchange(localPort: number, server: string): Exchange {
  return {
    proto: 'udp',
    family: 1,
    remoteAddress: '127.0.0.1',
    remotePort: 5555,
    localAddress: '',
    localPort,
    server,
    respond: () => undefined,
    done: () => undefined,
  };
}

let nextPort = 47000 + Math.floor(Math.random() * 5000);

/** Start `corefile` (its `{PORT}` replaced by a port of its own) and prepare `n` dispatches per run. */
export async function directDispatch(label: string, corefile: string, n: number): Promise<DirectDispatch> {
  const p = nextPort++;
  const server = new Server({
    dnsPort: p,
    quiet: true,
    loadSource: async () => ({ path: 'bench', text: corefile.replaceAll('{PORT}', String(p)) }),
  });
  await server.start();
  const spec = [...server.current!.listens.values()][0]!;
  const dispatch = makeDispatch(spec.table, { maxUdpSize: 1232 });
  const pkt = dnsPacket.encode({
    id: 1,
    type: 'query',
    flags: dnsPacket.RECURSION_DESIRED,
    questions: [{ name: 'example.org', type: 'A', class: 'IN' }],
  });
  const ex = discardExchange(p, spec.name);
  return {
    label,
    n,
    server,
    perQueryNs: [],
    run: () => {
      for (let i = 0; i < n; i++) dispatch(pkt, ex);
    },
    runOne: () => dispatch(pkt, ex),
  };
}
