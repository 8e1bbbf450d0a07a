/**
 * `tsig [ZONE...] { secret NAME KEY; secrets FILE; require [QTYPE...]; require_opcode [OPCODE...] }`
 * as CoreDNS 1.15.0's plugin/tsig/setup.go reads it. Every error of the directive is reported as
 * CoreDNS reports it: the argument error after the token the parser stopped at (setup.go returns
 * `c.ArgErr()` whatever went wrong).
 */
import { readFileSync } from 'node:fs';
import { directive, option, str, zoneArg } from '../../src/corefile/options.js';
import type { Dispenser } from '../../src/corefile/dispenser.js';
import { Opcode, qtypeExact } from '../../src/dns/constants.js';
import { normalizeZoneArgs } from '../../src/dns/name.js';
import { decodeSecret, type TsigSecret } from '../../src/dns/tsig.js';

export const TSIG_OPTIONS = directive('tsig', {
  args: { rest: zoneArg(), max: Infinity },
  options: [
    option('secret', { args: [str('NAME'), str('KEY')], repeat: 'all', summary: 'a TSIG key' }),
    option('secrets', { args: [str('FILE')], repeat: 'all', summary: 'TSIG keys from a named.conf-style file' }),
    option('require', { rest: str('QTYPE'), repeat: 'all', summary: 'query types that must be signed' }),
    option('require_opcode', { rest: str('OPCODE'), repeat: 'all', summary: 'opcodes that must be signed' }),
  ],
});

export interface TsigConfig {
  /** Lower-case absolute zones the plugin acts on. */
  readonly zones: readonly string[];
  /** Key name (normalised: lower-case, absolute) → secret. */
  readonly secrets: Map<string, TsigSecret>;
  /** Query types that must be signed (`require`). */
  readonly types: ReadonlySet<number>;
  readonly allTypes: boolean;
  /** Opcodes that must be signed (`require_opcode`). */
  readonly opcodes: ReadonlySet<number>;
  readonly allOpcodes: boolean;
}

/** miekg's StringToOpcode. */
const OPCODES: ReadonlyMap<string, number> = new Map([
  ['QUERY', Opcode.QUERY],
  ['IQUERY', Opcode.IQUERY],
  ['STATUS', Opcode.STATUS],
  ['NOTIFY', Opcode.NOTIFY],
  ['UPDATE', Opcode.UPDATE],
]);

/** CoreDNS's plugin.Name(s).Normalize(): lower-case and absolute. */
export function normalizeKeyName(name: string): string {
  const lower = name.toLowerCase();
  return lower.endsWith('.') ? lower : `${lower}.`;
}

/** The failure of a step; setup turns it into the argument error at the cursor. */
class Stop extends Error {}

/**
 * A `named.conf` key file as setup.go's parseKeyFile reads it: `key "NAME" {` lines, each followed
 * by `secret "…";` (and an ignored `algorithm` line) up to `};`. Returns the keys or the reason.
 */
export function parseKeyFile(text: string): Map<string, string> | string {
  const secrets = new Map<string, string>();
  const lines = text.split('\n');
  let i = 0;
  const fieldsOf = (line: string): string[] => line.split(/[\t\n\v\f\r ]+/).filter((f) => f !== '');
  while (i < lines.length) {
    const line = lines[i++]!;
    const fields = fieldsOf(line);
    if (fields.length === 0) continue;
    if (fields[0] !== 'key') return `unexpected token ${JSON.stringify(fields[0])}`;
    if (fields.length < 2) return `expected key name ${JSON.stringify(line)}`;
    let key = fields[1]!.replace(/^["{]+|["{]+$/g, '');
    if (key === '') return `expected key name ${JSON.stringify(line)}`;
    key = normalizeKeyName(key);
    if (secrets.has(key)) return `key ${JSON.stringify(key)} redefined`;
    while (i < lines.length) {
      const inner = lines[i++]!;
      const f = fieldsOf(inner);
      if (f.length === 0) continue;
      if (f[0] === 'algorithm') continue;
      if (f[0] === 'secret') {
        if (f.length < 2) return `expected secret key ${JSON.stringify(inner)}`;
        const secret = f[1]!.replace(/^[";]+|[";]+$/g, '');
        if (secret === '') return `expected secret key ${JSON.stringify(inner)}`;
        secrets.set(key, secret);
        continue;
      }
      if (f[0] === '}' || f[0] === '};') break;
      return `unexpected token ${JSON.stringify(f[0])}`;
    }
    if (!secrets.has(key)) return `expected secret for key ${JSON.stringify(key)}`;
  }
  return secrets;
}

/** Every occurrence of `tsig` in the block (a second one is an error, as plugin.ErrOnce). */
export function parseTsig(d: Dispenser, blockZones: readonly string[]): TsigConfig {
  const secrets = new Map<string, TsigSecret>();
  let types = new Set<number>();
  let opcodes = new Set<number>();
  let allTypes = false;
  let allOpcodes = false;
  let zones: string[] = [...blockZones];
  try {
    for (let i = 0; d.next(); i++) {
      if (i > 0) throw new Stop();
      const args = d.remainingArgs();
      if (args.length > 0) zones = normalizeZoneArgs(args);
      while (d.nextBlock()) {
        switch (d.val()) {
          case 'secret': {
            const a = d.remainingArgs();
            if (a.length !== 2) throw new Stop();
            const k = normalizeKeyName(a[0]!);
            if (secrets.has(k)) throw new Stop();
            secrets.set(k, decodeSecret(a[1]!));
            break;
          }
          case 'secrets': {
            const a = d.remainingArgs();
            if (a.length !== 1) throw new Stop();
            let text: string;
            try {
              text = readFileSync(a[0]!, 'utf8');
            } catch {
              throw new Stop();
            }
            const keys = parseKeyFile(text);
            if (typeof keys === 'string') throw new Stop();
            for (const [k, s] of keys) {
              if (secrets.has(k)) throw new Stop();
              secrets.set(k, decodeSecret(s));
            }
            break;
          }
          case 'require': {
            // A later `require` replaces the types; an earlier `require all` stays (setup.go).
            types = new Set();
            const a = d.remainingArgs();
            if (a.length === 0) throw new Stop();
            if (a[0] === 'all') allTypes = true;
            else if (a[0] !== 'none') {
              for (const s of a) {
                const t = qtypeExact(s);
                if (t === undefined) throw new Stop();
                types.add(t);
              }
            }
            break;
          }
          case 'require_opcode': {
            opcodes = new Set();
            const a = d.remainingArgs();
            if (a.length === 0) throw new Stop();
            if (a[0] === 'all') allOpcodes = true;
            else if (a[0] !== 'none') {
              for (const s of a) {
                const op = OPCODES.get(s);
                if (op === undefined) throw new Stop();
                opcodes.add(op);
              }
            }
            break;
          }
          default:
            throw new Stop();
        }
      }
    }
  } catch (e) {
    if (e instanceof Stop) throw d.argErr();
    throw e;
  }
  return { zones, secrets, types, allTypes, opcodes, allOpcodes };
}
