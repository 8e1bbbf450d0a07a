/**
 * `dynupdate [ZONE] { file DBFILE; database PATH; allow KEY NAME TYPE...; max_records COUNT;
 * max_bytes BYTES; max_update_records COUNT }` as CoreDNS 1.15.0's plugin/dynupdate/setup.go reads
 * it, with its error texts (those setup.go returns without a position get the directive's line, as
 * clusterdns words every setup error: docs/corefile.md §11).
 */
import { isAbsolute, resolve } from 'node:path';
import { directive, option, str } from '../../src/corefile/options.js';
import type { Dispenser } from '../../src/corefile/dispenser.js';
import { ConfigError } from '../../src/corefile/types.js';
import { qtypeExact } from '../../src/dns/constants.js';
import { isDomainName, lowerName, normalizeZoneArg } from '../../src/dns/name.js';
import {
  ALL_NAMES,
  ALL_TYPES,
  DEFAULT_LIMITS,
  inZone,
  validPolicyType,
  type Limits,
  type Permission,
} from './engine.js';

export const DYNUPDATE_OPTIONS = directive('dynupdate', {
  args: { rest: str('ZONE'), max: 1 },
  options: [
    option('file', { args: [str('DBFILE')], summary: 'the seed zone file' }),
    option('database', { args: [str('PATH')], summary: 'keep accepted updates in this file' }),
    option('allow', { rest: str('KEY NAME TYPE'), min: 3, repeat: 'all', summary: 'who may change what' }),
    option('max_records', { args: [str('COUNT')], summary: 'records in the zone' }),
    option('max_bytes', { args: [str('BYTES')], summary: 'bytes of record data in the zone' }),
    option('max_update_records', { args: [str('COUNT')], summary: 'records in one UPDATE' }),
  ],
});

export interface DynupdateConfig {
  /** Lower-case absolute zone. */
  readonly zone: string;
  readonly seed: string;
  /** Absolute path of the database, or null (in memory only). */
  readonly database: string | null;
  readonly permissions: readonly Permission[];
  readonly limits: Limits;
}

/** miekg's type names and `TYPEnnn` (parseRRType). */
function parseType(raw: string): number | undefined {
  const name = raw.toUpperCase();
  const t = qtypeExact(name);
  if (t !== undefined) return t;
  const m = /^TYPE(\d+)$/.exec(name);
  if (m === null) return undefined;
  const n = Number(m[1]);
  return n === 0 || n > 0xffff || n === 0xffff ? undefined : n;
}

function canonical(name: string): string {
  const l = lowerName(name);
  return l.endsWith('.') ? l : `${l}.`;
}

function parseOrigin(args: readonly string[], blockZones: readonly string[]): string {
  let token: string;
  if (args.length === 0) {
    const zones = [...new Set(blockZones)];
    if (zones.length !== 1) throw new Error('zone is required when the server block does not define exactly one zone');
    token = zones[0]!;
  } else if (args.length === 1) token = args[0]!;
  else throw new Error('exactly one zone is allowed');
  const hosts = normalizeZoneArg(token);
  if (hosts.length !== 1 || hosts[0] === '' || !isDomainName(hosts[0]!))
    throw new Error(`invalid zone ${JSON.stringify(token)}`);
  return canonical(hosts[0]!);
}

function parsePermission(args: readonly string[], origin: string): Permission {
  if (args.length < 3) throw new Error('allow requires KEY NAME and at least one RR type');
  const k = args[0]!;
  if (k.trim() === '' || k === '*' || k === '@' || !isDomainName(canonical(k)))
    throw new Error(`invalid TSIG key ${JSON.stringify(k)}`);
  let name = ALL_NAMES;
  if (args[1] !== ALL_NAMES) {
    name = args[1] === '@' ? origin : canonical(args[1]!);
    if (!isDomainName(name) || !inZone(origin, name))
      throw new Error(`allow name ${JSON.stringify(args[1])} is outside zone ${JSON.stringify(origin)}`);
  }
  const types = new Set<number>();
  let allTypes = false;
  for (const raw of args.slice(2)) {
    if (raw === ALL_TYPES) {
      if (args.length !== 3) throw new Error('wildcard RR type must be the only type in an allow rule');
      allTypes = true;
      continue;
    }
    const t = parseType(raw);
    if (t === undefined || !validPolicyType(t)) throw new Error(`invalid RR type ${JSON.stringify(raw)} in allow rule`);
    types.add(t);
  }
  return { key: canonical(k), name, types, allTypes };
}

/**
 * The directive (once per block). `resolvePath` applies the block's root (SetupContext.resolvePath)
 * to the seed file and the database, as CoreDNS's setup.go and databasePath do.
 */
export function parseDynupdate(
  d: Dispenser,
  blockZones: readonly string[],
  resolvePath = (p: string): string => p,
): DynupdateConfig {
  if (!d.next()) throw d.argErr();
  const line = d.token();
  const fail = (e: unknown): never => {
    if (e instanceof ConfigError) throw e;
    throw new ConfigError((e as Error).message, line?.file ?? d.file(), line?.line ?? d.line(), 'dynupdate');
  };
  let origin = '';
  try {
    origin = parseOrigin(d.remainingArgs(), blockZones);
  } catch (e) {
    fail(e);
  }
  let seed: string | null = null;
  let database: string | null = null;
  const permissions: Permission[] = [];
  const limits = { ...DEFAULT_LIMITS };
  const seen = new Set<string>();
  while (d.nextBlock()) {
    const property = d.val();
    if (property !== 'allow' && seen.has(property)) throw d.err(`${property} specified more than once`);
    seen.add(property);
    switch (property) {
      case 'database': {
        const a = d.remainingArgs();
        if (a.length !== 1 || a[0] === '') throw d.argErr();
        database = a[0]!;
        break;
      }
      case 'max_records':
      case 'max_bytes':
      case 'max_update_records': {
        const a = d.remainingArgs();
        if (a.length !== 1) throw d.argErr();
        const n = /^[+-]?\d+$/.test(a[0]!) ? Number(a[0]) : Number.NaN;
        if (!Number.isSafeInteger(n) || n <= 0) throw d.err(`${property} requires a positive integer`);
        if (property === 'max_records') limits.records = n;
        else if (property === 'max_bytes') limits.bytes = n;
        else limits.updateRecords = n;
        break;
      }
      case 'file': {
        const a = d.remainingArgs();
        if (a.length !== 1) throw d.argErr();
        seed = a[0]!;
        break;
      }
      case 'allow':
        try {
          permissions.push(parsePermission(d.remainingArgs(), origin));
        } catch (e) {
          fail(e);
        }
        break;
      default:
        throw d.err(`unknown property ${JSON.stringify(property)}`);
    }
  }
  if (d.next()) throw d.err('this plugin can only be used once per Server Block');
  if (seed === null) throw d.err('file is required');
  if (permissions.length === 0) throw d.err('at least one allow rule is required');
  return {
    zone: origin,
    seed: resolvePath(seed),
    database: database === null ? null : isAbsolute(database) ? database : resolve(resolvePath(database)),
    permissions,
    limits,
  };
}
