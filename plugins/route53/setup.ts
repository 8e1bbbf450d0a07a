/**
 * `route53 [ZONE:HOSTED_ZONE_ID...] { aws_access_key; aws_endpoint; credentials; fallthrough;
 * refresh }` (README.md), read token by token as CoreDNS 1.15.0's setup.go does, so that every
 * error carries its words and file:line. Each occurrence is one handler with its own zones.
 */
import type { Dispenser } from '../../src/corefile/dispenser.js';
import { ConfigError, UnwrappedSetupError } from '../../src/corefile/types.js';
import { directive, option, str, zoneArg } from '../../src/corefile/options.js';
import { normalizeZoneArgs } from '../../src/dns/name.js';
import { parseFallthrough } from '../../src/fallthrough.js';
import { HostedZones } from '../../src/cloudzone/hosted.js';
import { refreshText } from '../../src/cloudzone/refresh.js';
import { parseGoDuration } from '../../src/util/duration.js';
import type { Logger } from '../../src/log.js';
import type { CredentialOptions } from '../../src/aws/config.js';

export const ROUTE53_OPTIONS = directive('route53', {
  args: { rest: str('ZONE:HOSTED_ZONE_ID'), min: 0 },
  options: [
    option('aws_access_key', { args: [str('AWS_ACCESS_KEY_ID'), str('AWS_SECRET_ACCESS_KEY')], min: 0 }),
    option('aws_endpoint', { args: [str('ENDPOINT')] }),
    option('credentials', { args: [str('PROFILE'), str('FILENAME')], min: 1 }),
    option('fallthrough', { rest: zoneArg(), min: 0 }),
    option('refresh', { args: [str('DURATION')] }),
  ],
});

export interface Route53Config {
  readonly zones: HostedZones;
  /** The zone name each hosted zone id was given with, as written (the API is asked with it). */
  readonly asWritten: Map<string, string>;
  readonly credentials: CredentialOptions;
  readonly endpoint: string | null;
  fallthrough: string[] | null;
  refreshMs: number;
  /** The directive's position, for the errors of the first fetch (CoreDNS's setup errors). */
  readonly file: string;
  readonly line: number;
}

const plugin = 'route53';

/** CoreDNS's `plugin.Error("route53", c.Errf(...))`. */
function err(d: Dispenser, message: string): ConfigError {
  return new ConfigError(message, d.file(), d.line(), plugin);
}

/** Parse one occurrence (the dispenser is on the directive). */
export function parseRoute53(d: Dispenser, log: Logger): Route53Config {
  const file = d.file();
  const line = d.line();
  const zones = new HostedZones();
  const asWritten = new Map<string, string>();
  const seen = new Set<string>();
  for (const arg of d.remainingArgs()) {
    const i = arg.indexOf(':');
    const dns = i < 0 ? '' : arg.slice(0, i);
    const id = i < 0 ? '' : arg.slice(i + 1);
    if (dns === '' || id === '') throw err(d, `invalid zone ${JSON.stringify(arg)}`);
    if (seen.has(arg)) throw err(d, `conflict zone ${JSON.stringify(arg)}`);
    seen.add(arg);
    const name = normalizeZoneArgs([dns])[0]!;
    const hz = zones.add(name, id);
    asWritten.set(`${name} ${hz.id}`, dns);
  }
  let staticKeys: CredentialOptions['staticKeys'];
  let profile: string | undefined;
  let configFiles: string[] | undefined;
  let endpoint: string | null = null;
  let fallthrough: string[] | null = null;
  let refreshMs = 60_000;
  while (d.nextBlock()) {
    switch (d.val()) {
      case 'aws_access_key': {
        const v = d.remainingArgs();
        if (v.length < 2) throw err(d, `invalid access key: '[${v.join(' ')}]'`);
        staticKeys = { accessKeyId: v[0]!, secretAccessKey: v[1]! };
        log.warning(
          'Save aws_access_key in Corefile has been deprecated, please use other authentication methods instead',
        );
        break;
      }
      case 'aws_endpoint':
        if (!d.nextArg()) throw err(d, d.argErr().message);
        endpoint = d.val();
        break;
      case 'upstream':
        d.remainingArgs();
        break;
      case 'credentials':
        // CoreDNS returns c.ArgErr() here without plugin.Error: no `plugin/route53:` prefix.
        if (!d.nextArg()) throw new UnwrappedSetupError(d.argErr().message, d.file(), d.line(), plugin);
        profile = d.val();
        if (d.nextArg()) {
          configFiles = [d.val()];
          if (goParseBool(process.env.AWS_SDK_LOAD_CONFIG ?? '')) configFiles.push(defaultConfigFile());
        }
        break;
      case 'fallthrough':
        fallthrough = parseFallthrough(normalizeZoneArgs(d.remainingArgs()));
        break;
      case 'refresh': {
        if (!d.nextArg()) throw err(d, d.argErr().message);
        const text = refreshText(d.val());
        try {
          refreshMs = parseGoDuration(text);
        } catch (e) {
          throw err(d, `Unable to parse duration: ${(e as Error).message}`);
        }
        if (refreshMs <= 0) throw err(d, `refresh interval must be greater than 0: ${JSON.stringify(text)}`);
        break;
      }
      default:
        throw err(d, `unknown property ${JSON.stringify(d.val())}`);
    }
  }
  const credentials: CredentialOptions = {
    ...(staticKeys ? { staticKeys } : {}),
    ...(profile !== undefined ? { profile } : {}),
    ...(configFiles ? { configFiles } : {}),
  };
  return { zones, asWritten, credentials, endpoint, fallthrough, refreshMs, file, line };
}

/** Go's strconv.ParseBool truthy values. */
function goParseBool(v: string): boolean {
  return ['1', 't', 'T', 'TRUE', 'true', 'True'].includes(v);
}

/** aws-sdk-go-v2's config.DefaultSharedConfigFilename(). */
function defaultConfigFile(): string {
  return `${process.env.HOME ?? ''}/.aws/config`;
}
