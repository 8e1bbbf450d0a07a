/**
 * DNS over HTTPS (RFC 8484) on one `https://` listener, as CoreDNS 1.15.0's ServerHTTPS serves it
 * (docs/corefile.md §7.5): HTTP/2 or HTTP/1.1 by ALPN, `/dns-query` only (404 elsewhere), GET with
 * `?dns=` (unpadded base64url) or POST with the message as body (at most 65,536 bytes; the content
 * type is not checked, as in CoreDNS), 400 `invalid request` for anything that is not a DNS query,
 * 500 `No response` when the chain wrote nothing, and a 200 reply with `Content-Type:
 * application/dns-message` and `Cache-Control: max-age=` the reply's smallest TTL. Each status is
 * counted in `coredns_dns_https_responses_total{server,status}`.
 *
 * Queries go to the listener's dispatch as TCP ones (proto `tcp`, a 65,535-byte reply limit), as
 * CoreDNS's DoHWriter has a TCP remote address. Connections have the fairness rules of plain TCP
 * (src/server/tcp.ts): a per-source cap, the longest-idle one closed at the listener's cap (the
 * `https` plugin's `max_connections`, CoreDNS's default 200), no request within the read timeout
 * or none for the idle timeout closes it; HTTP/2 flow control and `max_streams` (250) bound what
 * one connection has in flight. A request not answered within the write timeout (Go's
 * http.Server WriteTimeout: CoreDNS's 5 s, or `timeouts { write }`) is cut: its HTTP/2 stream
 * reset with INTERNAL_ERROR, an HTTP/1.1 connection closed, as Go's server does.
 */
import type * as http from 'node:http';
import type * as http2 from 'node:http2';
import type * as net from 'node:net';
import type * as tls from 'node:tls';
import { Rcode, Qtype } from '../dns/constants.js';
import { forEachRecord, skipName } from '../dns/wire.js';
import { typify } from '../dns/response.js';
import { counter } from '../metrics/registry.js';
import type { Exchange } from './listener.js';
import type { HttpsOptions } from './listenopts.js';
import type { ListenerInfo, TcpLimits } from './tcp.js';
import { ConnectionAdmission } from './admission.js';
import { clientAuthorized, serverTlsOptions, type TlsServerConfig } from './tlsconfig.js';
import { unmapV4 } from '../util/ip.js';
import { nodeHttp, nodeHttp2 } from '../util/require.js';

const httpsResponsesTotal = counter({
  name: 'coredns_dns_https_responses_total',
  help: 'Counter of DoH responses per server and http status code.',
  labelNames: ['server', 'status'] as const,
});

/** CoreDNS's DefaultHTTPSMaxConnections and DefaultHTTPSMaxStreams. */
export const DEFAULT_HTTPS_MAX_CONNECTIONS = 200;
export const DEFAULT_HTTPS_MAX_STREAMS = 250;
/** CoreDNS's server WriteTimeout, which its DoH http.Server gets unless `timeouts { write }` sets one. */
export const DEFAULT_HTTPS_WRITE_TIMEOUT_MS = 5000;
/** doh.maxDNSQuerySize and the longest base64 text of such a query. */
const MAX_QUERY = 65536;
const MAX_BASE64 = Math.floor((MAX_QUERY * 8 + 5) / 6);
/** dnsutil.MinimalDefaultTTL / MaximumDefaultTTL (seconds). */
const MIN_TTL = 5;
const MAX_TTL = 3600;
const MIME = 'application/dns-message';

type Req = http.IncomingMessage | http2.Http2ServerRequest;
type Res = http.ServerResponse | http2.Http2ServerResponse;

/** DoH's ALPN protocols, as CoreDNS sets NextProtos. */
const DOH_ALPN = ['h2', 'http/1.1'];

/** A connection's client, as the accepted socket and a request's socket both tell it. */
function peerKey(address: string, port: number | undefined): string {
  return `${address}|${port ?? 0}`;
}

/** One accepted connection: its place in the idle order and its requests in flight. */
class DohConnection {
  inFlight = 0;
  /** Requests in flight, with when each was read (the write timeout runs from then). */
  readonly pending = new Map<Res, number>();
  lastActive = Date.now();
  served = 0;
  constructor(
    readonly socket: net.Socket,
    readonly remote: string,
    readonly family: 1 | 2,
  ) {}
}

export class DohServer {
  /** Connections in the order of their last activity, and the caps (src/server/admission.ts). */
  private readonly admission = new ConnectionAdmission<DohConnection>(
    (c) => c.remote,
    (c) => this.drop(c),
    () => this.sweep(),
  );
  /** Connections by `address|port` of their client, to find a request's connection. */
  private readonly byPeer = new Map<string, DohConnection>();
  /** HTTP/2 and (ALPN `http/1.1`) HTTP/1.1 over TLS; created with the first TLS material. */
  private h2: http2.Http2SecureServer | null = null;
  /** In clear (no `tls` in the block): HTTP/1.1, as CoreDNS's Go server without TLS. */
  private readonly h1: http.Server;
  private tlsConfig: TlsServerConfig | null = null;
  /** Connections closed by the idle and read timeouts, for tests and diagnostics. */
  idleClosed = 0;
  /** Requests cut by the write timeout. */
  writeTimedOut = 0;
  private readonly handler = (req: Req, res: Res): void => this.onRequest(req, res);

  constructor(
    private readonly listener: ListenerInfo,
    /** The listener's TCP limits (timeouts plugin applied); read on every use. */
    private readonly limits: () => TcpLimits,
    private options: HttpsOptions,
    /** Where `keylog` lines go (the listener's file), or null. */
    private readonly keyLog: () => ((line: Buffer) => void) | null,
  ) {
    this.h1 = nodeHttp.createServer(this.handler);
    this.h1.on('error', () => undefined);
  }

  /**
   * The TLS material of a (re)load: new handshakes use it. TLS is terminated by Node's own secure
   * HTTP/2 server (the raw socket is handed to it after the caps: `accept`), which picks HTTP/2 or
   * HTTP/1.1 by ALPN.
   */
  setTls(cfg: TlsServerConfig | null): void {
    this.tlsConfig = cfg;
    if (cfg === null) return;
    const opts = serverTlsOptions(cfg, DOH_ALPN);
    if (this.h2) {
      this.h2.setSecureContext(opts);
      return;
    }
    const h2 = nodeHttp2().createSecureServer({ ...opts, allowHTTP1: true, settings: this.settings() }, this.handler);
    h2.on('secureConnection', (s: tls.TLSSocket) => {
      const mode = this.tlsConfig?.clientAuth ?? 'nocert';
      if (!clientAuthorized(s, mode)) s.destroy();
    });
    h2.on('keylog', (line: Buffer) => this.keyLog()?.(line));
    h2.on('tlsClientError', () => undefined);
    h2.on('error', () => undefined);
    this.h2 = h2;
  }

  private settings(): http2.Settings {
    const n = this.options.maxStreams ?? DEFAULT_HTTPS_MAX_STREAMS;
    return n > 0 ? { maxConcurrentStreams: n } : {};
  }

  /** The `https` options of a reload. New limits apply to new connections (and the cap at once). */
  update(options: HttpsOptions): void {
    this.options = options;
    this.h2?.updateSettings(this.settings());
  }

  private get maxConnections(): number {
    const n = this.options.maxConnections ?? DEFAULT_HTTPS_MAX_CONNECTIONS;
    // 0 is unbounded in CoreDNS; the listener's TCP cap still holds, so one client cannot take all.
    return n > 0 ? n : this.limits().maxConnections;
  }

  get size(): number {
    return this.admission.size;
  }

  /** Connections closed by the caps, for tests and diagnostics. */
  get evicted(): number {
    return this.admission.evicted;
  }

  get refused(): number {
    return this.admission.refused;
  }

  countFrom(remote: string): number {
    return this.admission.countFrom(remote);
  }

  /**
   * A new connection, as accepted: the caps apply before the handshake, so a client that never
   * completes one still counts against them and is closed by the read timeout.
   */
  accept(raw: net.Socket, remote: string, family: 1 | 2): void {
    const limits = this.limits();
    if (!this.admission.admit(remote, limits.maxConnectionsPerSource, this.maxConnections)) {
      raw.destroy();
      return;
    }
    const conn = new DohConnection(raw, remote, family);
    this.byPeer.set(peerKey(remote, raw.remotePort), conn);
    const shortest = Math.min(limits.idleTimeoutMs, limits.readTimeoutMs, writeTimeoutMs(limits));
    this.admission.add(conn, Math.max(50, Math.min(1000, shortest >> 2)));
    raw.on('close', () => this.forget(conn));
    raw.on('error', () => raw.destroy());
    if (this.tlsConfig && this.h2) this.h2.emit('connection', raw);
    else this.h1.emit('connection', raw);
  }

  private drop(conn: DohConnection): void {
    conn.socket.destroy();
    this.forget(conn);
  }

  private forget(conn: DohConnection): void {
    if (!this.admission.remove(conn)) return;
    this.byPeer.delete(peerKey(conn.remote, conn.socket.remotePort));
  }

  private touch(conn: DohConnection): void {
    conn.lastActive = Date.now();
    this.admission.touch(conn);
  }

  /**
   * Close what waited too long: no request within the read timeout of accepting (handshake
   * included), or none in flight and none for the idle timeout.
   */
  sweep(now = Date.now()): void {
    const limits = this.limits();
    const { idleTimeoutMs, readTimeoutMs } = limits;
    const writeLimit = writeTimeoutMs(limits);
    for (const conn of [...this.admission.values()]) {
      for (const [res, readAt] of conn.pending) {
        if (now - readAt < writeLimit) continue;
        conn.pending.delete(res);
        this.writeTimedOut++;
        this.cut(res, conn);
      }
      if (conn.inFlight > 0) continue;
      const limit = conn.served === 0 ? readTimeoutMs : idleTimeoutMs;
      if (now - conn.lastActive >= limit) {
        this.idleClosed++;
        this.drop(conn);
      }
    }
  }

  /**
   * A request past the write timeout: Go's HTTP/2 server resets its stream (INTERNAL_ERROR); over
   * HTTP/1.1 the connection's write deadline passed, so it is closed without a response.
   */
  private cut(res: Res, conn: DohConnection): void {
    if ('stream' in res) res.stream.close(nodeHttp2().constants.NGHTTP2_INTERNAL_ERROR);
    else this.drop(conn);
  }

  private onRequest(req: Req, res: Res): void {
    const conn = this.byPeer.get(peerKey(unmapV4(req.socket.remoteAddress ?? ''), req.socket.remotePort));
    if (conn) {
      conn.served++;
      conn.inFlight++;
      conn.pending.set(res, Date.now());
      this.touch(conn);
    }
    let finished = false;
    const finish = (): void => {
      if (finished) return;
      finished = true;
      if (conn) {
        conn.inFlight--;
        conn.pending.delete(res);
        this.touch(conn);
      }
    };
    res.on('finish', finish);
    res.on('close', finish);
    const url = req.url ?? '';
    const q = url.indexOf('?');
    if (decodePath(q < 0 ? url : url.slice(0, q)) !== '/dns-query') {
      this.error(res, 404, '');
      return;
    }
    if (req.method === 'GET') {
      const msg = getQuery(q < 0 ? '' : url.slice(q + 1));
      if (msg) this.query(msg, conn, req, res);
      else this.error(res, 400, 'invalid request');
      return;
    }
    if (req.method !== 'POST') {
      this.error(res, 400, 'invalid request');
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    let over = false;
    req.on('data', (c: Buffer) => {
      if (over) return;
      size += c.length;
      if (size > MAX_QUERY) {
        // http.MaxBytesReader: the request fails once it exceeds the limit.
        over = true;
        this.error(res, 400, 'invalid request');
        return;
      }
      chunks.push(c);
    });
    req.on('end', () => {
      if (over) return;
      const body = Buffer.concat(chunks);
      if (acceptable(body)) this.query(body, conn, req, res);
      else this.error(res, 400, 'invalid request');
    });
    req.on('error', () => undefined);
  }

  private query(msg: Buffer, conn: DohConnection | undefined, req: Req, res: Res): void {
    const sock = req.socket;
    this.listener.started();
    this.listener.dispatchFn(msg, new DohExchange(this, res, conn, sock, req.headers));
  }

  /** Go's http.Error: a text body with a newline, no sniffing. */
  error(res: Res, status: number, text: string): void {
    this.count(status);
    if (res.headersSent || res.writableEnded) return;
    const body = Buffer.from(`${text}\n`);
    send(res, status, body, {
      'content-type': 'text/plain; charset=utf-8',
      'x-content-type-options': 'nosniff',
      'content-length': String(body.length),
    });
  }

  reply(res: Res, wire: Buffer): void {
    this.count(200);
    if (res.writableEnded) return;
    send(res, 200, wire, {
      'content-type': MIME,
      'cache-control': `max-age=${maxAge(wire)}`,
      'content-length': String(wire.length),
    });
  }

  private count(status: number): void {
    httpsResponsesTotal.inc({ server: this.listener.name, status: String(status) });
  }

  finished(): void {
    this.listener.finished();
  }

  /** The listener's name, the `server` label. */
  get name(): string {
    return this.listener.name;
  }

  /** Every connection, for the listener's close. */
  connections(): DohConnection[] {
    return [...this.admission.values()];
  }

  /** End every connection gracefully (HTTP/2 GOAWAY after the streams in flight); the rest later. */
  close(): void {
    for (const c of this.admission.values()) c.socket.end();
    this.admission.stop();
  }

  destroyAll(): void {
    for (const c of [...this.admission.values()]) this.drop(c);
  }
}

/** A DoH query's way back: the HTTP response. */
class DohExchange implements Exchange {
  readonly proto = 'tcp';
  readonly family: 1 | 2;
  readonly remoteAddress: string;
  readonly remotePort: number;
  readonly localPort: number;
  readonly server: string;
  private answered = false;

  constructor(
    private readonly doh: DohServer,
    private readonly res: Res,
    conn: DohConnection | undefined,
    private readonly sock: net.Socket | tls.TLSSocket,
    /** The request's headers (the B3 trace context *trace* continues). */
    readonly httpHeaders: Readonly<Record<string, string | string[] | undefined>>,
  ) {
    this.family = conn?.family ?? 1;
    this.remoteAddress = conn?.remote ?? '';
    this.remotePort = sock.remotePort ?? 0;
    this.localPort = sock.localPort ?? 0;
    this.server = doh.name;
  }

  get localAddress(): string {
    const a = this.sock.localAddress ?? '';
    return a.startsWith('::ffff:') && a.includes('.') ? a.slice(7) : a;
  }

  respond(reply: Buffer): void {
    if (this.answered) return;
    this.answered = true;
    this.doh.reply(this.res, reply);
  }

  done(): void {
    // RFC 8484 §4.2.1: nothing written by the chain is CoreDNS's 500.
    if (!this.answered) {
      this.answered = true;
      this.doh.error(this.res, 500, 'No response');
    }
    this.doh.finished();
  }
}

/** Write a whole response (HTTP/1.1 and HTTP/2 compatibility responses take the same calls). */
function send(res: Res, status: number, body: Buffer, headers: Record<string, string>): void {
  const r = res as http.ServerResponse;
  r.writeHead(status, headers);
  r.end(body);
}

/** Go's URL path as decoded (`%2F` and friends); an undecodable path is no DoH path. */
function decodePath(p: string): string {
  try {
    return decodeURIComponent(p);
  } catch {
    return '';
  }
}

/** The `dns` parameter of a GET (exactly one, base64url without padding, not too long), decoded. */
function getQuery(query: string): Buffer | null {
  let values: string[];
  try {
    values = new URLSearchParams(query).getAll('dns');
  } catch {
    return null;
  }
  if (values.length !== 1) return null;
  const b64 = values[0]!;
  // base64.RawURLEncoding: the URL alphabet, no padding, no dangling sixth bit group.
  if (b64.length > MAX_BASE64 || !/^[A-Za-z0-9_-]*$/.test(b64) || b64.length % 4 === 1) return null;
  const buf = Buffer.from(b64, 'base64url');
  // Go rejects non-zero bits left over after the last byte; re-encoding shows them.
  if (buf.toString('base64url') !== b64) return null;
  return acceptable(buf) ? buf : null;
}

/**
 * dnsutil.UnpackRequest's checks: a header, miekg's DefaultMsgAcceptFunc (a query or NOTIFY,
 * one question, at most one answer and authority record and two additional), and records that
 * parse. What fails is CoreDNS's 400, not a DNS error reply.
 */
function acceptable(buf: Buffer): boolean {
  if (buf.length < 12) return false;
  const flags = buf.readUInt16BE(2);
  if (flags & 0x8000) return false;
  const opcode = (flags >> 11) & 0xf;
  if (opcode !== 0 && opcode !== 4) return false;
  if (buf.readUInt16BE(4) !== 1 || buf.readUInt16BE(6) > 1 || buf.readUInt16BE(8) > 1 || buf.readUInt16BE(10) > 2)
    return false;
  return forEachRecord(buf, () => undefined);
}

/** CoreDNS's Cache-Control age: dnsutil.MinimalTTLWithMaximum of the reply, typified. */
export function maxAge(wire: Buffer): number {
  if (wire.length < 12) return MIN_TTL;
  const flags = wire.readUInt16BE(2);
  const rcode = flags & 0xf;
  const an = wire.readUInt16BE(6);
  const ns = wire.readUInt16BE(8);
  let qtype = 0;
  let soa = false;
  let nsCount = 0;
  let onlyOpt = true;
  let extra = 0;
  let min = MAX_TTL;
  const ok = forEachRecord(wire, (section, _rr, t) => {
    const type = wire.readUInt16BE(t);
    if (section === 1) {
      if (type === Qtype.SOA) soa = true;
      else if (type === Qtype.NS) nsCount++;
    }
    if (section === 2) {
      extra++;
      if (type === Qtype.OPT) return;
      onlyOpt = false;
    }
    const ttl = wire.readUInt32BE(t + 4);
    if (ttl < min) min = ttl;
  });
  if (!ok) return MIN_TTL;
  if (wire.readUInt16BE(4) > 0) {
    const off = skipName(wire, 12);
    if (off > 0 && off + 2 <= wire.length) qtype = wire.readUInt16BE(off);
  }
  const type = typify({
    rcode,
    opcode: (flags >> 11) & 0xf,
    qtype,
    answers: an,
    authoritySoa: soa,
    authorityNs: nsCount,
  });
  // Typify calls an NXDOMAIN without SOA a name error too.
  const named = type === 'NXDOMAIN' || (rcode === Rcode.NXDOMAIN && an === 0);
  if (type !== 'NOERROR' && type !== 'NODATA' && !named) return MIN_TTL;
  if (an + ns === 0 && (extra === 0 || (extra === 1 && onlyOpt))) return MIN_TTL;
  return min;
}

/** The DoH write timeout: `timeouts { write }`, else CoreDNS's server default. */
function writeTimeoutMs(limits: TcpLimits): number {
  return limits.writeTimeoutMs !== undefined && limits.writeTimeoutMs > 0
    ? limits.writeTimeoutMs
    : DEFAULT_HTTPS_WRITE_TIMEOUT_MS;
}
