/**
 * `transfer [ZONE...] { to ADDRESS...; source ADDRESS }` (CoreDNS 1.15.0 plugin/transfer/setup.go):
 * each occurrence is a stanza for its zones (the block's when none are given) with the addresses
 * allowed to transfer them and told of changes.
 */
import {
  directive,
  option,
  parseOccurrences,
  str,
  zoneArg,
  type ParsedOccurrence,
} from '../../src/corefile/options.js';
import type { Dispenser } from '../../src/corefile/dispenser.js';
import { ConfigError, ConfigErrorList } from '../../src/corefile/types.js';
import { isIPText, normalizeHostPort } from '../../src/util/hostport.js';

export const TRANSFER_OPTIONS = directive('transfer', {
  args: { rest: zoneArg(), max: Infinity },
  options: [
    option('to', {
      rest: str('ADDRESS'),
      min: 1,
      repeat: 'all',
      summary: 'who may transfer; NOTIFY goes to the addresses',
    }),
    option('source', { args: [str('ADDRESS')], repeat: 'all', summary: 'local address NOTIFY is sent from' }),
  ],
  // CoreDNS words this one with %q, not the generic 'x'.
  unknown: (name) => `unknown property ${JSON.stringify(name)}`,
});

/** One `transfer` occurrence. */
export interface XfrStanza {
  /** Lower-case absolute zones. */
  readonly zones: readonly string[];
  /** `*` or `host:port` (Go's JoinHostPort form, port 53 when none was given). */
  readonly to: readonly string[];
  /** Local address NOTIFY is sent from, or null. */
  readonly source: string | null;
}

/** CoreDNS's parse.HostPort(s, "53"): the address with a port, or the error text. */
export function normalizeTo(s: string): string | Error {
  return normalizeHostPort(s, '53');
}

/** CoreDNS wraps these in plugin.Error twice: `plugin/transfer: plugin/transfer: FILE:LINE - …`. */
function twice(occ: ParsedOccurrence, at: Parameters<ParsedOccurrence['error']>[0], message: string): ConfigError {
  const e = occ.error(at, message);
  return new ConfigError(e.message, e.file, e.line, 'transfer: plugin/transfer');
}

function stanza(occ: ParsedOccurrence, blockZones: readonly string[]): XfrStanza {
  const zones = occ.directive.values.length > 0 ? (occ.directive.values as string[]) : [...blockZones];
  const to: string[] = [];
  let source: string | null = null;
  for (const o of occ.options) {
    if (o.name === 'to') {
      for (const host of o.raw) {
        if (host === '*') {
          to.push(host);
          continue;
        }
        const n = normalizeTo(host);
        // parse.HostPort's error is returned bare: clusterdns adds the line (docs/corefile.md §11).
        if (n instanceof Error) throw occ.error(o, n.message);
        to.push(n);
      }
    } else if (o.name === 'source') {
      if (source !== null) throw twice(occ, o, 'source already specified');
      const ip = o.raw[0]!;
      if (!isIPText(ip) || ip.includes('%')) throw twice(occ, o, `invalid source address ${JSON.stringify(ip)}`);
      source = ip;
    }
  }
  if (to.length === 0) throw twice(occ, occ.directive, "'to' is required");
  return { zones, to, source };
}

/** CoreDNS's unknown-property error passes through plugin.Error twice as well. */
function doubled(e: ConfigError): ConfigError {
  return e.message.startsWith('unknown property "') && e.plugin === 'transfer'
    ? new ConfigError(e.message, e.file, e.line, 'transfer: plugin/transfer')
    : e;
}

/** Every occurrence of `transfer` in the block, in order. */
export function parseTransfer(d: Dispenser, blockZones: readonly string[]): XfrStanza[] {
  try {
    return parseOccurrences(d, TRANSFER_OPTIONS, (occ) => stanza(occ, blockZones));
  } catch (e) {
    if (e instanceof ConfigErrorList) throw new ConfigErrorList(e.errors.map(doubled));
    if (e instanceof ConfigError) throw doubled(e);
    throw e;
  }
}
