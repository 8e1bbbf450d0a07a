/**
 * chaos: answers TXT queries of class CH for the server's version, authors and host name
 * (`version.bind`, `version.server`, `authors.bind`, `hostname.bind`, `id.server`;
 * docs/plugins.md, chaos). Other queries go on down the chain. Its presence opens the listener to
 * non-IN classes (docs/corefile.md §7.2), as CoreDNS's chaos does.
 */
import { hostname } from 'node:os';
import type { Answer } from 'dns-packet';
import { directive, parseOccurrence, str } from '../../src/corefile/options.js';
import { Qclass, Qtype } from '../../src/dns/constants.js';
import { replyTo } from '../../src/dns/message.js';
import { toPacketName } from '../../src/dns/name.js';
import { nextOrFailure, type Handler, type PluginDef } from '../../src/plugin.js';
import type { Query } from '../../src/query.js';

export const CHAOS_OPTIONS = directive('chaos', { args: { rest: str('VERSION AUTHORS'), min: 0 }, readsBlock: true });

/** Who `authors.bind` names when the Corefile does not say (CoreDNS lists its maintainers). */
export const DEFAULT_AUTHORS: readonly string[] = ['clusterdns'];

/** A TXT string holds at most 255 octets; CoreDNS cuts longer values there. */
export function trim(s: string): string {
  return s.length < 256 ? s : s.slice(0, 255);
}

export interface ChaosConfig {
  readonly version: string;
  readonly authors: readonly string[];
}

/** `chaos [VERSION] [AUTHORS...]`: one argument sets the version, more set the authors too (sorted, deduplicated). */
export function chaosConfig(args: readonly string[], defaultVersion: string): ChaosConfig {
  if (args.length === 0) return { version: trim(defaultVersion), authors: DEFAULT_AUTHORS };
  if (args.length === 1) return { version: trim(args[0]!), authors: DEFAULT_AUTHORS };
  const authors = [...new Set(args.slice(1))].map(trim).sort();
  return { version: args[0]!, authors };
}

export class ChaosHandler implements Handler {
  readonly name = 'chaos';
  constructor(
    private readonly cfg: ChaosConfig,
    private readonly next: Handler | null,
  ) {}

  serve(q: Query): number | Promise<number> {
    if (q.qclass !== Qclass.CH || q.qtype !== Qtype.TXT) return nextOrFailure(this.name, this.next, q);
    let texts: string[];
    switch (q.lname) {
      case 'authors.bind.':
        texts = shuffled(this.cfg.authors);
        break;
      case 'version.bind.':
      case 'version.server.':
        texts = [this.cfg.version];
        break;
      case 'hostname.bind.':
      case 'id.server.':
        texts = [trim(hostname() || 'localhost')];
        break;
      default:
        return nextOrFailure(this.name, this.next, q);
    }
    const m = replyTo(q.request);
    const owner = toPacketName(q.name);
    // One TXT record per text (authors: one record per author, in random order).
    m.answers = texts.map((t): Answer => ({ name: owner, type: 'TXT', class: 'CH', ttl: 0, data: [t] }));
    q.write(m, this.name);
    return 0;
  }
}

function shuffled(items: readonly string[]): string[] {
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

export const chaos: PluginDef = {
  name: 'chaos',
  repeat: 'first',
  handlesAllClasses: true,
  options: CHAOS_OPTIONS,
  setup(d, ctx) {
    d.next();
    const occ = parseOccurrence(d, CHAOS_OPTIONS);
    const cfg = chaosConfig(occ.directive.raw, `clusterdns-${ctx.process.version}`);
    return (next) => new ChaosHandler(cfg, next);
  },
};
