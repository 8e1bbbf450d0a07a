/**
 * The Corefile node-cache serves, generated from the `-basecorefile` template as upstream
 * node-cache generates it (k8s.io/dns cmd/node-cache/app/configmap.go, `updateCorefile`):
 * `__PILLAR__UPSTREAM__SERVERS__`, `__PILLAR__CLUSTER__DNS__`, `__PILLAR__LOCAL__DNS__` and
 * `__PILLAR__DNS__SERVER__` replaced, one server block appended per kube-dns stub domain
 * (docs/node-cache.md, "The generated Corefile"). Pure: no I/O, so the golden tests compare it.
 */
import type { KubeDnsConfig } from './kubednsconfig.js';

export const UPSTREAM_SERVERS_VAR = '__PILLAR__UPSTREAM__SERVERS__';
export const CLUSTER_DNS_VAR = '__PILLAR__CLUSTER__DNS__';
export const LOCAL_DNS_VAR = '__PILLAR__LOCAL__DNS__';
export const DNS_SERVER_VAR = '__PILLAR__DNS__SERVER__';

/** Upstream's cache TTL for stub domain blocks. */
const STUB_CACHE_TTL = 30;

// Upstream's texts, byte for byte: the TCP block is what a custom upstream list replaces.
const UPSTREAM_TCP_BLOCK = `
    forward . ${UPSTREAM_SERVERS_VAR} {
            force_tcp
    }
`;
const UPSTREAM_UDP_BLOCK = `
    forward . ${UPSTREAM_SERVERS_VAR}
`;

export interface CorefileInputs {
  /** The template's text. */
  base: string;
  localIPs: readonly string[];
  port: number;
  /** The `-upstreamsvc` Service's cluster IP; null when unknown (upstream writes Go's `<nil>`). */
  clusterDNS: string | null;
  kubeDns: KubeDnsConfig;
}

export interface GeneratedCorefile {
  text: string;
  /** What `__PILLAR__UPSTREAM__SERVERS__` became, for the log line. */
  upstreamServers: string;
  /** The template had no TCP upstream block to turn into UDP (upstream logs a warning). */
  noTcpBlock: boolean;
}

function stubDomainBlock(domain: string, servers: readonly string[], localIPs: string, port: number): string {
  return `
${domain}:${port} {
    errors
    cache ${STUB_CACHE_TTL}
    bind ${localIPs}
    forward . ${servers.join(' ')}
}
`;
}

export function generateCorefile(inp: CorefileInputs): GeneratedCorefile {
  const localIPs = inp.localIPs.join(' ');
  let base = inp.base;
  let noTcpBlock = false;
  let upstreamServers = inp.kubeDns.upstreamNameservers.join(' ');
  if (upstreamServers === '') {
    // forward reads the node's resolv.conf; the template's force_tcp stays.
    upstreamServers = '/etc/resolv.conf';
    base = base.replaceAll(UPSTREAM_SERVERS_VAR, upstreamServers);
  } else {
    // Custom upstreams are asked over UDP, as upstream does.
    base = base.replaceAll(UPSTREAM_TCP_BLOCK, UPSTREAM_UDP_BLOCK.replaceAll(UPSTREAM_SERVERS_VAR, upstreamServers));
    if (base.includes(UPSTREAM_SERVERS_VAR)) {
      noTcpBlock = true;
      base = base.replaceAll(UPSTREAM_SERVERS_VAR, upstreamServers);
    }
  }
  base = base.replaceAll(CLUSTER_DNS_VAR, inp.clusterDNS ?? '<nil>');
  base = base.replaceAll(LOCAL_DNS_VAR, localIPs);
  base = base.replaceAll(DNS_SERVER_VAR, '');
  // Upstream walks a Go map (random order); sorted here so that the file only changes with its input.
  let stubs = '';
  for (const domain of Object.keys(inp.kubeDns.stubDomains).sort())
    stubs += stubDomainBlock(domain, inp.kubeDns.stubDomains[domain]!, localIPs, inp.port);
  return { text: base + stubs, upstreamServers, noTcpBlock };
}
