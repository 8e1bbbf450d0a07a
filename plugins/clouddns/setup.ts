/**
 * `clouddns [ZONE:PROJECT_ID:HOSTED_ZONE_NAME...] { credentials [FILENAME]; endpoint ENDPOINT;
 * fallthrough [ZONES...]; refresh DURATION }` (README.md), read token by token as CoreDNS 1.15.0's
 * setup.go does. The credentials file's `type` is checked here, as CoreDNS does while parsing.
 */
import { readFileSync } from 'node:fs';
import type { Dispenser } from '../../src/corefile/dispenser.js';
import { directive, option, str, zoneArg } from '../../src/corefile/options.js';
import { ConfigError } from '../../src/corefile/types.js';
import { HostedZones } from '../../src/cloudzone/hosted.js';
import { refreshText } from '../../src/cloudzone/refresh.js';
import { fqdn, normalizeZoneArgs } from '../../src/dns/name.js';
import { parseFallthrough } from '../../src/fallthrough.js';
import { parseGoDuration } from '../../src/util/duration.js';
import { openErrorText } from '../../src/zone/load.js';

export const CLOUDDNS_OPTIONS = directive('clouddns', {
  args: { rest: str('ZONE:PROJECT_ID:HOSTED_ZONE_NAME'), min: 0 },
  options: [
    option('credentials', { args: [str('FILENAME')] }),
    option('endpoint', { args: [str('ENDPOINT')] }),
    option('fallthrough', { rest: zoneArg(), min: 0 }),
    option('refresh', { args: [str('DURATION')] }),
  ],
});

export interface CloudDNSConfig {
  /** Hosted zone ids are `PROJECT:MANAGED_ZONE`. */
  readonly zones: HostedZones;
  /** The zone name of each hosted zone as CoreDNS prints it (dns.Fqdn of the written name). */
  readonly printed: Map<string, string>;
  readonly credentialsFile: string | null;
  readonly endpoint: string | null;
  readonly fallthrough: string[] | null;
  readonly refreshMs: number;
  readonly file: string;
  readonly line: number;
}

const KNOWN_TYPES = ['service_account', 'authorized_user', 'impersonated_service_account', 'external_account'];

/** CoreDNS's getCredType: the credentials file's `type`, one the Google client knows. */
function credType(path: string): string {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    throw new Error(openErrorText(path, e));
  }
  let t: unknown;
  try {
    t = (JSON.parse(text) as { type?: unknown }).type;
  } catch (e) {
    throw new Error((e as Error).message);
  }
  if (typeof t !== 'string' || t === '') throw new Error('missing `type` field in credential');
  if (!KNOWN_TYPES.includes(t)) throw new Error(`unknown credential type: ${t}`);
  return t;
}

export function parseCloudDNS(d: Dispenser): CloudDNSConfig {
  const err = (m: string): ConfigError => new ConfigError(m, d.file(), d.line(), 'clouddns');
  const file = d.file();
  const line = d.line();
  const zones = new HostedZones();
  const printed = new Map<string, string>();
  const seen = new Set<string>();
  for (const arg of d.remainingArgs()) {
    const parts = arg.split(':');
    const [dnsName, project] = parts;
    const hosted = parts.slice(2).join(':');
    if (parts.length < 3 || !dnsName || !project || !hosted) throw err(`invalid zone ${JSON.stringify(arg)}`);
    if (seen.has(arg)) throw err(`conflict zone ${JSON.stringify(arg)}`);
    seen.add(arg);
    const hz = zones.add(normalizeZoneArgs([dnsName])[0]!, `${project}:${hosted}`);
    printed.set(`${hz.name} ${hz.id}`, fqdn(dnsName));
  }
  let credentialsFile: string | null = null;
  let endpoint: string | null = null;
  let fallthrough: string[] | null = null;
  let refreshMs = 60_000;
  while (d.nextBlock()) {
    switch (d.val()) {
      case 'upstream':
        d.remainingArgs();
        break;
      case 'credentials':
        if (!d.nextArg()) throw err(d.argErr().message);
        try {
          credType(d.val());
        } catch (e) {
          throw err(`invalid credentials file ${JSON.stringify(d.val())}: ${(e as Error).message}`);
        }
        credentialsFile = d.val();
        break;
      case 'endpoint':
        if (!d.nextArg()) throw err(d.argErr().message);
        endpoint = d.val();
        break;
      case 'fallthrough':
        fallthrough = parseFallthrough(normalizeZoneArgs(d.remainingArgs()));
        break;
      case 'refresh': {
        if (!d.nextArg()) throw err(d.argErr().message);
        const text = refreshText(d.val());
        try {
          refreshMs = parseGoDuration(text);
        } catch (e) {
          throw err(`unable to parse duration: ${(e as Error).message}`);
        }
        if (refreshMs <= 0) throw err(`refresh interval must be greater than 0: ${JSON.stringify(text)}`);
        break;
      }
      default:
        throw err(`unknown property ${JSON.stringify(d.val())}`);
    }
  }
  return { zones, printed, credentialsFile, endpoint, fallthrough, refreshMs, file, line };
}
