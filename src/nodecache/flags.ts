/**
 * The flags of `clusterdns node-cache` (docs/node-cache.md, "Flags"): upstream node-cache's
 * (k8s.io/dns cmd/node-cache/main.go) with its defaults, CoreDNS's `-conf`, `-pidfile`,
 * `-dns.port`, and the few clusterdns adds (`-rules`, `-kubeapi`, `-workers`). Go flag syntax:
 * one or two dashes, `-name value` or `-name=value`, booleans as `-name` or `-name=false`.
 */
import { isIP } from 'node:net';
import { DurationError, parseGoDurationNs } from '../util/duration.js';

/** How the rules are installed (docs/node-cache.md, "Rules"). */
export type RulesBackend = 'nftables' | 'iptables-nft' | 'iptables-legacy' | 'auto';

export interface NodeCacheFlags {
  /** `-localip`: the addresses to listen on, all of one family. */
  localIPs: string[];
  /** `-conf`: the generated Corefile the server loads. */
  conf: string;
  basecorefile: string;
  /** `-kubednscm`: the kube-dns ConfigMap's mount directory ('' = /etc/kube-dns when it exists). */
  kubednscm: string;
  upstreamsvc: string;
  setupinterface: boolean;
  interfacename: string;
  setupiptables: boolean;
  skipteardown: boolean;
  /** `-syncinterval` in milliseconds. */
  syncIntervalMs: number;
  healthPort: number;
  metricsListenAddress: string;
  reloadwithsignal: boolean;
  pidfile: string;
  dnsPort: number;
  rules: RulesBackend;
  /** `-kubeapi`: API server URL read without credentials ('' = in-cluster service account). */
  kubeapi: string;
  workers: number;
}

export class NodeCacheFlagError extends Error {}

/** `-h`/`-help`: print the usage, exit 0 (Go's flag package). */
export class NodeCacheHelp extends Error {}

type Kind = 'string' | 'bool' | 'int' | 'duration' | 'ips' | 'rules';
interface Spec {
  key: keyof NodeCacheFlags;
  kind: Kind;
  help: string;
  shownDefault?: string;
}

// Help texts of upstream's flags are upstream's; `-syncinterval` says what clusterdns accepts.
const SPECS: Record<string, Spec> = {
  localip: { key: 'localIPs', kind: 'ips', help: 'comma-separated string of ip addresses to bind dnscache to' },
  conf: {
    key: 'conf',
    kind: 'string',
    shownDefault: '"/etc/Corefile"',
    help: 'Corefile to load (generated from -basecorefile)',
  },
  corefile: { key: 'conf', kind: 'string', help: 'Path to the Corefile to be used by node-cache (same as -conf)' },
  basecorefile: {
    key: 'basecorefile',
    kind: 'string',
    shownDefault: '"/etc/coredns/Corefile.base"',
    help: 'Path to the template Corefile for node-cache',
  },
  kubednscm: { key: 'kubednscm', kind: 'string', help: 'Path where the kube-dns configmap will be mounted' },
  upstreamsvc: {
    key: 'upstreamsvc',
    kind: 'string',
    shownDefault: '"kube-dns"',
    help: 'Service name whose cluster IP is upstream for node-cache',
  },
  setupinterface: {
    key: 'setupinterface',
    kind: 'bool',
    shownDefault: 'true',
    help: 'indicates whether network interface should be setup',
  },
  interfacename: {
    key: 'interfacename',
    kind: 'string',
    shownDefault: '"nodelocaldns"',
    help: 'name of the interface to be created',
  },
  setupiptables: {
    key: 'setupiptables',
    kind: 'bool',
    shownDefault: 'true',
    help: 'indicates whether iptables rules should be setup',
  },
  skipteardown: {
    key: 'skipteardown',
    kind: 'bool',
    help: 'indicates whether iptables rules should be torn down on exit',
  },
  syncinterval: {
    key: 'syncIntervalMs',
    kind: 'duration',
    shownDefault: '1m0s',
    help: 'interval to check the rules and interface: a Go duration (60s, 1m) or whole seconds (60)',
  },
  'health-port': { key: 'healthPort', kind: 'int', shownDefault: '"8080"', help: 'port used by health plugin' },
  'metrics-listen-address': {
    key: 'metricsListenAddress',
    kind: 'string',
    shownDefault: '"0.0.0.0:9353"',
    help: 'address to serve metrics on',
  },
  reloadwithsignal: { key: 'reloadwithsignal', kind: 'bool', help: 'use SIGUSR1 on self to reload CoreDNS' },
  pidfile: { key: 'pidfile', kind: 'string', help: 'Path to write pid file' },
  'dns.port': { key: 'dnsPort', kind: 'int', shownDefault: '"53"', help: 'Default port' },
  rules: {
    key: 'rules',
    kind: 'rules',
    shownDefault: '"auto"',
    help: 'how rules are installed: nftables, iptables-nft, iptables-legacy, or auto (nftables when nft is installed, else iptables-nft, else iptables-legacy)',
  },
  kubeapi: {
    key: 'kubeapi',
    kind: 'string',
    help: 'API server URL to read the -upstreamsvc Service from without credentials (default: in-cluster service account)',
  },
  workers: { key: 'workers', kind: 'int', shownDefault: '1', help: 'Number of query threads sharing the DNS sockets' },
};

export function nodeCacheUsage(): string {
  const lines = [
    'Usage of clusterdns node-cache:',
    'Runs clusterdns as a node-local DNS cache listening on the specified ip:port',
    '',
  ];
  for (const name of Object.keys(SPECS).sort()) {
    const s = SPECS[name]!;
    const type = s.kind === 'bool' ? '' : s.kind === 'ips' || s.kind === 'rules' ? 'string' : s.kind;
    const help = s.help + (s.shownDefault !== undefined ? ` (default ${s.shownDefault})` : '');
    lines.push(`  -${name}${type ? ` ${type}` : ''}\n    \t${help}`);
  }
  return lines.join('\n');
}

/**
 * `-syncinterval`: a Go duration, or a bare number of seconds. Upstream declares the flag with
 * flag.DurationVar and multiplies it by time.Second again, so `60` is a parse error there and
 * `60s` overflows into a tick of centuries; here both mean 60 seconds (docs/node-cache.md).
 */
export function parseSyncInterval(text: string): number {
  let ns: number;
  try {
    ns = /^\d+$/.test(text) ? Number(text) * 1e9 : parseGoDurationNs(text);
  } catch (e) {
    if (e instanceof DurationError)
      throw new NodeCacheFlagError(`invalid value "${text}" for flag -syncinterval: ${e.message}`);
    throw e;
  }
  if (ns <= 0) throw new NodeCacheFlagError(`invalid value "${text}" for flag -syncinterval: must be positive`);
  return ns / 1e6;
}

/** `-localip`: comma-separated addresses of one family (upstream's check). */
export function parseLocalIPs(text: string): string[] {
  const ips = text.split(',');
  for (const ip of ips) if (isIP(ip) === 0) throw new NodeCacheFlagError(`invalid localip specified - "${ip}"`);
  const v6 = isIP(ips[0]!) === 6;
  for (const ip of ips)
    if ((isIP(ip) === 6) !== v6)
      throw new NodeCacheFlagError(`unexpected IP Family for localIP - "${ip}", want IPv6=${v6}`);
  return ips;
}

export function parseNodeCacheFlags(argv: readonly string[]): NodeCacheFlags {
  const f: NodeCacheFlags = {
    localIPs: [],
    conf: '/etc/Corefile',
    basecorefile: '/etc/coredns/Corefile.base',
    kubednscm: '',
    upstreamsvc: 'kube-dns',
    setupinterface: true,
    interfacename: 'nodelocaldns',
    setupiptables: true,
    skipteardown: false,
    syncIntervalMs: 60_000,
    healthPort: 8080,
    metricsListenAddress: '0.0.0.0:9353',
    reloadwithsignal: false,
    pidfile: '',
    dnsPort: 53,
    rules: 'auto',
    kubeapi: '',
    workers: 1,
  };
  let localSeen = false;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (!arg.startsWith('-') || arg === '-' || arg === '--')
      throw new NodeCacheFlagError(`extra command line arguments: [${argv.slice(i).join(' ')}]`);
    const body = arg.startsWith('--') ? arg.slice(2) : arg.slice(1);
    const eq = body.indexOf('=');
    const name = eq >= 0 ? body.slice(0, eq) : body;
    const spec = Object.prototype.hasOwnProperty.call(SPECS, name) ? SPECS[name] : undefined;
    if (!spec) {
      if (name === 'h' || name === 'help') throw new NodeCacheHelp('help requested');
      throw new NodeCacheFlagError(`flag provided but not defined: -${name}`);
    }
    let value = eq >= 0 ? body.slice(eq + 1) : undefined;
    if (spec.kind === 'bool') {
      const v = value ?? 'true';
      if (!/^(1|0|t|f|true|false)$/i.test(v))
        throw new NodeCacheFlagError(`invalid boolean value "${v}" for -${name}: parse error`);
      (f[spec.key] as boolean) = /^(1|t|true)$/i.test(v);
      continue;
    }
    if (value === undefined) {
      if (i + 1 >= argv.length) throw new NodeCacheFlagError(`flag needs an argument: -${name}`);
      value = argv[++i]!;
    }
    switch (spec.kind) {
      case 'string':
        (f[spec.key] as string) = value;
        break;
      case 'int':
        if (!/^\d+$/.test(value) || Number(value) > 65535)
          throw new NodeCacheFlagError(`invalid value "${value}" for flag -${name}`);
        (f[spec.key] as number) = Number(value);
        break;
      case 'duration':
        f.syncIntervalMs = parseSyncInterval(value);
        break;
      case 'ips':
        f.localIPs = parseLocalIPs(value);
        localSeen = true;
        break;
      case 'rules':
        if (!['nftables', 'iptables-nft', 'iptables-legacy', 'auto'].includes(value))
          throw new NodeCacheFlagError(
            `invalid value "${value}" for flag -rules: want nftables, iptables-nft, iptables-legacy or auto`,
          );
        f.rules = value as RulesBackend;
        break;
    }
  }
  // Upstream parses the empty default as one invalid address.
  if (!localSeen) throw new NodeCacheFlagError('invalid localip specified - ""');
  if (f.workers < 1) throw new NodeCacheFlagError(`invalid value "${f.workers}" for flag -workers: must be at least 1`);
  return f;
}
