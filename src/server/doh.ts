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
import { H2Session, H2Stream, MAX_REQUEST_BODY, type H2Handler, type H2Response } from './h2session.js';
import { unmapV4 } from '../util/ip.js';
import { nodeHttp, nodeTls } from '../util/require.js';

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
const MAX_QUERY = MAX_REQUEST_BODY;
const MAX_BASE64 = Math.floor((MAX_QUERY * 8 + 5) / 6);
/** dnsutil.MinimalDefaultTTL / MaximumDefaultTTL (seconds). */
const MIN_TTL = 5;
const MAX_TTL = 3600;
const MIME = 'application/dns-message';

/**
 * Where a request's answer goes: an HTTP/2 stream of our own HTTP/2 layer (src/server/h2session.ts),
 * or an HTTP/1.1 response of Node's http module (H1Reply).
 */
interface DohReply {
  /** A response (or a reset) went out. */
  readonly sent: boolean;
  send(r: H2Response): void;
  /** The write timeout passed (Go: HTTP/2 stream reset with INTERNAL_ERROR, HTTP/1.1 connection closed). */
  cut(): void;
  /** The request's query goes to the chain, and its work ended (answered or not). */
  working(): void;
  workDone(): void;
}

/** DoH's ALPN protocols, as CoreDNS sets NextProtos. */
const DOH_ALPN = ['h2', 'http/1.1'];

/** A connection's client, as the accepted socket and a request's socket both tell it. */
function peerKey(address: string, port: number | undefined): string {
  return `${address}|${port ?? 0}`;
}

/** One accepted connection: its place in the idle order and its requests in flight. */
class DohConnection {
  inFlight = 0;
  /**
   * HTTP/1.1 requests in flight, with when each was read (the write timeout runs from then);
   * an HTTP/2 stream keeps its own time (`readAt`), and the session lists them.
   */
  readonly pending = new Map<DohReply, number>();
  lastActive = Date.now();
  /** When the connection last moved in the idle order (moved at most once a second). */
  orderedAt = Date.now();
  served = 0;
  /** HTTP/2 (ALPN h2) once the handshake chose it. */
  session: H2Session | null = null;
  constructor(
    readonly socket: net.Socket,
    readonly remote: string,
    readonly family: 1 | 2,
  ) {}
}

/** An HTTP/1.1 response as a DohReply. */
class H1Reply implements DohReply {
  constructor(
    private readonly res: http.ServerResponse,
    private readonly conn: DohConnection | undefined,
    private readonly doh: DohServer,
  ) {}

  get sent(): boolean {
    return this.res.headersSent || this.res.writableEnded;
  }

  send(r: H2Response): void {
    const headers: Record<string, string> =
      r.maxAge === null
        ? { 'content-type': 'text/plain; charset=utf-8', 'x-content-type-options': 'nosniff' }
        : { 'content-type': MIME, 'cache-control': `max-age=${r.maxAge}` };
    headers['content-length'] = String(r.body.length);
    this.res.writeHead(r.status, headers);
    this.res.end(r.body);
  }

  cut(): void {
    // The connection's write deadline passed: it is closed without a response.
    if (this.conn) this.doh.drop(this.conn);
    else this.res.destroy();
  }

  /** HTTP/1.1 has one request at a time per connection: its work needs no count. */
  working(): void {}

  workDone(): void {}
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
  /**
   * HTTP/1.1: in clear (no `tls` in the block), as CoreDNS's Go server without TLS, and over TLS
   * when the client's ALPN chose `http/1.1` (or offered nothing). HTTP/2 is src/server/h2session.ts.
   */
  private readonly h1: http.Server;
  private tlsConfig: TlsServerConfig | null = null;
  /** The TLS material of the last (re)load, for new handshakes. */
  private secureContext: tls.SecureContext | null = null;
  /** Connections closed by the idle and read timeouts, for tests and diagnostics. */
  idleClosed = 0;
  /** Requests cut by the write timeout. */
  writeTimedOut = 0;
  private readonly handler = (req: http.IncomingMessage, res: http.ServerResponse): void => this.onRequest(req, res);

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
   * The TLS material of a (re)load: new handshakes use it. TLS is terminated here, on the raw
   * socket after the caps (`accept`); ALPN picks HTTP/2 (our own layer) or HTTP/1.1 (Node's).
   */
  setTls(cfg: TlsServerConfig | null): void {
    this.tlsConfig = cfg;
    this.secureContext = cfg === null ? null : nodeTls().createSecureContext(serverTlsOptions(cfg));
  }

  /** `max_streams`; 0 is "the HTTP/2 transport's default", which for Go's server is 250 too. */
  private get maxStreams(): number {
    const n = this.options.maxStreams ?? DEFAULT_HTTPS_MAX_STREAMS;
    return n > 0 ? n : DEFAULT_HTTPS_MAX_STREAMS;
  }

  /** The `https` options of a reload. New limits apply to new connections (and the cap at once). */
  update(options: HttpsOptions): void {
    this.options = options;
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
    const cfg = this.tlsConfig;
    if (cfg === null || this.secureContext === null) {
      this.h1.emit('connection', raw);
      return;
    }
    const s = new (nodeTls().TLSSocket)(raw, {
      isServer: true,
      secureContext: this.secureContext,
      ALPNProtocols: DOH_ALPN,
      requestCert: cfg.clientAuth !== 'nocert',
      rejectUnauthorized: cfg.clientAuth === 'require_and_verify',
    });
    // A failed handshake is the client's problem: the connection closes.
    s.on('error', () => s.destroy());
    s.on('keylog', (line: Buffer) => this.keyLog()?.(line));
    s.once('secure', () => {
      if (!clientAuthorized(s, cfg.clientAuth)) {
        s.destroy();
        return;
      }
      if (s.alpnProtocol === 'h2') conn.session = new H2Session(s, this.h2Handler(conn), this.maxStreams);
      else this.h1.emit('connection', s);
    });
  }

  /** A connection's HTTP/2 requests, counted as its activity. */
  private h2Handler(conn: DohConnection): H2Handler {
    return {
      request: (st: H2Stream): void => {
        conn.served++;
        conn.inFlight++;
        st.readAt = this.touch(conn);
        // The path is judged before the body, as CoreDNS's ServeHTTP does: a body too large for
        // another path is still its 404.
        if (!isDohPath(st.path)) this.error(st, 404, '');
        else if (st.bodyTooLarge) this.error(st, 400, 'invalid request');
        else this.handle(st.method, st.path, st.body, conn, st, conn.socket, st);
      },
      closed: (): void => {
        conn.inFlight--;
        this.touch(conn);
      },
    };
  }

  /** An HTTP/1.1 request read: it counts as in flight, and its write timeout starts. */
  private begin(conn: DohConnection, reply: DohReply): void {
    conn.served++;
    conn.inFlight++;
    conn.pending.set(reply, this.touch(conn));
  }

  private end(conn: DohConnection, reply: DohReply): void {
    if (!conn.pending.delete(reply)) return;
    conn.inFlight--;
    this.touch(conn);
  }

  /** Close a connection now (the caps, the timeouts). */
  drop(conn: DohConnection): void {
    conn.socket.destroy();
    this.forget(conn);
  }

  private forget(conn: DohConnection): void {
    if (!this.admission.remove(conn)) return;
    this.byPeer.delete(peerKey(conn.remote, conn.socket.remotePort));
  }

  /** Activity: the idle timeout restarts, and (at most once a second) the idle order moves. */
  private touch(conn: DohConnection): number {
    const now = Date.now();
    conn.lastActive = now;
    if (now - conn.orderedAt >= REORDER_MS) {
      conn.orderedAt = now;
      this.admission.touch(conn);
    }
    return now;
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
      for (const [reply, readAt] of conn.pending) {
        if (now - readAt < writeLimit) continue;
        this.end(conn, reply);
        this.writeTimedOut++;
        reply.cut();
      }
      if (conn.session !== null) {
        for (const st of [...conn.session.openStreams]) {
          if (!st.delivered || now - st.readAt < writeLimit) continue;
          this.writeTimedOut++;
          st.cut();
        }
      }
      if (conn.inFlight > 0) continue;
      const limit = conn.served === 0 ? readTimeoutMs : idleTimeoutMs;
      if (now - conn.lastActive >= limit) {
        this.idleClosed++;
        this.drop(conn);
      }
    }
  }

  /** An HTTP/1.1 request (Node's http module). */
  private onRequest(req: http.IncomingMessage, res: http.ServerResponse): void {
    const conn = this.byPeer.get(peerKey(unmapV4(req.socket.remoteAddress ?? ''), req.socket.remotePort));
    const reply = new H1Reply(res, conn, this);
    if (conn) {
      this.begin(conn, reply);
      const finish = (): void => this.end(conn, reply);
      res.on('finish', finish);
      res.on('close', finish);
    }
    const method = req.method ?? '';
    const url = req.url ?? '';
    // The path is judged before the body is read, as CoreDNS's ServeHTTP does.
    if (!isDohPath(url)) {
      this.error(reply, 404, '');
      return;
    }
    if (method !== 'POST') {
      this.handle(method, url, null, conn, reply, req.socket, req.headers);
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
        this.error(reply, 400, 'invalid request');
        return;
      }
      chunks.push(c);
    });
    req.on('end', () => {
      if (over) return;
      this.handle(method, url, Buffer.concat(chunks), conn, reply, req.socket, req.headers);
    });
    req.on('error', () => undefined);
  }

  /**
   * One request to `/dns-query` (the caller checked the path), whichever HTTP: GET with `?dns=` or
   * POST with the message as body (400 for anything else or anything that is not a DNS query).
   */
  private handle(
    method: string,
    url: string,
    body: Buffer | null,
    conn: DohConnection | undefined,
    reply: DohReply,
    sock: net.Socket,
    headers: RequestHeaders,
  ): void {
    const q = url.indexOf('?');
    let msg: Buffer | null = null;
    if (method === 'GET') msg = getQuery(q < 0 ? '' : url.slice(q + 1));
    else if (method === 'POST' && body !== null && acceptable(body)) msg = body;
    if (msg === null) {
      this.error(reply, 400, 'invalid request');
      return;
    }
    this.listener.started();
    reply.working();
    this.listener.dispatchFn(msg, new DohExchange(this, reply, conn, sock, headers));
  }

  /** Go's http.Error: a text body with a newline, no sniffing. */
  error(reply: DohReply, status: number, text: string): void {
    this.count(status);
    if (reply.sent) return;
    reply.send({ status, body: Buffer.from(`${text}\n`), maxAge: null });
  }

  reply(reply: DohReply, wire: Buffer): void {
    this.count(200);
    if (reply.sent) return;
    reply.send({ status: 200, body: wire, maxAge: maxAge(wire) });
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
    for (const c of this.admission.values()) {
      if (c.session !== null) c.session.shutdown();
      else c.socket.end();
    }
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
    private readonly res: DohReply,
    conn: DohConnection | undefined,
    private readonly sock: net.Socket,
    /** The request's headers (the B3 trace context *trace* continues). */
    private readonly headers: RequestHeaders,
  ) {
    this.family = conn?.family ?? 1;
    this.remoteAddress = conn?.remote ?? '';
    this.remotePort = sock.remotePort ?? 0;
    this.localPort = sock.localPort ?? 0;
    this.server = doh.name;
  }

  /** The request's headers as an object (HTTP/2's field list is turned into one when asked). */
  get httpHeaders(): Readonly<Record<string, string | string[] | undefined>> {
    const h = this.headers;
    if (!(h instanceof H2Stream)) return h;
    const o: Record<string, string | string[]> = {};
    const f = h.fields;
    for (let i = h.headersFrom; i < f.length; i += 2) {
      const name = f[i]!;
      const prev = o[name];
      const value = f[i + 1]!;
      o[name] = prev === undefined ? value : Array.isArray(prev) ? [...prev, value] : [prev, value];
    }
    return o;
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
    this.res.workDone();
    this.doh.finished();
  }
}

/** A request's headers: Node's object (HTTP/1.1), or the HTTP/2 stream with its field list. */
type RequestHeaders = Readonly<Record<string, string | string[] | undefined>> | H2Stream;
/** A connection moves in the idle order at most this often (as TCP's, src/server/tcp.ts). */
const REORDER_MS = 1000;

const DOH_PATH = '/dns-query';

/** Is the request target's path `/dns-query` (Go's decoded path: `%2F` and friends)? */
function isDohPath(url: string): boolean {
  const q = url.indexOf('?');
  const path = q < 0 ? url : url.slice(0, q);
  return path === DOH_PATH || decodePath(path) === DOH_PATH;
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
  return forEachRecord(buf, IGNORE_RECORD);
}

const IGNORE_RECORD = (): void => undefined;

/** What maxAge's walk over the records gathers (one module-level object: no closure per reply). */
const EMPTY_WIRE = Buffer.alloc(0);
const ttlWalk: { wire: Buffer; soa: boolean; nsCount: number; onlyOpt: boolean; extra: number; min: number } = {
  wire: EMPTY_WIRE,
  soa: false,
  nsCount: 0,
  onlyOpt: true,
  extra: 0,
  min: MAX_TTL,
};
function walkTtl(section: 0 | 1 | 2, _rr: number, typeOffset: number): void {
  const t = ttlWalk;
  const wire = t.wire;
  const type = wire.readUInt16BE(typeOffset);
  if (section === 1) {
    if (type === Qtype.SOA) t.soa = true;
    else if (type === Qtype.NS) t.nsCount++;
  }
  if (section === 2) {
    t.extra++;
    if (type === Qtype.OPT) return;
    t.onlyOpt = false;
  }
  const ttl = wire.readUInt32BE(typeOffset + 4);
  if (ttl < t.min) t.min = ttl;
}

/** CoreDNS's Cache-Control age: dnsutil.MinimalTTLWithMaximum of the reply, typified. */
export function maxAge(wire: Buffer): number {
  if (wire.length < 12) return MIN_TTL;
  const flags = wire.readUInt16BE(2);
  const rcode = flags & 0xf;
  const an = wire.readUInt16BE(6);
  const ns = wire.readUInt16BE(8);
  let qtype = 0;
  const t = ttlWalk;
  t.wire = wire;
  t.soa = false;
  t.nsCount = 0;
  t.onlyOpt = true;
  t.extra = 0;
  t.min = MAX_TTL;
  const ok = forEachRecord(wire, walkTtl);
  t.wire = EMPTY_WIRE;
  const { soa, nsCount, onlyOpt, extra, min } = t;
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
