/**
 * The `loop` directive (docs/plugins.md, loop). On a detected loop the server logs CoreDNS's FATAL line
 * and exits with status 1, as docs/plugins.md specifies (docs/operations.md, "Forwarding loops", weighs a
 * not-ready report instead; the product keeps CoreDNS's behaviour so that existing alerting on
 * CrashLoopBackOff and the documented troubleshooting page still apply).
 */
import { Qtype } from '../../src/dns/constants.js';
import { directive, parseOccurrence } from '../../src/corefile/options.js';
import { nextOrFailure, type Handler, type PluginDef } from '../../src/plugin.js';
import type { Query } from '../../src/query.js';
import { LoopState } from './loop.js';

function hostPort(addr: string, port: number): string {
  return addr.includes(':') ? `[${addr}]:${port}` : `${addr}:${port}`;
}

export class LoopHandler implements Handler {
  readonly name = 'loop';

  constructor(
    readonly state: LoopState,
    readonly next: Handler | null,
  ) {}

  serve(q: Query): number | Promise<number> {
    if (q.qtype === Qtype.HINFO && !this.state.disabled && q.lname === this.state.qname) {
      if (this.state.inc()) {
        const t = q.transport;
        this.state.fatal(hostPort(t.remoteAddress, t.remotePort), hostPort(t.localAddress, t.localPort));
      }
    }
    return nextOrFailure(this.name, this.next, q);
  }
}

/** Where the self-query goes: the first bound address, or the local host for all interfaces. */
export function probeTarget(bind: readonly string[]): string {
  const first = bind[0];
  if (first === undefined || first === '0.0.0.0' || first === '') return '127.0.0.1';
  if (first === '::') return '::1';
  return first;
}

export const LOOP_OPTIONS = directive('loop');

export const loop: PluginDef = {
  name: 'loop',
  repeat: 'error',
  options: LOOP_OPTIONS,
  setup(d, ctx) {
    d.next();
    parseOccurrence(d, LOOP_OPTIONS);
    const state = new LoopState(ctx.block.zones[0] ?? '.', ctx.log);
    ctx.onServing((block) => {
      // One probe per server, from the main thread (docs/multicore.md §7): a query thread's own
      // probe would reach clients' query logs as a second HINFO, and in a forwarding loop the
      // main thread's probe comes back through every thread, the main one among them.
      if (ctx.process.queryThread) return;
      state.start(probeTarget(block.bindAddresses), block.port);
    });
    ctx.onShutdown(() => state.stop());
    return (next: Handler | null): Handler => new LoopHandler(state, next);
  },
};
