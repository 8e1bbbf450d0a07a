/**
 * dnstap: CLIENT_QUERY and CLIENT_RESPONSE records in dnstap's protobuf format, in Frame Streams,
 * to a collector on a unix socket, TCP or TLS, or with `listen` to the sinks that connect to the
 * server (docs/plugins.md, dnstap; CoreDNS 1.15.0 plugin/dnstap). Each occurrence is one output
 * with its own bounded queue (src/dnstap/output.ts) or listener (src/dnstap/listener.ts): a slow
 * or absent collector costs dropped records, never query latency.
 */
import { TapOutput, QUEUE_SIZE, type TapSink } from '../../src/dnstap/output.js';
import { ListenTap, TapListener, threadRelay, type FrameTarget } from '../../src/dnstap/listener.js';
import type { TapIdentity } from '../../src/dnstap/message.js';
import type { PluginDef, SetupContext } from '../../src/plugin.js';
import { DNSTAP } from '../../src/dnstap/forwarder.js';
import { compileExtra, DnstapHandler, forwarderTap, type Tap } from './handler.js';
import { DNSTAP_OPTIONS, parseDnstap, type TapConfig } from './setup.js';

export { DNSTAP_OPTIONS };

/** A listener's socket: the process's one for its endpoint (main thread), or the way to it (query thread). */
interface ListenEnd extends FrameTarget {
  listener: TapListener | null;
  started: Promise<Error | undefined> | null;
  close(): void;
}

/**
 * The listener of `c`'s endpoint, shared by the configurations that name it so that a reload keeps
 * it (and its sinks) instead of binding the endpoint again while the old one still holds it.
 */
function listenEnd(c: TapConfig, ctx: SetupContext): ListenEnd {
  const key = `dnstap.listen ${c.network}://${c.address}`;
  if (ctx.process.queryThread) {
    return ctx.shared(
      key,
      (): ListenEnd => ({ ...threadRelay(c.network, c.address), listener: null, started: null }),
      (e) => e.close(),
    );
  }
  return ctx.shared(
    key,
    (): ListenEnd => {
      const listener = new TapListener({
        network: c.network,
        address: c.address,
        certFile: c.tls?.cert,
        keyFile: c.tls?.key,
        caFile: c.tls?.ca,
        skipVerify: c.skipVerify,
        log: ctx.log,
      });
      return { listener, started: null, write: (f) => listener.write(f), close: () => listener.close() };
    },
    (e) => e.close(),
  );
}

function sinkFor(c: TapConfig, ctx: SetupContext, identity: TapIdentity): { sink: TapSink; end: ListenEnd | null } {
  if (c.listen) {
    const end = listenEnd(c, ctx);
    return { sink: new ListenTap(end, identity), end };
  }
  const sink = new TapOutput({
    network: c.network,
    address: c.address,
    capacity: c.queueMultiple * QUEUE_SIZE,
    skipVerify: c.skipVerify,
    identity,
    log: ctx.log,
  });
  return { sink, end: null };
}

export const dnstap: PluginDef = {
  name: 'dnstap',
  repeat: 'all',
  options: DNSTAP_OPTIONS,
  setup(d, ctx) {
    const configs = parseDnstap(d);
    const made = configs.map((c) => ({
      c,
      ...sinkFor(c, ctx, { identity: Buffer.from(c.identity), version: Buffer.from(c.version) }),
    }));
    const taps: Tap[] = made.map(({ c, sink }) => ({
      output: sink,
      full: c.full,
      extra: c.extra === null ? null : compileExtra(c.extra),
    }));
    ctx.provide(DNSTAP, forwarderTap(taps));
    ctx.onStartup(async () => {
      for (const { sink, end } of made) {
        if (end !== null) {
          // The main thread binds each endpoint once, at the first configuration that names it.
          if (end.listener !== null && end.started === null) {
            end.started = end.listener.listen();
            const err = await end.started;
            if (err) ctx.log.error(`Failed to start dnstap listener: ${err.message}`);
          }
          continue;
        }
        const err = await sink.start();
        if (err) ctx.log.error(`No connection to dnstap endpoint: ${err.message}`);
      }
    });
    ctx.onShutdown(() => {
      for (const t of taps) t.output.close();
    });
    return (next) => new DnstapHandler(next, taps);
  },
};
