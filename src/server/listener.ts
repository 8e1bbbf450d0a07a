/**
 * UDP and TCP sockets for one listen address (`dns://host:port`). A listener outlives
 * configuration reloads: the router it dispatches to is swapped, the sockets stay open.
 *
 * TCP follows RFC 7766: two-byte length framing, many queries per connection, pipelined queries
 * answered as they complete (out of order), an idle timeout, a read timeout for a started message;
 * back-pressure and fair connection caps (tcp.ts) keep slow, idle or hostile clients from
 * exhausting the server.
 */
import * as dgram from 'node:dgram';
import { createWriteStream, type WriteStream } from 'node:fs';
import * as net from 'node:net';
import type * as tls from 'node:tls';
import { networkInterfaces } from 'node:os';
import type { Transport } from '../query.js';
import { openOnEphemeralPort } from './ephemeralport.js';
import { DEFAULT_TCP_LIMITS, TcpPool, type ListenerInfo, type TcpLimits } from './tcp.js';
import type { ListenerTimeouts } from './listenopts.js';
import { unmapV4 } from '../util/ip.js';
import { ProxyDatagrams } from '../proxyproto/datagram.js';
import type { ProxyProtoSettings } from '../proxyproto/policy.js';
import { ShedStack, type ShedItem } from './shed.js';
import { DohServer } from './doh.js';
import type { HttpsOptions } from './listenopts.js';
import { clientAuthorized, serverTlsOptions, type TlsServerConfig } from './tlsconfig.js';
import { logger } from '../log.js';
import { nodeTls } from '../util/require.js';

/**
 * What the listener serves (docs/corefile.md §7.5): plain DNS on UDP and TCP, or, on TCP only,
 * DNS over TLS or DNS over HTTPS. `tls` null serves the same in clear, as CoreDNS does for a
 * `tls://` or `https://` block without the `tls` directive.
 */
export type ListenTransport =
  | { readonly kind: 'dns' }
  | { readonly kind: 'tls'; readonly tls: TlsServerConfig | null }
  | { readonly kind: 'https'; readonly tls: TlsServerConfig | null; readonly https: HttpsOptions };

const PLAIN: ListenTransport = { kind: 'dns' };
/** The UDP receive buffer with *shed* (the kernel doubles it for its bookkeeping; see udpRecvBuffer). */
const SHED_RECV_BUFFER = 64 * 1024;

/** One query's way back to its client: the transport it came on, how to reply, how to finish. */
export interface Exchange extends Transport {
  /** Send the reply bytes; only the first call of an exchange sends. */
  respond(reply: Buffer): void;
  /** The query is finished (answered, dropped or failed); called exactly once. */
  done(): void;
}

/** Called for every packet. */
export type Dispatch = (packet: Buffer, ex: Exchange) => void;

export { DEFAULT_TCP_LIMITS, type TcpLimits, type TcpConnectionStats } from './tcp.js';

export class Listener implements ListenerInfo {
  private udp4: dgram.Socket | null = null;
  private udp6: dgram.Socket | null = null;
  /** Per-address UDP sockets beside the wildcard one (see `bindLocalAddresses`). */
  private readonly udpLocal: dgram.Socket[] = [];
  private tcp: net.Server | null = null;
  /** `multisocket`: the sockets beyond the first UDP and TCP pair, on the same address and port. */
  private readonly extraUdp: dgram.Socket[] = [];
  private readonly extraTcp: net.Server[] = [];
  /** The TCP connections and their limits. */
  readonly tcpPool: TcpPool;
  private inFlight = 0;
  private drainWaiters: (() => void)[] = [];
  private closing = false;
  /** handOff() ran: the UDP sockets are connected away and replies go through `sendParked`. */
  parked = false;
  /** Datagrams read, for handOff() to see that a read turn found nothing more. */
  private udpReceived = 0;
  /** Port actually bound (differs from the requested one only when 0 was asked). */
  port: number;
  /** `proxyproto` on this listener's UDP sockets (null: none; TCP's is in `tcpPool.proxy`). */
  private proxy: ProxyDatagrams | null = null;
  /** `shed` on this listener's UDP sockets (null: none). */
  shed: ShedStack | null = null;
  private readonly serveShed = (item: ShedItem): void =>
    this.serveUdp(item.sock, item.msg, item.address, item.port, item.family, item.localPort);

  constructor(
    /** Listener name, e.g. `dns://:53` or `dns://127.0.0.1:1053`; the `server` metric label. */
    readonly name: string,
    /** Address to bind; '' = all interfaces (dual-stack). */
    readonly host: string,
    port: number,
    private dispatch: Dispatch,
    private readonly limits: TcpLimits = DEFAULT_TCP_LIMITS,
    /**
     * Bind with SO_REUSEPORT (Node ≥ 22.12), so that every query thread opens its own sockets on
     * this port and the kernel spreads flows among them (docs/multicore.md).
     */
    private readonly reusePort = false,
    /**
     * `multisocket`: UDP and TCP sockets opened on the address in this thread (SO_REUSEPORT among
     * them when more than one): each is read by this thread's event loop (docs/multicore.md §9).
     */
    readonly sockets = 1,
    private transport: ListenTransport = PLAIN,
  ) {
    if (sockets > 1) this.reusePort = true;
    this.port = port;
    this.tcpPool = new TcpPool(limits, this);
    if (transport.kind === 'https') {
      const log = (line: Buffer): void => void this.keyLog?.write(line);
      this.doh = new DohServer(
        this,
        () => this.tcpPool.limits,
        transport.https,
        () => (this.keyLog ? log : null),
      );
    }
    this.secure = this.secureContext();
  }

  /** The DoH server of an `https://` listener. */
  readonly doh: DohServer | null = null;
  /** The TLS context new connections handshake with (DoT, DoH); null in clear. */
  private secure: tls.SecureContext | null;
  /** `keylog`: where the TLS secrets of new connections are appended. */
  private keyLog: WriteStream | null = null;
  private keyLogPath: string | null = null;

  private secureContext(): tls.SecureContext | null {
    const t = this.transport;
    if (t.kind !== 'tls' || t.tls === null) return null;
    return nodeTls().createSecureContext(serverTlsOptions(t.tls));
  }

  /**
   * The TLS material and DoH limits of a (re)load: new handshakes use them; connections already
   * open keep theirs. The material was checked at setup, so this does not fail on it.
   */
  setTransport(t: ListenTransport): void {
    if (t.kind !== this.transport.kind) return;
    this.transport = t;
    this.secure = this.secureContext();
    if (t.kind === 'https') {
      this.doh?.update(t.https);
      this.doh?.setTls(t.tls);
    }
    const path = t.kind === 'dns' ? null : (t.tls?.keyLog ?? null);
    if (path !== this.keyLogPath) {
      this.keyLog?.end();
      this.keyLog = null;
      this.keyLogPath = path;
      if (path) {
        this.keyLog = createWriteStream(path, { flags: 'a', mode: 0o600 });
        this.keyLog.on('error', (e) =>
          logger('tls').error(`unable to write TLS Key Log to ${JSON.stringify(path)}: ${e.message}`),
        );
      }
    }
  }

  get dispatchFn(): Dispatch {
    return this.dispatch;
  }

  /** A TCP query went to the chain. */
  started(): void {
    this.inFlight++;
  }

  setDispatch(d: Dispatch): void {
    this.dispatch = d;
  }

  /**
   * The `timeouts` plugin's values for this listener (src/server/listenopts.ts), over the limits it
   * was created with; applied on every (re)load, to new reads and timers of existing connections too.
   */
  setTimeouts(t: ListenerTimeouts): void {
    const base = this.limits;
    this.tcpPool.limits = {
      ...base,
      readTimeoutMs: t.readMs ?? base.readTimeoutMs,
      idleTimeoutMs: t.idleMs ?? base.idleTimeoutMs,
      writeTimeoutMs: t.writeMs ?? base.writeTimeoutMs,
      maxQueries: t.maxTcpQueries ?? base.maxQueries,
    };
  }

  /**
   * The `proxyproto` settings of the listener's blocks (src/server/listenopts.ts), or null; applied
   * on every (re)load, to datagrams and connections accepted from then on.
   */
  setProxyProto(settings: ProxyProtoSettings | null): void {
    if (this.proxy?.settings === settings) return;
    this.proxy = settings === null ? null : new ProxyDatagrams(settings);
    this.tcpPool.proxy = settings;
  }

  /** `shed` on a block of the listener (src/server/shed.ts); applied on every (re)load. */
  setShed(on: boolean): void {
    if (on === (this.shed !== null)) return;
    if (on) this.shed = new ShedStack(this.name, this.serveShed, () => this.finished());
    else {
      const waiting = this.shed!.clear();
      this.shed = null;
      for (let i = 0; i < waiting; i++) this.finished();
    }
    for (const s of this.udpSockets()) s.setRecvBufferSize(this.udpRecvBuffer());
  }

  /**
   * The UDP sockets' receive buffer: 4 MiB rides out bursts; with *shed*, a small one, because the
   * kernel's queue is first in, first out and unbounded by shed: at twice the rate a server can
   * serve, 4 MiB held ~100 ms of datagrams, and every answer came that late. With SHED_RECV_BUFFER
   * the kernel drops the excess instead (counted in the host's UDP receive errors), and what is
   * read is fresh.
   */
  private udpRecvBuffer(): number {
    return this.shed === null ? 4 << 20 : SHED_RECV_BUFFER;
  }

  /** The kernel's receive buffer of each UDP socket (twice what was asked), for tests and diagnostics. */
  get udpRecvBufferSizes(): number[] {
    return this.udpSockets().map((s) => s.getRecvBufferSize());
  }

  async open(): Promise<void> {
    await openOnEphemeralPort(
      this.port === 0,
      () => this.bindAll(),
      () => {
        this.port = 0;
      },
    );
  }

  /** Bind the UDP sockets, then TCP on the same port; on a TCP failure nothing stays bound. */
  private async bindAll(): Promise<void> {
    if (this.transport.kind !== 'dns') {
      // DoT and DoH are TCP only.
      this.setTransport(this.transport);
      await this.listenTcp();
      return;
    }
    if (this.host === '') {
      // All interfaces: one dual-stack IPv6 socket when the host has IPv6, else IPv4 only.
      try {
        this.udp6 = await this.bindUdp('udp6', '::', false);
      } catch (e) {
        if (!isAddrNotAvailable(e)) throw e;
        this.udp4 = await this.bindUdp('udp4', '0.0.0.0', false);
      }
    } else if (net.isIPv6(this.host)) {
      this.udp6 = await this.bindUdp('udp6', this.host, true);
    } else {
      this.udp4 = await this.bindUdp('udp4', this.host, false);
    }
    if (this.host === '') await this.bindLocalAddresses();
    try {
      this.tcp = await this.listenTcp();
      for (let i = 1; i < this.sockets; i++) {
        const v6 = this.udp6 !== null;
        this.extraUdp.push(await this.bindUdp(v6 ? 'udp6' : 'udp4', this.udpHost(), v6 && this.host !== ''));
        this.extraTcp.push(await this.listenTcp());
      }
    } catch (e) {
      this.closeUdp();
      this.tcp?.close();
      this.tcp = null;
      for (const t of this.extraTcp.splice(0)) t.close();
      throw e;
    }
  }

  /** The address the main UDP socket was bound to. */
  private udpHost(): string {
    if (this.host !== '') return this.host;
    return this.udp6 !== null ? '::' : '0.0.0.0';
  }

  /**
   * Node's dgram cannot read the destination address of a packet (no IP_PKTINFO), so a reply from
   * the wildcard socket leaves from whatever source address the kernel picks; on a host with
   * several addresses a client asking 10.96.0.10 could get its answer from another address and
   * drop it. Binding one more socket per local address (the kernel delivers to the most specific
   * one) makes every reply leave from the address it was sent to; the wildcard socket still
   * catches addresses added later.
   */
  private async bindLocalAddresses(): Promise<void> {
    const seen = new Set<string>();
    for (const list of Object.values(networkInterfaces())) {
      for (const a of list ?? []) {
        if (seen.has(a.address) || (a.family === 'IPv6' && (a.address.toLowerCase().startsWith('fe80:') || this.udp4)))
          continue;
        seen.add(a.address);
        try {
          this.udpLocal.push(await this.bindUdp(a.family === 'IPv6' ? 'udp6' : 'udp4', a.address, a.family === 'IPv6'));
        } catch {
          // An address that cannot be bound is still served by the wildcard socket.
        }
      }
    }
  }

  private closeUdp(): void {
    this.udp4?.close();
    this.udp6?.close();
    this.udp4 = null;
    this.udp6 = null;
    for (const s of this.udpLocal.splice(0)) s.close();
    for (const s of this.extraUdp.splice(0)) s.close();
  }

  private bindUdp(type: 'udp4' | 'udp6', host: string, ipv6Only: boolean): Promise<dgram.Socket> {
    return new Promise((resolve, reject) => {
      const opts: dgram.SocketOptions & { reusePort?: boolean } = {
        type,
        ipv6Only,
        reuseAddr: this.host === '',
        recvBufferSize: this.udpRecvBuffer(),
        sendBufferSize: 4 << 20,
        lookup: type === 'udp6' ? literalLookup6 : literalLookup4,
      };
      if (this.reusePort) opts.reusePort = true;
      const sock = dgram.createSocket(opts);
      const onError = (e: Error) => {
        sock.close();
        reject(e);
      };
      sock.once('error', onError);
      sock.bind({ port: this.port, address: host, exclusive: false }, () => {
        sock.off('error', onError);
        sock.on('error', () => {
          /* ICMP errors on send are not fatal for a server socket */
        });
        this.port = sock.address().port;
        const family: 1 | 2 = type === 'udp6' ? 2 : 1;
        const localPort = this.port;
        sock.on('message', (msg, rinfo) => this.onUdp(sock, msg, rinfo, family, localPort));
        resolve(sock);
      });
    });
  }

  private onUdp(sock: dgram.Socket, msg: Buffer, rinfo: dgram.RemoteInfo, family: 1 | 2, localPort: number): void {
    if (this.closing) return;
    this.udpReceived++;
    if (this.shed !== null) {
      // Counted in flight while it waits, so that a drain or hand-off waits for it too.
      this.inFlight++;
      if (this.shed.push({ sock, msg, address: rinfo.address, port: rinfo.port, family, localPort })) this.finished();
      return;
    }
    this.inFlight++;
    this.serveUdp(sock, msg, rinfo.address, rinfo.port, family, localPort);
  }

  /** Serve one datagram (counted in flight by the caller). */
  private serveUdp(
    sock: dgram.Socket,
    msg: Buffer,
    address: string,
    port: number,
    family: 1 | 2,
    localPort: number,
  ): void {
    // A udp4 socket only sees IPv4 clients; a dual-stack udp6 one sees IPv4 as ::ffff:a.b.c.d.
    const remote = family === 2 ? unmapV4(address) : address;
    const fam = family === 1 || remote !== address ? 1 : 2;
    if (this.proxy !== null) return this.onProxied(sock, msg, address, port, remote, fam, localPort);
    this.dispatch(msg, new UdpExchange(this, sock, fam, remote, port, address, localPort, null));
  }

  /** A datagram on a `proxyproto` listener: the query is the header's client's, the reply the peer's. */
  private onProxied(
    sock: dgram.Socket,
    msg: Buffer,
    address: string,
    port: number,
    remote: string,
    fam: 1 | 2,
    localPort: number,
  ): void {
    const u = this.proxy!.unwrap(msg, remote, port, fam);
    if (u === null) {
      this.finished();
      return;
    }
    const ex = new UdpExchange(this, sock, fam, remote, port, address, localPort, u.tlv);
    if (u.client !== null) ex.setClient(u.client.address, u.client.port, u.client.family);
    this.dispatch(u.payload, ex);
  }

  /** A query of this listener finished (see Exchange.done). */
  finished(): void {
    this.inFlight--;
    if (this.inFlight === 0 && this.drainWaiters.length) {
      for (const w of this.drainWaiters.splice(0)) w();
    }
  }

  private listenTcp(): Promise<net.Server> {
    return new Promise((resolve, reject) => {
      const srv = net.createServer({ noDelay: true, pauseOnConnect: false }, (c) => this.onConnection(c));
      const onError = (e: Error) => reject(e);
      srv.once('error', onError);
      const opts: net.ListenOptions & { reusePort?: boolean } = { port: this.port, exclusive: false };
      if (this.reusePort) opts.reusePort = true;
      if (this.host !== '') opts.host = this.host;
      else if (this.udp4) opts.host = '0.0.0.0';
      srv.listen(opts, () => {
        srv.off('error', onError);
        resolve(srv);
      });
    });
  }

  private onConnection(c: net.Socket): void {
    if (this.closing) {
      c.destroy();
      return;
    }
    const remote = unmapV4(c.remoteAddress ?? '');
    const family = net.isIPv4(remote) ? 1 : 2;
    const t = this.transport;
    if (t.kind === 'dns') {
      this.tcpPool.add(c, remote, family);
      return;
    }
    if (t.kind === 'tls') {
      // The caps and the first-query read timeout apply from accept, so the handshake is inside them.
      this.tcpPool.add(this.secure && t.tls ? this.wrapTls(c, t.tls) : c, remote, family);
      return;
    }
    this.doh!.accept(c, remote, family);
  }

  /** TLS on an accepted socket, server side, with the listener's current context and client auth. */
  private wrapTls(c: net.Socket, cfg: TlsServerConfig): tls.TLSSocket {
    const opts: tls.TLSSocketOptions = {
      isServer: true,
      secureContext: this.secure!,
      requestCert: cfg.clientAuth !== 'nocert',
      rejectUnauthorized: cfg.clientAuth === 'require_and_verify',
    };
    const s = new (nodeTls().TLSSocket)(c, opts);
    if (cfg.clientAuth === 'require' || cfg.clientAuth === 'verify_if_given') {
      s.once('secure', () => {
        if (!clientAuthorized(s, cfg.clientAuth)) s.destroy();
      });
    }
    const log = this.keyLog;
    if (log) s.on('keylog', (line: Buffer) => log.write(line));
    // A failed handshake is the client's problem; the connection's own error handler closes it.
    s.on('error', () => s.destroy());
    return s;
  }

  /** Number of queries being processed. */
  get busy(): number {
    return this.inFlight;
  }

  /**
   * Leave the port to the other processes bound to it with SO_REUSEPORT (docs/node-cache.md,
   * "Upgrades without a gap"): each UDP socket is connected to a port nobody sends from, so the
   * kernel stops choosing it for new datagrams (a connected socket only matches its peer) while the
   * datagrams already queued on it are still read and answered (`sendParked`); the TCP listener
   * stops accepting. Resolves when every query read has been answered and one more read turn found
   * nothing, so that the close that follows drops no datagram.
   */
  async handOff(): Promise<void> {
    this.parked = true;
    for (const s of this.udpSockets()) park(s);
    await Promise.all(this.tcpServers().map((t) => new Promise<void>((resolve) => t.close(() => resolve()))));
    this.tcp = null;
    this.extraTcp.splice(0);
    for (;;) {
      if (this.inFlight > 0) await new Promise<void>((resolve) => this.drainWaiters.push(resolve));
      const seen = this.udpReceived;
      // Two turns of the event loop: every datagram queued before the park has been read by then.
      await new Promise<void>((resolve) => setImmediate(() => setImmediate(resolve)));
      if (this.inFlight === 0 && seen === this.udpReceived) return;
    }
  }

  private udpSockets(): dgram.Socket[] {
    return [this.udp4, this.udp6, ...this.udpLocal, ...this.extraUdp].filter((s): s is dgram.Socket => s !== null);
  }

  private tcpServers(): net.Server[] {
    return this.tcp === null ? [...this.extraTcp] : [this.tcp, ...this.extraTcp];
  }

  /**
   * A reply on a parked socket: unconnect, send, connect away again, all synchronous (the lookup
   * is the literal one), so the socket is open to new datagrams for microseconds only; one that
   * lands then is read and answered the same way.
   */
  sendParked(sock: dgram.Socket, reply: Buffer, port: number, address: string): void {
    try {
      sock.disconnect();
    } catch {
      // not connected (a park in progress): send as is
    }
    try {
      sock.send(reply, port, address);
    } finally {
      park(sock);
    }
  }

  /**
   * Stop accepting, wait for in-flight queries (at most `graceMs`), then close every connection.
   */
  async close(graceMs = 5000): Promise<void> {
    // Stop taking new queries, let in-flight ones finish and reply on their sockets, then close.
    this.closing = true;
    const tcpClosed = Promise.all(
      this.tcpServers().map((t) => new Promise<void>((resolve) => t.close(() => resolve()))),
    );
    if (this.inFlight > 0) {
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, graceMs);
        this.drainWaiters.push(() => {
          clearTimeout(t);
          resolve();
        });
      });
    }
    this.closeUdp();
    this.shed?.clear();
    for (const c of this.tcpPool.connections()) c.end();
    this.doh?.close();
    const destroyTimer = setTimeout(() => {
      for (const c of [...this.tcpPool.connections()]) c.close();
      this.doh?.destroyAll();
    }, 1000);
    await tcpClosed;
    clearTimeout(destroyTimer);
    this.tcpPool.stop();
    this.keyLog?.end();
    this.keyLog = null;
  }
}

/**
 * A UDP query: one object per packet with its methods on the prototype, so the hot path creates
 * no closures.
 */
class UdpExchange implements Exchange {
  readonly proto = 'udp';
  readonly localAddress: string;
  readonly server: string;
  private answered = false;
  /** The reply's destination port: the peer's, also when a PROXY header named another client. */
  private readonly replyPort: number;

  constructor(
    private readonly listener: Listener,
    private readonly sock: dgram.Socket,
    public family: 1 | 2,
    public remoteAddress: string,
    public remotePort: number,
    /** The source address as the socket reported it (a udp6 socket replies to the mapped form). */
    private readonly replyAddress: string,
    readonly localPort: number,
    readonly proxyTlv: string | null,
  ) {
    this.localAddress = listener.host;
    this.server = listener.name;
    this.replyPort = remotePort;
  }

  /** The client a PROXY header named: what the chain sees as the query's source. */
  setClient(address: string, port: number, family: 1 | 2): void {
    this.remoteAddress = address;
    this.remotePort = port;
    this.family = family;
  }

  respond(reply: Buffer): void {
    if (this.answered) return;
    this.answered = true;
    try {
      const l = this.listener;
      if (l.parked) l.sendParked(this.sock, reply, this.replyPort, this.replyAddress);
      else if (l.shed !== null) l.shed.send(this.sock, reply, this.replyPort, this.replyAddress);
      else this.sock.send(reply, this.replyPort, this.replyAddress);
    } catch {
      // The socket was closed (shutdown grace period over): the client will retry elsewhere.
    }
  }

  done(): void {
    this.listener.finished();
  }
}

/**
 * dgram resolves the destination of every `send` through `dns.lookup`, which for the IP literals
 * a server replies to still costs a `process.nextTick` per packet; replies only ever go to the
 * literal address a query came from, so hand it straight back; the family is the socket's.
 */
function literalLookup4(
  address: string,
  _family: unknown,
  callback: (err: Error | null, address: string, family: number) => void,
): void {
  callback(null, address, 4);
}

function literalLookup6(
  address: string,
  _family: unknown,
  callback: (err: Error | null, address: string, family: number) => void,
): void {
  callback(null, address, 6);
}

function isAddrNotAvailable(e: unknown): boolean {
  const code = (e as { code?: string }).code;
  return code === 'EAFNOSUPPORT' || code === 'EADDRNOTAVAIL' || code === 'EINVAL';
}

/**
 * Connect a UDP socket to the discard port of its own address (of loopback for a wildcard one):
 * nobody sends from there, so the kernel delivers it nothing new. Synchronous with the literal
 * lookup.
 */
function park(sock: dgram.Socket): void {
  const { address, family } = sock.address();
  const v6 = family === 'IPv6';
  const target = address === '::' ? '::1' : address === '0.0.0.0' ? '127.0.0.1' : address;
  try {
    sock.connect(9, v6 && net.isIPv4(target) ? `::ffff:${target}` : target);
  } catch {
    // already connected or closed
  }
}
