/**
 * The `geoip` directive (README.md): the client's location and network from a MaxMind DB as
 * metadata labels (`geoip/city/name`, `geoip/asn/number` …) for view, template and log. The labels
 * are written by a provider of the block's *metadata* plugin (src/metadata.ts), for the client's
 * address or, with `edns-subnet`, the address of the query's EDNS Client Subnet option. The handler
 * itself only passes queries on.
 */
import { directive, file, option } from '../../src/corefile/options.js';
import { METADATA_COLLECTOR } from '../../src/metadata.js';
import { nextOrFailure, type Handler, type PluginDef } from '../../src/plugin.js';
import type { Query } from '../../src/query.js';
import { GeoDatabase, type Label } from './database.js';

export const GEOIP_OPTIONS = directive('geoip', {
  args: { args: [file('DBFILE')] },
  options: [
    option('edns-subnet', { summary: "look up the EDNS0 subnet's address, when present, instead of the client's" }),
  ],
});

/** EDNS option code of Client Subnet (RFC 7871). */
const OPT_ECS = 8;

/**
 * The address of the first Client Subnet option in the OPT RDATA `opts` (as miekg/dns unpacks it:
 * the bytes given, zero-filled to 4 or 16), or null when there is none.
 */
export function ecsAddress(opts: Buffer): string | null {
  for (let i = 0; i + 4 <= opts.length; ) {
    const code = opts.readUInt16BE(i);
    const len = opts.readUInt16BE(i + 2);
    const data = opts.subarray(i + 4, i + 4 + len);
    i += 4 + len;
    if (code !== OPT_ECS || data.length < 4) continue;
    const family = data.readUInt16BE(0);
    const addr = data.subarray(4);
    if (family === 1) {
      const b = [0, 0, 0, 0];
      for (let j = 0; j < 4 && j < addr.length; j++) b[j] = addr[j]!;
      return b.join('.');
    }
    if (family === 2) {
      const b = Buffer.alloc(16);
      addr.copy(b, 0, 0, Math.min(16, addr.length));
      const groups: string[] = [];
      for (let j = 0; j < 16; j += 2) groups.push(b.readUInt16BE(j).toString(16));
      return groups.join(':');
    }
    return null;
  }
  return null;
}

class GeoipHandler implements Handler {
  readonly name = 'geoip';
  constructor(private readonly next: Handler | null) {}

  serve(q: Query): number | Promise<number> {
    return nextOrFailure(this.name, this.next, q);
  }
}

export const geoip: PluginDef = {
  name: 'geoip',
  repeat: 'all',
  options: GEOIP_OPTIONS,
  setup(d, ctx) {
    let dbPath = '';
    let edns = false;
    // CoreDNS's geoipParse, token for token (a second occurrence is refused after it is read).
    while (d.next()) {
      if (!d.nextArg()) throw d.argErr();
      if (dbPath !== '') throw d.err('configuring multiple databases is not supported');
      dbPath = d.val();
      if (d.remainingArgs().length !== 0) throw d.argErr();
      while (d.nextBlock()) {
        if (d.val() !== 'edns-subnet') throw d.err(`unknown property ${JSON.stringify(d.val())}`);
        edns = true;
      }
    }
    let db: GeoDatabase;
    try {
      db = new GeoDatabase(dbPath);
    } catch (e) {
      throw d.err((e as Error).message);
    }
    const log = ctx.log;
    ctx.onStartup(() =>
      ctx.lookup(METADATA_COLLECTOR)?.addProvider((q, meta) => {
        let ip = q.transport.remoteAddress;
        if (edns && q.req.edns !== null && q.req.edns.options.length > 0) ip = ecsAddress(q.req.edns.options) ?? ip;
        let labels: readonly Label[];
        try {
          labels = db.lookup(ip);
        } catch (e) {
          log.debug(`Setting up ${db.schema} metadata failed due to database lookup error: ${(e as Error).message}`);
          return;
        }
        for (let i = 0; i < labels.length; i++) meta.set(labels[i]![0], labels[i]![1]);
      }),
    );
    return (next) => new GeoipHandler(next);
  },
};
