/**
 * A controllable upstream DNS server on 127.0.0.1 (UDP + TCP on the same port) for the forward,
 * cache and loadbalance tests, plus the next handler those plugin tests share (`FakeNext`). Their
 * setup context is test/helpers/setup.ts.
 *
 * Behaviour is chosen per lower-cased question name (absolute, trailing dot) with `on(name, b)`;
 * names without a rule get `defaultBehaviour` (NXDOMAIN unless changed). Every query received is
 * counted per name and transport, and `stop()` / `restart()` keep the port.
 */
import * as dgram from 'node:dgram';
import * as https from 'node:https';
import * as net from 'node:net';
import * as tls from 'node:tls';
import * as dnsPacket from 'dns-packet';
import type { Answer } from 'dns-packet';
import type { Handler } from '../../src/plugin.js';
import type { Query } from '../../src/query.js';
import { freePort } from './net.js';

export interface Behaviour {
  /** Answer records (dns-packet shape; owner names without trailing dot). */
  answers?: Answer[];
  authorities?: Answer[];
  additionals?: Answer[];
  /** Reply RCODE (default NOERROR). */
  rcode?: number;
  /** Delay the reply by this many milliseconds. */
  delayMs?: number;
  /** Hold the reply until this promise resolves (a query kept in flight as long as a test needs). */
  hold?: Promise<void>;
  /** Never reply (the client times out). */
  drop?: boolean;
  /** Over UDP answer with TC=1 and no records; TCP gets the full answer. */
  truncateUdp?: boolean;
  /** Close the TCP connection instead of replying. */
  closeTcp?: boolean;
  /** Reply with a different question name (to provoke FORMERR). */
  wrongQuestion?: boolean;
  /** Set AA on the reply. */
  aa?: boolean;
}

export interface Received {
  readonly name: string;
  readonly type: string;
  readonly proto: 'udp' | 'tcp' | 'tls' | 'https';
  readonly id: number;
  readonly rd: boolean;
  /** The query carried an OPT record. */
  readonly edns: boolean;
}

export class TestUpstream {
  readonly received: Received[] = [];
  defaultBehaviour: Behaviour = { rcode: 3 };
  private rules = new Map<string, Behaviour>();
  private udp: dgram.Socket | null = null;
  private tcp: net.Server | null = null;
  private dot: tls.Server | null = null;
  private doh: https.Server | null = null;
  private httpsOptions: { key: Buffer; cert: Buffer; port: number } | null = null;
  private tlsOptions: { key: Buffer; cert: Buffer; port: number } | null = null;
  private conns = new Set<net.Socket>();
  private timers = new Set<NodeJS.Timeout>();

  private constructor(readonly port: number) {}

  /** Start on a free port (or the given one). */
  static async start(port?: number): Promise<TestUpstream> {
    const u = new TestUpstream(port ?? (await freePort()));
    await u.listen();
    return u;
  }

  /** `host:port` as a forward TO. */
  get addr(): string {
    return `127.0.0.1:${this.port}`;
  }

  /** Set the behaviour for a name (`example.org` or `example.org.`). */
  on(name: string, b: Behaviour): this {
    this.rules.set(absolute(name), b);
    return this;
  }

  /** Queries received for a name (all transports, or one). */
  count(name?: string, proto?: 'udp' | 'tcp' | 'tls' | 'https'): number {
    const n = name === undefined ? undefined : absolute(name);
    return this.received.filter((r) => (n === undefined || r.name === n) && (proto === undefined || r.proto === proto))
      .length;
  }

  private async listen(): Promise<void> {
    const udp = dgram.createSocket('udp4');
    udp.on('message', (msg, rinfo) => {
      this.handle(msg, 'udp', (out) => {
        if (this.udp === udp) udp.send(out, rinfo.port, rinfo.address);
      });
    });
    await new Promise<void>((resolve, reject) => {
      udp.once('error', reject);
      udp.bind(this.port, '127.0.0.1', () => resolve());
    });
    udp.on('error', () => undefined);
    this.udp = udp;
    const tcp = net.createServer((sock) => this.serveStream(sock, 'tcp'));
    await new Promise<void>((resolve, reject) => {
      tcp.once('error', reject);
      tcp.listen(this.port, '127.0.0.1', () => resolve());
    });
    this.tcp = tcp;
    if (this.tlsOptions) await this.listenTls();
    if (this.httpsOptions) await this.listenHttps();
  }

  /** Also serve DNS over HTTPS (RFC 8484, `/dns-query`, GET and POST) on another port. */
  async enableHttps(key: Buffer, cert: Buffer): Promise<number> {
    this.httpsOptions = { key, cert, port: await freePort() };
    await this.listenHttps();
    return this.httpsOptions.port;
  }

  private async listenHttps(): Promise<void> {
    const o = this.httpsOptions!;
    const doh = https.createServer({ key: o.key, cert: o.cert }, (req, res) => {
      const url = new URL(req.url ?? '/', 'https://localhost');
      const answer = (msg: Buffer): void => {
        this.handle(
          msg,
          'https',
          (out) => {
            res.writeHead(200, { 'content-type': 'application/dns-message', 'content-length': out.length });
            res.end(out);
          },
          () => req.socket.destroy(),
        );
      };
      if (url.pathname !== '/dns-query') {
        res.writeHead(404).end();
        return;
      }
      if (req.method === 'GET') {
        answer(Buffer.from(url.searchParams.get('dns') ?? '', 'base64url'));
        return;
      }
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => answer(Buffer.concat(chunks)));
    });
    doh.on('connection', (sock: net.Socket) => {
      this.conns.add(sock);
      sock.on('close', () => this.conns.delete(sock));
    });
    await new Promise<void>((resolve, reject) => {
      doh.once('error', reject);
      doh.listen(o.port, '127.0.0.1', () => resolve());
    });
    this.doh = doh;
  }

  /** Also serve DNS over TLS (RFC 7858) on another port with this key and certificate. */
  async enableTls(key: Buffer, cert: Buffer): Promise<number> {
    this.tlsOptions = { key, cert, port: await freePort() };
    await this.listenTls();
    return this.tlsOptions.port;
  }

  private async listenTls(): Promise<void> {
    const o = this.tlsOptions!;
    const dot = tls.createServer({ key: o.key, cert: o.cert }, (sock) => this.serveStream(sock, 'tls'));
    await new Promise<void>((resolve, reject) => {
      dot.once('error', reject);
      dot.listen(o.port, '127.0.0.1', () => resolve());
    });
    this.dot = dot;
  }

  private serveStream(sock: net.Socket, proto: 'tcp' | 'tls'): void {
    this.conns.add(sock);
    sock.on('close', () => this.conns.delete(sock));
    sock.on('error', () => undefined);
    let pending = Buffer.alloc(0);
    sock.on('data', (chunk: Buffer) => {
      pending = Buffer.concat([pending, chunk]);
      while (pending.length >= 2) {
        const len = pending.readUInt16BE(0);
        if (pending.length < 2 + len) break;
        const msg = pending.subarray(2, 2 + len);
        pending = pending.subarray(2 + len);
        this.handle(
          Buffer.from(msg),
          proto,
          (out) => {
            const frame = Buffer.alloc(2 + out.length);
            frame.writeUInt16BE(out.length, 0);
            out.copy(frame, 2);
            if (!sock.destroyed) sock.write(frame);
          },
          () => sock.destroy(),
        );
      }
    });
  }

  private handle(
    msg: Buffer,
    proto: 'udp' | 'tcp' | 'tls' | 'https',
    send: (b: Buffer) => void,
    close?: () => void,
  ): void {
    let req: dnsPacket.Packet;
    try {
      req = dnsPacket.decode(msg);
    } catch {
      return;
    }
    const q = req.questions?.[0];
    if (!q) return;
    const name = absolute(q.name);
    const edns = (req.additionals ?? []).some((r) => r.type === 'OPT');
    this.received.push({
      name,
      type: q.type,
      proto,
      id: req.id ?? 0,
      rd: ((req.flags ?? 0) & dnsPacket.RECURSION_DESIRED) !== 0,
      edns,
    });
    const b = this.rules.get(name) ?? this.defaultBehaviour;
    if (b.drop) return;
    if (proto !== 'udp' && b.closeTcp) {
      close?.();
      return;
    }
    const truncated = proto === 'udp' && b.truncateUdp === true;
    const flags =
      dnsPacket.RECURSION_AVAILABLE |
      ((req.flags ?? 0) & dnsPacket.RECURSION_DESIRED) |
      (b.aa ? dnsPacket.AUTHORITATIVE_ANSWER : 0) |
      (truncated ? dnsPacket.TRUNCATED_RESPONSE : 0) |
      ((b.rcode ?? 0) & 0xf);
    const reply: dnsPacket.Packet = {
      id: req.id ?? 0,
      type: 'response',
      flags,
      questions: [b.wrongQuestion ? { ...q, name: `wrong.${q.name}` } : q],
      answers: truncated ? [] : (b.answers ?? []),
      authorities: truncated ? [] : (b.authorities ?? []),
      additionals: truncated ? [] : (b.additionals ?? []),
    };
    const out = dnsPacket.encode(reply);
    if (b.hold) {
      void b.hold.then(() => {
        if (this.udp !== null) send(out);
      });
    } else if (b.delayMs) {
      const t = setTimeout(() => {
        this.timers.delete(t);
        send(out);
      }, b.delayMs);
      this.timers.add(t);
    } else send(out);
  }

  /** Stop listening (the port stays reserved for `restart`). */
  async stop(): Promise<void> {
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
    const udp = this.udp;
    this.udp = null;
    if (udp) await new Promise<void>((resolve) => udp.close(() => resolve()));
    const tcp = this.tcp;
    this.tcp = null;
    const dot = this.dot;
    this.dot = null;
    const doh = this.doh;
    this.doh = null;
    for (const c of this.conns) c.destroy();
    if (tcp) await new Promise<void>((resolve) => tcp.close(() => resolve()));
    if (dot) await new Promise<void>((resolve) => dot.close(() => resolve()));
    if (doh) await new Promise<void>((resolve) => doh.close(() => resolve()));
  }

  /** Listen again on the same port. */
  async restart(): Promise<void> {
    await this.listen();
  }
}

function absolute(name: string): string {
  const l = name.toLowerCase();
  return l === '.' || l === '' ? '.' : l.endsWith('.') ? l : `${l}.`;
}

/** An A record in dns-packet shape. */
export function a(name: string, ip: string, ttl = 300): Answer {
  return { name: name.replace(/\.$/, ''), type: 'A', class: 'IN', ttl, data: ip };
}

/** An AAAA record in dns-packet shape. */
export function aaaa(name: string, ip: string, ttl = 300): Answer {
  return { name: name.replace(/\.$/, ''), type: 'AAAA', class: 'IN', ttl, data: ip };
}

/** An SOA record for negative answers. */
export function soa(zone: string, ttl = 60, minimum = 60): Answer {
  const z = zone.replace(/\.$/, '') || '.';
  return {
    name: z,
    type: 'SOA',
    class: 'IN',
    ttl,
    data: { mname: `ns.${z}`, rname: `hostmaster.${z}`, serial: 1, refresh: 7200, retry: 1800, expire: 86400, minimum },
  };
}

/** A next handler that records the queries it saw and answers with `answer(q)` (or returns `rcode`). */
export class FakeNext implements Handler {
  readonly name = 'fake';
  readonly seen: Query[] = [];
  constructor(private readonly answer: (q: Query) => number | Promise<number>) {}
  serve(q: Query): number | Promise<number> {
    this.seen.push(q);
    return this.answer(q);
  }
  get calls(): number {
    return this.seen.length;
  }
}
