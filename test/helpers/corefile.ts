/**
 * A whole Corefile answering queries without a socket: the core parses and sets it up
 * (buildInstance, every plugin's real setup and start-up hooks), and each query goes through the
 * same dispatch a listener calls (src/server/dispatch.ts: parse, route, chain, fit the reply to
 * the client). For tests that only need the answer: no port to pick, no UDP timeout to tune, and
 * the reply is exactly the bytes the listener would have sent.
 *
 * Side listeners a plugin opens itself (health, ready, prometheus) are still real; use
 * startServer (test/helpers/server.ts) when the test is about the DNS sockets themselves.
 */
import { decode, type Message } from '../../src/dns/message.js';
import type { Proto } from '../../src/query.js';
import { listenerDispatchOptions, makeDispatch } from '../../src/server/dispatch.js';
import { buildInstance, Instance, type ListenSpec } from '../../src/server/instance.js';
import type { Exchange } from '../../src/server/listener.js';
import { InProcessLookup } from '../../src/server/selflookup.js';
import { SharedResources } from '../../src/server/shared.js';
import { encodeQuery, type QueryOptions } from './dns.js';
import { FakeCore } from './setup.js';

export interface AskOptions extends QueryOptions {
  /** The transport the query arrives on (default udp). */
  readonly proto?: Proto;
  /** The listener it arrives on, `dns://:PORT` (default: the Corefile's only listener). */
  readonly server?: string;
  /** The client's address (default 127.0.0.1). */
  readonly remoteAddress?: string;
}

export interface CorefileRun {
  /** Ask `name` `type`; resolves to the reply the listener would send (rejects when dropped). */
  ask(name: string, type: string, o?: AskOptions): Promise<Message>;
  /** Send raw query bytes; resolves to the reply bytes, or null when the server sends none. */
  exchange(packet: Buffer, o?: AskOptions): Promise<Buffer | null>;
  /** Run the shutdown hooks and release what the configuration holds. */
  stop(): Promise<void>;
}

/**
 * Set up `corefile` (keys without a port use `dnsPort`, 53 by default: nothing is bound) and run
 * its start-up and serving hooks, as the Server does before it answers.
 */
export async function runCorefile(
  corefile: string,
  o: { dnsPort?: number; env?: Record<string, string | undefined> } = {},
): Promise<CorefileRun> {
  const dnsPort = o.dnsPort ?? 53;
  const core = new FakeCore();
  /** The instance lookups route in, once built. */
  let current: Instance | null = null;
  const shared = new SharedResources();
  const inst = await buildInstance(
    { path: 'Corefile', text: corefile },
    {
      dnsPort,
      process: { corefilePath: 'Corefile', dnsPort, version: 'test', queryThread: false },
      shared,
      services: core,
      // Lookups through the server (CoreDNS's upstream.Lookup), routed as the real Server routes them.
      selfLookup: new InProcessLookup((name) => {
        const spec = current?.listens.get(name);
        return spec && { table: spec.table, opts: listenerDispatchOptions(spec) };
      }),
      env: o.env ?? process.env,
    },
  );
  current = inst;
  await Instance.run(inst.startup);
  await Instance.run(inst.serving);

  const listenerOf = (name: string | undefined): ListenSpec => {
    if (name !== undefined) {
      const spec = inst.listens.get(name);
      if (spec === undefined)
        throw new Error(`no listener ${name}; the Corefile has ${[...inst.listens.keys()].join(', ')}`);
      return spec;
    }
    if (inst.listens.size !== 1)
      throw new Error(`say which listener to ask: the Corefile has ${[...inst.listens.keys()].join(', ')}`);
    return inst.listens.values().next().value!;
  };

  const exchange = (packet: Buffer, a: AskOptions = {}): Promise<Buffer | null> => {
    const spec = listenerOf(a.server);
    const dispatch = makeDispatch(spec.table, listenerDispatchOptions(spec));
    return new Promise((resolve) => {
      let reply: Buffer | null = null;
      const ex: Exchange = {
        proto: a.proto ?? 'udp',
        family: 1,
        remoteAddress: a.remoteAddress ?? '127.0.0.1',
        remotePort: 40000,
        localAddress: '127.0.0.1',
        localPort: spec.port,
        server: spec.name,
        respond: (b) => {
          reply ??= b;
        },
        done: () => resolve(reply),
      };
      dispatch(packet, ex);
    });
  };

  return {
    exchange,
    ask: async (name, type, a = {}) => {
      const reply = await exchange(encodeQuery(name, type, a), a);
      if (reply === null) throw new Error(`no reply to ${name} ${type} (dropped)`);
      return decode(reply);
    },
    stop: async () => {
      // The Server's order: final shutdown hooks, then the instance's own, then what it shares.
      core.startShutdown();
      const errors = [...(await Instance.runAll(inst.finalShutdown)), ...(await Instance.runAll(inst.shutdown))];
      await shared.release(inst.id);
      if (errors.length > 0) throw new AggregateError(errors, `shutdown: ${errors.map((e) => e.message).join('; ')}`);
    },
  };
}
