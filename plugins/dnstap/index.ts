/**
 * dnstap: CLIENT_QUERY and CLIENT_RESPONSE records in dnstap's protobuf format, in Frame Streams,
 * to a collector on a unix socket, TCP or TLS (docs/plugins.md, dnstap; CoreDNS 1.15.0
 * plugin/dnstap). Each occurrence is one output with its own bounded queue (src/dnstap/output.ts):
 * a slow or absent collector costs dropped records, never query latency.
 */
import { TapOutput, QUEUE_SIZE } from '../../src/dnstap/output.js';
import type { PluginDef } from '../../src/plugin.js';
import { DNSTAP } from '../../src/dnstap/forwarder.js';
import { compileExtra, DnstapHandler, forwarderTap, type Tap } from './handler.js';
import { DNSTAP_OPTIONS, parseDnstap } from './setup.js';

export { DNSTAP_OPTIONS };

export const dnstap: PluginDef = {
  name: 'dnstap',
  repeat: 'all',
  options: DNSTAP_OPTIONS,
  setup(d, ctx) {
    const configs = parseDnstap(d);
    const taps: Tap[] = configs.map((c) => ({
      output: new TapOutput({
        network: c.network,
        address: c.address,
        capacity: c.queueMultiple * QUEUE_SIZE,
        skipVerify: c.skipVerify,
        identity: { identity: Buffer.from(c.identity), version: Buffer.from(c.version) },
        log: ctx.log,
      }),
      full: c.full,
      extra: c.extra === null ? null : compileExtra(c.extra),
    }));
    ctx.provide(DNSTAP, forwarderTap(taps));
    ctx.onStartup(async () => {
      for (const t of taps) {
        const err = await t.output.start();
        if (err) ctx.log.error(`No connection to dnstap endpoint: ${err.message}`);
      }
    });
    ctx.onShutdown(() => {
      for (const t of taps) t.output.close();
    });
    return (next) => new DnstapHandler(next, taps);
  },
};
