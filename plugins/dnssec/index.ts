/**
 * `dnssec [ZONES...] { key file KEY...; key aws_secretsmanager SECRET...; cache_capacity CAPACITY }`
 * (README.md; docs/plugins.md, dnssec): on-line DNSSEC signing of the replies written below it, as
 * CoreDNS 1.15.0's plugin/dnssec (setup.go). Keys are read once at setup (key files while parsing,
 * AWS Secrets Manager secrets after it: src/dnssec/secretsmanager.ts); the signature cache lives as
 * long as the configuration, as CoreDNS's does.
 */
import { directive, int, oneOf, option, str, zoneArg } from '../../src/corefile/options.js';
import { BareSetupError, ConfigError } from '../../src/corefile/types.js';
import type { Dispenser } from '../../src/corefile/dispenser.js';
import { isSubdomain, normalizeZoneArgs } from '../../src/dns/name.js';
import { isKSK, isZSK, keyBase, readKeyPair, type SigningKey } from '../../src/dnssec/keys.js';
import { awsConfig, keyFromSecretsManager, type AwsConfig } from '../../src/dnssec/secretsmanager.js';
import type { PluginDef } from '../../src/plugin.js';
import { SignatureCache } from './cache.js';
import { DnssecHandler } from './handler.js';
import { ReplySigner } from './signer.js';

export const DNSSEC_OPTIONS = directive('dnssec', {
  args: { rest: zoneArg(), min: 0 },
  options: [
    option('key', { args: [oneOf(['file', 'aws_secretsmanager'])], rest: str('KEY'), min: 2 }),
    option('cache_capacity', { args: [int({ meta: 'CAPACITY' })] }),
  ],
});

/** CoreDNS's default signature cache capacity. */
export const DEFAULT_CAPACITY = 10000;
/** The sweep of signatures past 3/4 of their life (CoreDNS's periodicClean). */
const SWEEP_MS = 8 * 3600 * 1000;

export interface DnssecConfig {
  readonly zones: string[];
  readonly keys: SigningKey[];
  readonly capacity: number;
  readonly splitKeys: boolean;
}

/** What the Corefile says, before secrets are fetched. */
export interface DnssecParsed {
  readonly zones: string[];
  readonly keys: KeySource[];
  readonly capacity: number;
}

/** Go's strconv.Atoi. */
function atoi(v: string): number | null {
  if (!/^[+-]?\d+$/.test(v)) return null;
  const n = Number(v);
  return Number.isSafeInteger(n) ? n : null;
}

/** A key named in the Corefile: read from disk at parse time, or a secret to fetch at setup. */
export type KeySource =
  | { readonly key: SigningKey }
  | { readonly secret: string; readonly file: string; readonly line: number };

function keyParse(d: Dispenser, resolvePath: (p: string) => string): KeySource[] {
  if (!d.nextArg()) throw d.argErr();
  const how = d.val();
  const keys: KeySource[] = [];
  if (how === 'file') {
    const at = { file: d.file(), line: d.line() };
    const names = d.remainingArgs();
    if (names.length === 0) throw d.argErr();
    for (const k of names) {
      try {
        // CoreDNS joins the base (extension dropped) with the block's root (setup.go).
        keys.push({ key: readKeyPair(resolvePath(keyBase(k))) });
      } catch (e) {
        throw new BareSetupError((e as Error).message, at.file, at.line, 'dnssec');
      }
    }
  } else if (how === 'aws_secretsmanager') {
    const at = { file: d.file(), line: d.line() };
    const names = d.remainingArgs();
    if (names.length === 0) throw d.argErr();
    for (const secret of names) keys.push({ secret, ...at });
  }
  // Any other word: CoreDNS reads no key and carries on.
  return keys;
}

/**
 * dnssecParse's reading of the tokens: zones, keys (files read, secrets named), capacity.
 * `resolvePath` applies the block's root to the key files (SetupContext.resolvePath).
 */
export function parseDnssec(
  d: Dispenser,
  blockZones: readonly string[],
  resolvePath = (p: string): string => p,
): DnssecParsed {
  let zones: string[] = [];
  const keys: KeySource[] = [];
  let capacity = DEFAULT_CAPACITY;
  let n = 0;
  while (d.next()) {
    // plugin.ErrOnce, which CoreDNS prints without a position.
    if (n++ > 0)
      throw new BareSetupError('this plugin can only be used once per Server Block', d.file(), d.line(), 'dnssec');
    const args = d.remainingArgs();
    zones = args.length > 0 ? normalizeZoneArgs(args) : [...blockZones];
    while (d.nextBlock()) {
      const prop = d.val();
      switch (prop) {
        case 'key':
          keys.push(...keyParse(d, resolvePath));
          break;
        case 'cache_capacity': {
          if (!d.nextArg()) throw d.argErr();
          const v = d.val();
          const c = atoi(v);
          if (c === null)
            throw new BareSetupError(
              `strconv.Atoi: parsing ${JSON.stringify(v)}: invalid syntax`,
              d.file(),
              d.line(),
              'dnssec',
            );
          capacity = c;
          break;
        }
        default:
          throw d.err(`unknown property '${prop}'`);
      }
    }
  }
  return { zones, keys, capacity };
}

/**
 * The configuration: secrets fetched from AWS Secrets Manager (in Corefile order), the KSK/ZSK
 * split decided, and every key checked to sign one of the zones.
 */
export async function resolveDnssec(p: DnssecParsed, env: NodeJS.ProcessEnv = process.env): Promise<DnssecConfig> {
  const keys: SigningKey[] = [];
  let aws: AwsConfig | null = null;
  for (const k of p.keys) {
    if ('key' in k) {
      keys.push(k.key);
      continue;
    }
    try {
      aws ??= await awsConfig(env);
      keys.push(await keyFromSecretsManager(aws, k.secret));
    } catch (e) {
      throw new BareSetupError((e as Error).message, k.file, k.line, 'dnssec');
    }
  }
  const zones = p.zones;
  const zsk = keys.filter(isZSK).length;
  const ksk = keys.filter(isKSK).length;
  for (const k of keys) {
    const owner = k.owner.toLowerCase();
    if (!zones.some((z) => isSubdomain(z, owner))) {
      throw new BareSetupError(
        `key ${k.owner} (keyid: ${k.tag}) can not sign any of the zones`,
        undefined,
        undefined,
        'dnssec',
      );
    }
  }
  return { zones, keys, capacity: p.capacity, splitKeys: zsk > 0 && ksk > 0 };
}

export const dnssec: PluginDef = {
  name: 'dnssec',
  repeat: 'all',
  options: DNSSEC_OPTIONS,
  async setup(d, ctx) {
    let parsed: DnssecParsed;
    try {
      parsed = parseDnssec(d, ctx.block.zones, ctx.resolvePath);
    } catch (e) {
      if (e instanceof ConfigError) throw e;
      throw new BareSetupError((e as Error).message, d.file(), d.line(), 'dnssec');
    }
    const cfg = await resolveDnssec(parsed);
    const cache = new SignatureCache(cfg.capacity);
    let timer: NodeJS.Timeout | null = null;
    ctx.onStartup(() => {
      timer = setInterval(() => cache.sweep(Date.now() / 1000), SWEEP_MS);
      timer.unref();
    });
    ctx.onShutdown(() => {
      if (timer !== null) clearInterval(timer);
    });
    const signer = new ReplySigner(cfg.zones, cfg.keys, cfg.splitKeys, cache);
    const memoCapacity = Math.max(0, cfg.capacity);
    return (next) => new DnssecHandler(next, signer, memoCapacity, ctx.log);
  },
};
