/**
 * The `coredns_dns_*` family and the process-wide metrics (plugins.md, prometheus). They live in
 * the core because the server itself records queries it rejects before any chain
 * (`zone="dropped"`), whether or not a block has `prometheus`.
 */
import { counter, exponentialBuckets, gauge, histogram } from './registry.js';

const SIZE_BUCKETS = [0, 100, 200, 300, 400, 511, 1023, 2047, 4095, 8291, 16000, 32000, 48000, 64000];

export const requestsTotal = counter({
  name: 'coredns_dns_requests_total',
  help: 'Counter of DNS requests made per zone, protocol and family.',
  labelNames: ['server', 'zone', 'view', 'proto', 'family', 'type'] as const,
});

export const requestDuration = histogram({
  name: 'coredns_dns_request_duration_seconds',
  help: 'Histogram of the time (in seconds) each request took per zone.',
  labelNames: ['server', 'zone', 'view'] as const,
  buckets: exponentialBuckets(0.00025, 2, 16),
});

export const requestSize = histogram({
  name: 'coredns_dns_request_size_bytes',
  help: 'Size of the EDNS0 UDP buffer in bytes (64K for TCP) per zone and protocol.',
  labelNames: ['server', 'zone', 'view', 'proto'] as const,
  buckets: SIZE_BUCKETS,
});

export const responseSize = histogram({
  name: 'coredns_dns_response_size_bytes',
  help: 'Size of the returned response in bytes.',
  labelNames: ['server', 'zone', 'view', 'proto'] as const,
  buckets: SIZE_BUCKETS,
});

export const responsesTotal = counter({
  name: 'coredns_dns_responses_total',
  help: 'Counter of response status codes.',
  labelNames: ['server', 'zone', 'view', 'rcode', 'plugin'] as const,
});

export const doRequestsTotal = counter({
  name: 'coredns_dns_do_requests_total',
  help: 'Counter of DNS requests with DO bit set per zone.',
  labelNames: ['server', 'zone', 'view'] as const,
});

export const panicsTotal = counter({
  name: 'coredns_panics_total',
  help: 'A metrics that counts the number of panics.',
});

export const pluginEnabled = gauge({
  name: 'coredns_plugin_enabled',
  help: 'A metric that indicates whether a plugin is enabled on per server and zone basis.',
  labelNames: ['server', 'zone', 'view', 'name'] as const,
});

export const buildInfo = gauge({
  name: 'coredns_build_info',
  help: 'A metric with a constant \'1\' value labeled by version, revision, and goversion from which CoreDNS was built.',
  labelNames: ['version', 'revision', 'goversion'] as const,
});

const TYPES = new Set(['A', 'AAAA', 'CNAME', 'DNSKEY', 'DS', 'MX', 'NSEC3', 'NSEC', 'NS', 'PTR', 'RRSIG', 'SOA', 'SRV', 'TXT', 'HTTPS', 'SVCB', 'IXFR', 'AXFR', 'ANY']);

/** The `type` label value: the mnemonic for the common types, else `other`. */
export function typeLabel(mnemonic: string): string {
  return TYPES.has(mnemonic) ? mnemonic : 'other';
}
