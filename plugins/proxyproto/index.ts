/**
 * The `proxyproto` directive (README.md): PROXY protocol v1/v2 headers on the block's UDP and TCP
 * listeners, handled by the core (src/proxyproto/, src/server/listenopts.ts) so that the header's
 * client is the query's source for every plugin (acl, view, log, metrics, kubernetes pod lookups).
 * With `tlv_metadata` it also provides the `proxyproto/tlv` metadata label. Parsed by hand for
 * CoreDNS 1.15.0's error texts; the options are declared for `-plugins` and the README check.
 */
import { BlockList, isIPv4, isIPv6 } from 'node:net';
import { directive, oneOf, option, str } from '../../src/corefile/options.js';
import { BareSetupError, UnwrappedSetupError } from '../../src/corefile/types.js';
import { METADATA_COLLECTOR } from '../../src/metadata.js';
import type { PluginDef } from '../../src/plugin.js';
import { DEFAULT_MAX_SESSIONS, type ProxyPolicy, type ProxyProtoSettings } from '../../src/proxyproto/policy.js';
import { LISTENER_PROXYPROTO } from '../../src/server/listenopts.js';
import { DurationError, parseGoDurationNs } from '../../src/util/duration.js';

export const PROXYPROTO_OPTIONS = directive('proxyproto', {
  options: [
    option('allow', { rest: str('CIDR'), repeat: 'all' }),
    option('default', { args: [oneOf(['use', 'ignore', 'reject', 'skip'])] }),
    option('udp_session_tracking', { args: [str('DURATION')], rest: str('MAX_SESSIONS'), max: 2 }),
    option('tlv_metadata'),
  ],
});

const POLICIES: readonly ProxyPolicy[] = ['use', 'ignore', 'reject', 'skip'];

/** Go's net.ParseCIDR, into the allow lists; false when `v` is not a CIDR. */
function addCidr(lists: { v4: BlockList | null; v6: BlockList | null }, v: string): boolean {
  const m = /^([^/]+)\/(\d{1,3})$/.exec(v);
  if (!m) return false;
  const addr = m[1]!;
  const bits = Number(m[2]);
  if (isIPv4(addr) && bits <= 32) (lists.v4 ??= new BlockList()).addSubnet(addr, bits, 'ipv4');
  else if (isIPv6(addr) && !addr.includes('%') && bits <= 128)
    (lists.v6 ??= new BlockList()).addSubnet(addr, bits, 'ipv6');
  else return false;
  return true;
}

export const proxyproto: PluginDef = {
  name: 'proxyproto',
  repeat: 'all',
  options: PROXYPROTO_OPTIONS,
  setup(d, ctx) {
    const lists: { v4: BlockList | null; v6: BlockList | null } = { v4: null, v6: null };
    let anyAllow = false;
    let defaultPolicy: ProxyPolicy | null = null;
    let sessionTtlMs = 0;
    let maxSessions = 0;
    let tlvMetadata = false;
    const bare = (msg: string): BareSetupError => new BareSetupError(msg, d.file(), d.line(), 'proxyproto');
    while (d.next()) {
      if (d.remainingArgs().length !== 0) throw d.argErr();
      while (d.nextBlock()) {
        const name = d.val();
        switch (name) {
          case 'allow':
            for (const v of d.remainingArgs()) {
              if (!addCidr(lists, v)) throw bare(`${v}: invalid CIDR address: ${v}`);
              anyAllow = true;
            }
            break;
          case 'default': {
            const v = d.remainingArgs();
            const p = v.length === 1 ? POLICIES.find((x) => x === v[0]!.toLowerCase()) : undefined;
            if (p === undefined) throw d.argErr();
            defaultPolicy = p;
            break;
          }
          case 'udp_session_tracking': {
            const v = d.remainingArgs();
            if (v.length < 1 || v.length > 2) throw d.argErr();
            let ns: number;
            try {
              ns = parseGoDurationNs(v[0]!);
            } catch (e) {
              if (!(e instanceof DurationError)) throw e;
              throw bare(`udp_session_tracking: invalid duration ${JSON.stringify(v[0])}: ${e.message}`);
            }
            sessionTtlMs = ns > 0 ? Math.max(1, Math.round(ns / 1e6)) : 0;
            if (v.length === 2) {
              const n = /^[+-]?\d+$/.test(v[1]!) ? Number(v[1]) : Number.NaN;
              if (!Number.isSafeInteger(n) || n <= 0) {
                throw bare(
                  `udp_session_tracking: invalid max sessions ${JSON.stringify(v[1])}: must be a positive integer`,
                );
              }
              maxSessions = n;
            }
            break;
          }
          case 'tlv_metadata':
            if (d.remainingArgs().length !== 0) throw d.argErr();
            tlvMetadata = true;
            break;
          default:
            throw new UnwrappedSetupError(`unknown option '${name}'`, d.file(), d.line(), 'proxyproto');
        }
      }
    }
    const settings: ProxyProtoSettings = {
      allow: anyAllow ? lists : null,
      defaultPolicy,
      sessionTtlMs,
      maxSessions: maxSessions || DEFAULT_MAX_SESSIONS,
      tlvMetadata,
    };
    ctx.provide(LISTENER_PROXYPROTO, settings);
    if (tlvMetadata) {
      ctx.onStartup(() =>
        ctx.lookup(METADATA_COLLECTOR)?.addProvider((q, meta) => {
          const tlv = q.transport.proxyTlv;
          if (tlv) meta.set('proxyproto/tlv', tlv);
        }),
      );
    }
    return null;
  },
};
