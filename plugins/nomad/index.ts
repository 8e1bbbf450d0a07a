/**
 * The `nomad` directive (README.md): services registered in Nomad's built-in service catalogue,
 * asked of a Nomad agent's HTTP API for every query. At start the first agent (of `address`) that
 * answers `/v1/agent/self` is the one asked first; an agent that does not answer fails no start, as
 * in CoreDNS 1.15.0. Readiness: with one agent always ready; with several, ready while one answers.
 */
import type { Handler, PluginDef } from '../../src/plugin.js';
import { clientConfig, NomadClient } from './client.js';
import { type ClientPicker, NomadHandler } from './handler.js';
import { NOMAD_OPTIONS, parseNomad } from './setup.js';

export const nomad: PluginDef = {
  name: 'nomad',
  repeat: 'first',
  options: NOMAD_OPTIONS,
  setup(d, ctx) {
    const cfg = parseNomad(d);
    const picker: ClientPicker = { clients: [], current: -1 };
    ctx.onStartup(async () => {
      for (const a of cfg.addresses) picker.clients.push(new NomadClient(clientConfig(a, cfg.token, process.env)));
      for (let i = 0; i < picker.clients.length; i++) {
        try {
          await picker.clients[i]!.self();
          picker.current = i;
          break;
        } catch {
          // CoreDNS's start-up hook loses this error (a shadowed variable): the start goes on.
        }
      }
    });
    ctx.onShutdown(() => {
      for (const c of picker.clients) c.close();
    });
    // Ready: CoreDNS asks the agents at each probe; a probe here is synchronous, so it reports the
    // last check and starts the next one.
    let ready = false;
    let checking = false;
    ctx.registerReady('nomad', () => {
      if (picker.clients.length === 1) return true;
      if (!checking) {
        checking = true;
        void (async () => {
          let ok = false;
          for (const c of picker.clients) {
            try {
              await c.self();
              ok = true;
              break;
            } catch {
              // the next agent
            }
          }
          ready = ok;
          checking = false;
        })();
      }
      return ready || 'no Nomad agent answers';
    });
    return (next: Handler | null): Handler => new NomadHandler(cfg, picker, next, ctx.log);
  },
};
