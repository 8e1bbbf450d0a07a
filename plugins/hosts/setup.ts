/** Parsing of `hosts [FILE [ZONES...]] { ... }` (docs/plugins.md, hosts). */
import { normalizeZoneArgs } from '../../src/dns/name.js';
import type { Dispenser } from '../../src/corefile/dispenser.js';
import { parseDuration } from '../../src/util/duration.js';

export interface HostsConfig {
  path: string;
  /** Zones (empty → the block keys). */
  zones: string[];
  inline: string[];
  ttl: number;
  autoReverse: boolean;
  reloadMs: number;
  /** null = no fallthrough; [] never happens (no zones means root). */
  fallthrough: string[] | null;
  fallthroughUnsupported: boolean;
}

export function parseHosts(d: Dispenser): HostsConfig {
  const cfg: HostsConfig = {
    path: '/etc/hosts', zones: [], inline: [], ttl: 3600, autoReverse: true, reloadMs: 5000, fallthrough: null, fallthroughUnsupported: false,
  };
  while (d.next()) {
    const args = d.remainingArgs();
    if (args.length >= 1) cfg.path = args[0]!;
    cfg.zones = normalizeZoneArgs(args.slice(1));
    while (d.nextBlock()) {
      const opt = d.val();
      switch (opt) {
        case 'fallthrough': {
          const z = normalizeZoneArgs(d.remainingArgs());
          cfg.fallthrough = z.length > 0 ? z : ['.'];
          break;
        }
        case 'fallthrough_unsupported':
          if (d.remainingArgs().length !== 0) throw d.argErr();
          cfg.fallthroughUnsupported = true;
          break;
        case 'no_reverse':
          cfg.autoReverse = false;
          break;
        case 'ttl': {
          const a = d.remainingArgs();
          if (a.length < 1) throw d.err('ttl needs a time in second');
          if (!/^[+-]?\d+$/.test(a[0]!)) throw d.err('ttl needs a number of second');
          const ttl = Number(a[0]);
          if (ttl <= 0 || ttl > 65535) throw d.err('ttl provided is invalid');
          cfg.ttl = ttl;
          break;
        }
        case 'reload': {
          const a = d.remainingArgs();
          if (a.length !== 1) throw d.err('reload needs a duration (zero seconds to disable)');
          const ms = parseDuration(a[0]!);
          if (ms === undefined) throw d.err(`invalid duration for reload '${a[0]}'`);
          if (ms < 0) throw d.err(`invalid negative duration for reload '${a[0]}'`);
          cfg.reloadMs = ms;
          break;
        }
        default: {
          if (cfg.fallthrough === null) {
            cfg.inline.push([opt, ...d.remainingArgs()].join(' '));
            break;
          }
          throw d.err(`unknown property '${opt}'`);
        }
      }
    }
  }
  if (cfg.fallthroughUnsupported && cfg.fallthrough === null) throw d.err('fallthrough_unsupported requires fallthrough');
  return cfg;
}
