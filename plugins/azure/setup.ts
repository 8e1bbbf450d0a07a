/**
 * `azure RESOURCE_GROUP:ZONE... { tenant; client; secret; subscription; environment; fallthrough;
 * access; refresh }` (README.md), read token by token as CoreDNS 1.15.0's parse does: every
 * occurrence of the block into one plugin (settings shared, `access` for that occurrence's zones),
 * errors in its words.
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

export const AZURE_OPTIONS = directive('azure', {
  args: { rest: str('RESOURCE_GROUP:ZONE'), min: 1 },
  options: [
    option('tenant', { args: [str('TENANT_ID')] }),
    option('client', { args: [str('CLIENT_ID')] }),
    option('secret', { args: [str('CLIENT_SECRET')] }),
    option('subscription', { args: [str('SUBSCRIPTION_ID')] }),
    option('environment', { args: [str('ENVIRONMENT')] }),
    option('fallthrough', { rest: zoneArg(), min: 0 }),
    option('access', { args: [str('ACCESS')] }),
    option('refresh', { args: [str('DURATION')] }),
  ],
});

/** An Azure cloud: where its Resource Manager and Active Directory are. */
export interface AzureEnvironment {
  readonly name: string;
  readonly resourceManagerEndpoint: string;
  readonly activeDirectoryEndpoint: string;
}

const CLOUDS: Readonly<Record<string, AzureEnvironment>> = {
  AZURECHINACLOUD: {
    name: 'AzureChinaCloud',
    resourceManagerEndpoint: 'https://management.chinacloudapi.cn/',
    activeDirectoryEndpoint: 'https://login.chinacloudapi.cn/',
  },
  AZUREGERMANCLOUD: {
    name: 'AzureGermanCloud',
    resourceManagerEndpoint: 'https://management.microsoftazure.de/',
    activeDirectoryEndpoint: 'https://login.microsoftonline.de/',
  },
  AZUREPUBLICCLOUD: {
    name: 'AzurePublicCloud',
    resourceManagerEndpoint: 'https://management.azure.com/',
    activeDirectoryEndpoint: 'https://login.microsoftonline.com/',
  },
  AZUREUSGOVERNMENTCLOUD: {
    name: 'AzureUSGovernmentCloud',
    resourceManagerEndpoint: 'https://management.usgovcloudapi.net/',
    activeDirectoryEndpoint: 'https://login.microsoftonline.us/',
  },
};

/** go-autorest's EnvironmentFromName; AZURESTACKCLOUD is read from AZURE_ENVIRONMENT_FILEPATH. */
export function environmentFromName(
  name: string,
  env: Readonly<Record<string, string | undefined>> = process.env,
): AzureEnvironment {
  const upper = name.toUpperCase();
  if (upper === 'AZURESTACKCLOUD') {
    const path = env.AZURE_ENVIRONMENT_FILEPATH ?? '';
    let j: { name?: string; resourceManagerEndpoint?: string; activeDirectoryEndpoint?: string };
    try {
      j = JSON.parse(readFileSync(path, 'utf8')) as typeof j;
    } catch (e) {
      throw new Error(`autorest/azure: ${(e as Error).message}`);
    }
    return {
      name: j.name ?? 'AzureStackCloud',
      resourceManagerEndpoint: j.resourceManagerEndpoint ?? '',
      activeDirectoryEndpoint: j.activeDirectoryEndpoint ?? '',
    };
  }
  const e = CLOUDS[upper];
  if (!e) throw new Error(`autorest/azure: There is no cloud environment matching the name ${JSON.stringify(upper)}`);
  return e;
}

export interface AzureConfig {
  /** Hosted zone ids are resource groups. */
  readonly zones: HostedZones;
  /** `rg zoneAsWritten` per hosted zone, and whether it is a private zone. */
  readonly hosted: Map<string, { readonly resourceGroup: string; readonly zone: string; readonly private: boolean }>;
  readonly tenant: string;
  readonly client: string;
  readonly secret: string;
  readonly subscription: string;
  readonly environment: AzureEnvironment;
  readonly fallthrough: string[] | null;
  readonly refreshMs: number;
}

export function parseAzure(d: Dispenser): AzureConfig {
  const err = (m: string): ConfigError => new ConfigError(m, d.file(), d.line(), 'azure');
  const argErr = (): ConfigError => err(d.argErr().message);
  const zones = new HostedZones();
  const order: { rg: string; zone: string }[] = [];
  const access = new Map<string, string>();
  const settings = { tenant: '', client: '', secret: '', subscription: '' };
  let environment = CLOUDS.AZUREPUBLICCLOUD!;
  let fallthrough: string[] | null = null;
  let refreshMs = 60_000;
  while (d.next()) {
    const current: string[] = [];
    for (const arg of d.remainingArgs()) {
      const i = arg.indexOf(':');
      const rg = i < 0 ? '' : arg.slice(0, i);
      const zone = i < 0 ? '' : arg.slice(i + 1);
      if (rg === '' || zone === '') throw err(`invalid resource group/zone: ${JSON.stringify(arg)}`);
      if (access.has(rg + zone)) throw err(`conflicting zone: ${JSON.stringify(arg)}`);
      access.set(rg + zone, 'public');
      current.push(rg + zone);
      order.push({ rg, zone });
    }
    while (d.nextBlock()) {
      const key = d.val();
      switch (key) {
        case 'subscription':
        case 'tenant':
        case 'client':
        case 'secret':
          if (!d.nextArg()) throw argErr();
          settings[key] = d.val();
          break;
        case 'environment':
          if (!d.nextArg()) throw argErr();
          try {
            environment = environmentFromName(d.val());
          } catch (e) {
            throw err(`cannot set azure environment: ${JSON.stringify((e as Error).message)}`);
          }
          break;
        case 'fallthrough':
          fallthrough = parseFallthrough(normalizeZoneArgs(d.remainingArgs()));
          break;
        case 'access': {
          if (!d.nextArg()) throw argErr();
          const v = d.val();
          if (v !== 'public' && v !== 'private') throw err(`invalid access value: can be public/private, found: ${v}`);
          for (const k of current) access.set(k, v);
          break;
        }
        case 'refresh': {
          if (!d.nextArg()) throw argErr();
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
          throw err(`unknown property: ${JSON.stringify(key)}`);
      }
    }
  }
  const hosted = new Map<string, { resourceGroup: string; zone: string; private: boolean }>();
  for (const { rg, zone } of order) {
    const hz = zones.add(normalizeZoneArgs([fqdn(zone)])[0]!, `${rg}:${zone}`);
    hosted.set(hz.id, { resourceGroup: rg, zone, private: access.get(rg + zone) === 'private' });
  }
  return { zones, hosted, ...settings, environment, fallthrough, refreshMs };
}
