/**
 * The `coredns_dns_*` family and the process-wide metrics (docs/plugins.md, prometheus). They live in
 * the core because the server itself records queries it rejects before any chain
 * (`zone="dropped"`), whether or not a block has `prometheus`.
 */
import { qtypeName, rcodeName } from '../dns/constants.js';
import { CounterCell, flushOnCollect, HistCell } from './batch.js';
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
  help: "A metric with a constant '1' value labeled by version, revision, and goversion from which CoreDNS was built.",
  labelNames: ['version', 'revision', 'goversion'] as const,
});

const TYPES = new Set([
  'A',
  'AAAA',
  'CNAME',
  'DNSKEY',
  'DS',
  'MX',
  'NSEC3',
  'NSEC',
  'NS',
  'PTR',
  'RRSIG',
  'SOA',
  'SRV',
  'TXT',
  'HTTPS',
  'SVCB',
  'IXFR',
  'AXFR',
  'ANY',
]);

/** The `type` label value: the mnemonic for the common types, else `other`. */
export function typeLabel(mnemonic: string): string {
  return TYPES.has(mnemonic) ? mnemonic : 'other';
}

/** The batched cells of the `coredns_dns_*` metrics, read on every scrape. */
for (const metric of [requestsTotal, requestDuration, requestSize, responseSize, responsesTotal, doRequestsTotal])
  flushOnCollect(metric);

export class ProtoCells {
  readonly reqSize: HistCell;
  readonly respSize: HistCell;
  /** (family << 16 | qtype) → requests counter cell. */
  private readonly requests = new Map<number, CounterCell>();

  constructor(
    private readonly server: string,
    private readonly zone: string,
    private readonly proto: string,
    private readonly view: string = '',
  ) {
    this.reqSize = new HistCell(requestSize, { server, zone, view, proto });
    this.respSize = new HistCell(responseSize, { server, zone, view, proto });
  }

  request(family: number, qtype: number): CounterCell {
    const key = (family << 16) | qtype;
    let c = this.requests.get(key);
    if (c === undefined) {
      const labels = {
        server: this.server,
        zone: this.zone,
        view: this.view,
        proto: this.proto,
        family: String(family),
        type: typeLabel(qtypeName(qtype)),
      };
      c = new CounterCell(requestsTotal, labels);
      this.requests.set(key, c);
    }
    return c;
  }
}

export class ZoneCells {
  readonly duration: HistCell;
  readonly doRequests: CounterCell;
  readonly udp: ProtoCells;
  readonly tcp: ProtoCells;
  /** rcode → plugin → responses counter cell. */
  private readonly responses = new Map<number, Map<string, CounterCell>>();

  constructor(
    private readonly server: string,
    private readonly zone: string,
    private readonly view: string = '',
  ) {
    this.duration = new HistCell(requestDuration, { server, zone, view });
    this.doRequests = new CounterCell(doRequestsTotal, { server, zone, view });
    this.udp = new ProtoCells(server, zone, 'udp', view);
    this.tcp = new ProtoCells(server, zone, 'tcp', view);
  }

  response(rcode: number, plugin: string): CounterCell {
    let byPlugin = this.responses.get(rcode);
    if (byPlugin === undefined) {
      byPlugin = new Map();
      this.responses.set(rcode, byPlugin);
    }
    let c = byPlugin.get(plugin);
    if (c === undefined) {
      c = new CounterCell(responsesTotal, {
        server: this.server,
        zone: this.zone,
        view: this.view,
        rcode: rcodeName(rcode),
        plugin,
      });
      byPlugin.set(plugin, c);
    }
    return c;
  }
}

/** Process-wide cache: server label → zone label → cells (cells survive reloads and metric resets). */
const cells = new Map<string, Map<string, ZoneCells>>();
/** The same for blocks with a view: view label → server label → zone label → cells. */
const viewCells = new Map<string, Map<string, Map<string, ZoneCells>>>();

/**
 * The cells of one (server, zone, view) label set: the prometheus plugin's and the server's
 * (`dropped`). `view` is the block's view name, '' without one (kept off the common path).
 */
export function dnsCells(server: string, zone: string, view = ''): ZoneCells {
  let byServer = cells;
  if (view !== '') {
    let v = viewCells.get(view);
    if (v === undefined) {
      v = new Map();
      viewCells.set(view, v);
    }
    byServer = v;
  }
  let byZone = byServer.get(server);
  if (byZone === undefined) {
    byZone = new Map();
    byServer.set(server, byZone);
  }
  let z = byZone.get(zone);
  if (z === undefined) {
    z = new ZoneCells(server, zone, view);
    byZone.set(zone, z);
  }
  return z;
}
