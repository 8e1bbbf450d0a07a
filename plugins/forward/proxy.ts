/**
 * One upstream of a forward instance: its connection pools (UDP, TCP or TLS), its health state
 * and the background probe that runs after a failed exchange until the upstream answers again.
 */
import type * as tls from 'node:tls';
import { Qclass, Qtype, rcodeName } from '../../src/dns/constants.js';
import { buildQuery } from '../../src/dns/encode.js';
import { randomId } from '../../src/dns/ids.js';
import type { QuestionKey } from '../../src/dns/match.js';
import { CounterCell, HistCell } from '../../src/metrics/batch.js';
import * as m from './metrics.js';
import { DohClient } from './doh.js';
import { StreamPool } from './stream.js';
import { UdpPool } from './udp.js';
import type { LocalAddress } from './localaddress.js';

export type Scheme = 'dns' | 'tls' | 'https';

export interface UpstreamAddress {
  readonly scheme: Scheme;
  /** IP address (no brackets). */
  readonly host: string;
  readonly port: number;
  /** Per-upstream SNI (`tls://IP%name`). */
  readonly serverName: string | null;
}

export interface HealthCheckConfig {
  readonly intervalMs: number;
  readonly recursionDesired: boolean;
  /** Absolute probe name. */
  readonly domain: string;
}

export interface ProxyOptions {
  readonly expireMs: number;
  readonly maxAgeMs: number;
  readonly maxIdleConns: number;
  readonly sourceAddress: string | null;
  /** TLS client options for tls:// upstreams (without servername; see `tlsServerName`). */
  readonly tls: tls.ConnectionOptions;
  readonly tlsServerName: string | null;
  readonly forceTcp: boolean;
  readonly healthCheck: HealthCheckConfig;
  /** Method for https:// upstreams. */
  readonly dohMethod: 'GET' | 'POST';
}

/** `IP:port` as Go's net.JoinHostPort writes it (`[::1]:53`). */
export function joinHostPort(host: string, port: number): string {
  return host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
}

const PROXY_NAME = 'forward';
const PROBE_TIMEOUT_MS = 1000;
const SWEEP_MS = 10_000;

export class Proxy {
  /** The `to` metric label: `IP:port`. */
  readonly to: string;
  /** Consecutive failed health probes. */
  fails = 0;
  private probing = false;
  private probeTimer: NodeJS.Timeout | null = null;
  private stopped = false;
  private readonly udp: UdpPool;
  private readonly stream: StreamPool;
  private readonly doh: DohClient | null;
  private sweepTimer: NodeJS.Timeout | null = null;
  private readonly probeQuestion: QuestionKey;
  /**
   * Per-query metrics as batched cells, made once per label set: prom-client's `labels()`
   * re-hashes the label set on every call.
   */
  private readonly requests: CounterCell;
  private readonly byRcode = new Map<
    number,
    { proxyDuration: HistCell; forwardDuration: HistCell; responses: CounterCell }
  >();
  private readonly probePacket: Buffer;

  constructor(
    readonly addr: UpstreamAddress,
    private readonly o: ProxyOptions,
  ) {
    this.to = joinHostPort(addr.host, addr.port);
    const conn = (proto: string) => {
      const hits = new CounterCell(m.proxyConnCacheHits, { proxy_name: PROXY_NAME, to: this.to, proto });
      const misses = new CounterCell(m.proxyConnCacheMisses, { proxy_name: PROXY_NAME, to: this.to, proto });
      return (hit: boolean): void => (hit ? hits : misses).inc();
    };
    this.requests = new CounterCell(m.forwardRequests, { to: this.to });
    this.udp = new UdpPool({
      host: addr.host,
      port: addr.port,
      label: this.to,
      sourceAddress: o.sourceAddress,
      expireMs: o.expireMs,
      size: 4,
      onConn: conn('udp'),
    });
    const isTls = addr.scheme === 'tls';
    const servername = addr.serverName ?? o.tlsServerName;
    this.stream = new StreamPool({
      host: addr.host,
      port: addr.port,
      label: this.to,
      proto: isTls ? 'tcp-tls' : 'tcp',
      tls: isTls ? { ...o.tls, ...(servername ? { servername } : {}), minVersion: 'TLSv1.2' } : null,
      sourceAddress: o.sourceAddress,
      expireMs: o.expireMs,
      maxAgeMs: o.maxAgeMs,
      maxIdle: o.maxIdleConns,
      onConn: conn(isTls ? 'tcp-tls' : 'tcp'),
    });
    this.doh =
      addr.scheme === 'https'
        ? new DohClient({
            host: addr.host,
            port: addr.port,
            label: this.to,
            tls: { ...o.tls, minVersion: 'TLSv1.2' },
            servername,
            method: o.dohMethod,
            sourceAddress: o.sourceAddress,
            expireMs: o.expireMs,
            maxIdleConns: o.maxIdleConns,
          })
        : null;
    this.probeQuestion = { lname: o.healthCheck.domain.toLowerCase(), qtype: Qtype.NS, qclass: Qclass.IN };
    this.probePacket = buildQuery(o.healthCheck.domain, Qtype.NS, o.healthCheck.recursionDesired);
  }

  /** Start the idle-connection sweep (every 10 s). */
  start(): void {
    if (this.sweepTimer || this.stopped) return;
    this.sweepTimer = setInterval(() => {
      this.udp.sweep();
      this.stream.sweep();
    }, SWEEP_MS);
    this.sweepTimer.unref();
  }

  /** Down when health probes failed more than `maxFails` times in a row (`0` = never down). */
  down(maxFails: number): boolean {
    return maxFails > 0 && this.fails > maxFails;
  }

  /** Sockets currently open to this upstream (UDP sockets and idle TCP/TLS connections). */
  get openSockets(): number {
    return this.udp.size + this.stream.size;
  }

  get isTls(): boolean {
    return this.addr.scheme === 'tls';
  }

  /**
   * Send `packet` (any id; a fresh random one is used) and return the raw reply. UDP replies are
   * matched on id and question; stream replies on id (the caller checks the question).
   */
  async exchange(
    packet: Buffer,
    q: QuestionKey,
    proto: 'udp' | 'tcp',
    timeoutMs: number,
    local?: LocalAddress,
  ): Promise<Buffer> {
    const started = performance.now();
    this.requests.inc();
    let reply: Buffer;
    if (this.doh) {
      reply = await this.doh.exchange(packet, timeoutMs);
    } else if (proto === 'udp' && !this.isTls) {
      reply = await this.udp.exchange(packet, q, timeoutMs, local);
    } else {
      const out = Buffer.from(packet);
      out.writeUInt16BE(randomId(), 0);
      reply = await this.stream.exchange(out, timeoutMs, local);
    }
    const secs = (performance.now() - started) / 1000;
    const cells = this.replyCells(reply.length >= 4 ? reply[3]! & 0xf : 2);
    cells.proxyDuration.observe(secs);
    cells.forwardDuration.observe(secs);
    cells.responses.inc();
    return reply;
  }

  private replyCells(rcode: number): { proxyDuration: HistCell; forwardDuration: HistCell; responses: CounterCell } {
    let c = this.byRcode.get(rcode);
    if (!c) {
      const name = rcodeName(rcode);
      c = {
        proxyDuration: new HistCell(m.proxyRequestDuration, { proxy_name: PROXY_NAME, to: this.to, rcode: name }),
        forwardDuration: new HistCell(m.forwardRequestDuration, { to: this.to, rcode: name }),
        responses: new CounterCell(m.forwardResponses, { rcode: name, to: this.to }),
      };
      this.byRcode.set(rcode, c);
    }
    return c;
  }

  /** Start probing this upstream (no-op when a probe loop already runs). */
  healthcheck(): void {
    if (this.probing || this.stopped) return;
    this.probing = true;
    void this.probeOnce();
  }

  private async probeOnce(): Promise<void> {
    if (this.stopped) return;
    const ok = await this.probe();
    if (this.stopped) return;
    if (ok) {
      this.fails = 0;
      this.probing = false;
      return;
    }
    this.fails++;
    m.proxyHealthcheckFailures.labels(PROXY_NAME, this.to).inc();
    m.forwardHealthcheckFailures.labels(this.to).inc();
    this.probeTimer = setTimeout(() => {
      this.probeTimer = null;
      void this.probeOnce();
    }, this.o.healthCheck.intervalMs);
  }

  /** One probe: `<domain> IN NS`; any reply, whatever its RCODE, counts as healthy. */
  private async probe(): Promise<boolean> {
    try {
      const proto = this.o.forceTcp || this.isTls ? 'tcp' : 'udp';
      if (this.doh) await this.doh.exchange(this.probePacket, PROBE_TIMEOUT_MS);
      else if (proto === 'udp') await this.udp.exchange(this.probePacket, this.probeQuestion, PROBE_TIMEOUT_MS);
      else {
        const out = Buffer.from(this.probePacket);
        out.writeUInt16BE(randomId(), 0);
        await this.stream.exchange(out, PROBE_TIMEOUT_MS);
      }
      return true;
    } catch {
      return false;
    }
  }

  /** Stop probing and close every connection. */
  stop(): void {
    this.stopped = true;
    if (this.probeTimer) clearTimeout(this.probeTimer);
    this.probeTimer = null;
    if (this.sweepTimer) clearInterval(this.sweepTimer);
    this.sweepTimer = null;
    this.udp.close();
    this.stream.close();
    this.doh?.close();
  }
}
