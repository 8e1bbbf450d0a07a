/**
 * `sign DBFILE [ZONES...] { key file KEY...; key directory DIR; directory DIR }` (README.md;
 * docs/plugins.md, sign): off-line signing of zone files, as CoreDNS 1.15.0's plugin/sign. Not in
 * the query chain: at start-up each zone whose signed file is missing or due is signed in the
 * background, and every 5 hours the check runs again (CoreDNS's schedule: resign.ts).
 */
import { join } from 'node:path';
import { directive, file, oneOf, option, str, zoneArg } from '../../src/corefile/options.js';
import { BareSetupError, ConfigError } from '../../src/corefile/types.js';
import type { Dispenser } from '../../src/corefile/dispenser.js';
import { normalizeZoneArgs } from '../../src/dns/name.js';
import { isKSK, keyBase, readKeyPair, type SigningKey } from '../../src/dnssec/keys.js';
import type { Logger } from '../../src/log.js';
import { formatGoDuration } from '../../src/util/duration.js';
import type { PluginDef } from '../../src/plugin.js';
import { resignReason, timeFmt } from './resign.js';
import { signZone, writeSigned, zoneText, type SignerSpec } from './zonesigner.js';

export const SIGN_OPTIONS = directive('sign', {
  args: { args: [file('DBFILE')], rest: zoneArg(), min: 1 },
  options: [
    option('key', { args: [oneOf(['file', 'directory'])], rest: str('KEY'), min: 2 }),
    option('directory', { args: [str('DIR')] }),
  ],
});

/** Check the signed zones this often (CoreDNS's durationRefreshHours). */
export const REFRESH_MS = 5 * 3600_000;

export interface Signer extends SignerSpec {
  /** `db.<origin>signed`. */
  readonly signedfile: string;
}

/** readKeyPair of plugin/sign/keys.go: the key must be a CSK/KSK. */
function readSignKey(base: string): SigningKey {
  const k = readKeyPair(base);
  if (!isKSK(k)) throw new Error(`DNSKEY in ${JSON.stringify(`${base}.key`)} is not a CSK/KSK`);
  return k;
}

/**
 * Every occurrence. `resolvePath` applies the block's root (SetupContext.resolvePath) to DBFILE,
 * the key files and `directory`, as CoreDNS's setup.go and keys.go do.
 */
export function parseSign(
  d: Dispenser,
  blockZones: readonly string[],
  random: () => number = Math.random,
  resolvePath = (p: string): string => p,
): Signer[] {
  const all: Signer[] = [];
  while (d.next()) {
    const bare = (msg: string): BareSetupError => new BareSetupError(msg, d.file(), d.line(), 'sign');
    if (!d.nextArg()) throw d.argErr();
    // Rooted before the check, so the error names the joined path as CoreDNS's does.
    const dbfile = resolvePath(d.val());
    if (dbfile.includes('\uFFFD')) throw bare(`dbfile ${JSON.stringify(dbfile)} contains invalid characters`);
    const args = d.remainingArgs();
    const origins = args.length > 0 ? normalizeZoneArgs(args) : [...blockZones];
    const signers = origins.map((origin) => ({
      origin,
      dbfile,
      keys: [] as SigningKey[],
      directory: '/var/lib/coredns',
      signedfile: `db.${origin}signed`,
      jitterIncepS: -18 * 3600 * random(),
      jitterExpirS: 5 * 86400 * random(),
    }));
    while (d.nextBlock()) {
      const prop = d.val();
      if (prop === 'key') {
        if (!d.nextArg()) throw d.argErr();
        const how = d.val();
        const keys: SigningKey[] = [];
        if (how === 'file') {
          const names = d.remainingArgs();
          if (names.length === 0) throw d.argErr();
          for (const n of names) {
            try {
              keys.push(readSignKey(resolvePath(keyBase(n))));
            } catch (e) {
              throw bare((e as Error).message);
            }
          }
        } else if (how === 'directory') {
          throw bare('directory: not implemented');
        }
        for (const s of signers) s.keys.push(...keys);
      } else if (prop === 'directory') {
        const dir = d.remainingArgs();
        if (dir.length !== 1) throw bare('can only be one argument after "directory"');
        for (const s of signers) s.directory = resolvePath(dir[0]!);
      } else {
        throw d.err(`unknown property '${prop}'`);
      }
    }
    all.push(...signers);
  }
  return all;
}

function keyTags(s: Signer): string {
  return s.keys.map((k) => String(k.tag)).join(',');
}

/** signAndLog: sign, log why, write the file, log the outcome and the next check. */
export function signAndLog(s: Signer, why: string, log: Logger): void {
  const start = Date.now();
  const next = timeFmt(start + REFRESH_MS);
  let text: string;
  let serial: number;
  try {
    const z = signZone(s, start / 1000);
    text = zoneText(z);
    serial = z.serial;
  } catch (e) {
    log.info(`Signing ${JSON.stringify(s.origin)} because ${why}`);
    log.warning(
      `Error signing ${JSON.stringify(s.origin)} with key tags ${JSON.stringify(keyTags(s))} in ${formatGoDuration(Date.now() - start)}: ${(e as Error).message}, next: ${next}`,
    );
    return;
  }
  log.info(`Signing ${JSON.stringify(s.origin)} because ${why}`);
  try {
    writeSigned(s.directory, s.signedfile, text);
  } catch (e) {
    log.warning(
      `Error signing ${JSON.stringify(s.origin)}: failed to move zone file into place: ${(e as Error).message}`,
    );
    return;
  }
  const elapsed = ((Date.now() - start) / 1000).toFixed(6);
  log.info(
    `Successfully signed zone ${JSON.stringify(s.origin)} in ${JSON.stringify(join(s.directory, s.signedfile))} with key tags ${JSON.stringify(keyTags(s))} and ${serial} SOA serial, elapsed ${elapsed}, next: ${next}`,
  );
}

export const sign: PluginDef = {
  name: 'sign',
  repeat: 'all',
  options: SIGN_OPTIONS,
  setup(d, ctx) {
    let signers: Signer[];
    try {
      signers = parseSign(d, ctx.block.zones, Math.random, ctx.resolvePath);
    } catch (e) {
      if (e instanceof ConfigError) throw e;
      throw new BareSetupError((e as Error).message, d.file(), d.line(), 'sign');
    }
    const timers: NodeJS.Timeout[] = [];
    // One signer per process: query threads (docs/multicore.md) leave it to the main thread.
    if (ctx.process.queryThread) return null;
    ctx.onStartup(() => {
      for (const s of signers) {
        const path = join(s.directory, s.signedfile);
        const why = resignReason(path, Date.now());
        if (why === null) {
          ctx.log.info(
            `Skipping signing zone ${JSON.stringify(s.origin)} in ${JSON.stringify(path)}: signatures are valid`,
          );
        } else {
          // CoreDNS signs in a goroutine: start-up does not wait for it.
          setImmediate(() => signAndLog(s, why, ctx.log));
        }
        const t = setInterval(() => {
          const again = resignReason(path, Date.now());
          if (again !== null) signAndLog(s, again, ctx.log);
        }, REFRESH_MS);
        t.unref();
        timers.push(t);
      }
    });
    ctx.onShutdown(() => {
      for (const t of timers) clearInterval(t);
    });
    return null;
  },
};
