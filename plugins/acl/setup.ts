/**
 * Parsing `acl [ZONES...] { ACTION [type QTYPE...] [net SOURCE...] ... }` into rules, with
 * CoreDNS 1.15.0's error texts.
 */
import { BlockList, isIP } from 'node:net';
import type { Dispenser } from '../../src/corefile/dispenser.js';
import { directive, option, parseOccurrences, str, zoneArg, type ParsedOption } from '../../src/corefile/options.js';
import { ConfigError, ConfigErrorList } from '../../src/corefile/types.js';
import { qtypeFromName } from '../../src/dns/constants.js';

export type Action = 'allow' | 'block' | 'filter' | 'drop';
const ACTIONS: readonly Action[] = ['allow', 'block', 'filter', 'drop'];

const actionOption = (name: Action, summary: string) =>
  option(name, { rest: str('type QTYPE... net SOURCE...'), min: 0, repeat: 'all', summary });

export const ACL_OPTIONS = directive('acl', {
  args: { rest: zoneArg(), min: 0 },
  options: [
    actionOption('allow', 'let matching queries through (stop checking this rule)'),
    actionOption('block', 'answer REFUSED with extended error 15 (Blocked)'),
    actionOption('filter', 'answer NOERROR without records, extended error 17 (Filtered)'),
    actionOption('drop', 'send no reply at all'),
  ],
});

/** One policy line: the first that matches a query decides. */
export interface Policy {
  readonly action: Action;
  /** Query types it applies to; null = every type (`type *` or no `type` section). */
  readonly qtypes: ReadonlySet<number> | null;
  /** Client networks; null = every address (`net *` or no `net` section). */
  readonly v4: BlockList | null;
  readonly v6: BlockList | null;
  readonly anyNet: boolean;
}

/** One `acl` occurrence: its zones and its policies in order. */
export interface Rule {
  readonly zones: readonly string[];
  readonly policies: readonly Policy[];
}

function isSection(t: string): boolean {
  const l = t.toLowerCase();
  return l === 'type' || l === 'net';
}

/** A bare address becomes a host network, as CoreDNS's normalize. */
function normalizeNet(raw: string): string {
  if (raw.includes('/')) return raw;
  return raw.includes(':') ? `${raw}/128` : `${raw}/32`;
}

function parsePolicy(o: ParsedOption): Policy {
  const fail = (msg: string): ConfigError => new ConfigError(msg, o.token.file, o.token.line, 'acl');
  let qtypes: Set<number> | null = new Set();
  let anyType = false;
  let v4: BlockList | null = null;
  let v6: BlockList | null = null;
  let anyNet = false;
  let hasType = false;
  let hasNet = false;
  let rest = [...o.raw];
  while (rest.length > 0) {
    if (!isSection(rest[0]!)) throw fail(`unexpected token ${JSON.stringify(rest[0])}; expect 'type | net'`);
    const section = rest[0]!.toLowerCase();
    let i = 1;
    const tokens: string[] = [];
    for (; i < rest.length && !isSection(rest[i]!); i++) tokens.push(rest[i]!);
    rest = rest.slice(i);
    if (tokens.length === 0) throw fail(`no token specified in ${JSON.stringify(section)} section`);
    if (section === 'type') {
      hasType = true;
      for (const t of tokens) {
        if (t === '*') {
          anyType = true;
          break;
        }
        // miekg/dns's StringToType: the mnemonic exactly as registered (upper case).
        const qt = /^[A-Z0-9-]+$/.test(t) && !/^TYPE\d+$/.test(t) ? qtypeFromName(t) : undefined;
        if (qt === undefined) throw fail(`unexpected token ${JSON.stringify(t)}; expect legal QTYPE`);
        qtypes.add(qt);
      }
    } else {
      hasNet = true;
      for (const t of tokens) {
        if (t === '*') {
          anyNet = true;
          break;
        }
        const n = normalizeNet(t);
        const slash = n.indexOf('/');
        const addr = n.slice(0, slash);
        const bits = n.slice(slash + 1);
        const fam = isIP(addr);
        const max = fam === 4 ? 32 : 128;
        if (fam === 0 || !/^\d{1,3}$/.test(bits) || Number(bits) > max)
          throw fail(`illegal CIDR notation ${JSON.stringify(n)}`);
        if (fam === 4) (v4 ??= new BlockList()).addSubnet(addr, Number(bits), 'ipv4');
        else (v6 ??= new BlockList()).addSubnet(addr, Number(bits), 'ipv6');
      }
    }
  }
  if (!hasType || anyType) qtypes = null;
  if (!hasNet) anyNet = true;
  return { action: o.name as Action, qtypes, v4: anyNet ? null : v4, v6: anyNet ? null : v6, anyNet };
}

/** An unknown block keyword gets CoreDNS's wording. */
function actionErrors(e: unknown): unknown {
  const fix = (x: ConfigError): ConfigError => {
    const m = /^unknown property '(.*)'$/.exec(x.message);
    if (!m) return x;
    // CoreDNS accepts any letter case here; the declared options are matched as written.
    const hint = (ACTIONS as readonly string[]).includes(m[1]!.toLowerCase())
      ? ` (write '${m[1]!.toLowerCase()}' in lower case)`
      : '';
    return new ConfigError(
      `unexpected token ${JSON.stringify(m[1])}; expect 'allow', 'block', 'filter' or 'drop'${hint}`,
      x.file,
      x.line,
      x.plugin,
    );
  };
  if (e instanceof ConfigErrorList) return new ConfigErrorList(e.errors.map(fix));
  if (e instanceof ConfigError) return fix(e);
  return e;
}

/** Every occurrence of `acl` in the block, in order; zones default to the block's. */
export function parseAcl(d: Dispenser, blockZones: readonly string[]): Rule[] {
  let occs;
  try {
    occs = parseOccurrences(d, ACL_OPTIONS);
  } catch (e) {
    throw actionErrors(e);
  }
  return occs.map((occ) => {
    const zones = occ.directive.values.length > 0 ? (occ.directive.values as string[]) : [...blockZones];
    const policies = occ.options.filter((o) => (ACTIONS as readonly string[]).includes(o.name)).map(parsePolicy);
    return { zones, policies };
  });
}
