/**
 * One DNS query travelling down a server block's plugin chain, and the reply written for it.
 *
 * The request is parsed once from the raw packet (header, first question, EDNS) without building
 * a dns-packet object; `request` decodes the whole message lazily for the plugins that need it.
 * Plugins write their answer with `write` (decoded) or `writeWire` (ready wire bytes, the fast
 * path); plugins above them in the chain see it in `reply` after `next.serve()` returns and may
 * inspect or change it. The server encodes and sends `reply` once the chain is done.
 *
 * The reply contract (docs/ARCHITECTURE.md, "The reply contract"): `reply` (non-null) is the only
 * signal that an answer exists; the RCODE a handler returns says what happened, never whether
 * something was written. A `Reply` knows whether its wire bytes are shared (kept by the plugin
 * that wrote them, e.g. a stored answer): `mutableWire()` copies only then.
 */
import { performance } from 'node:perf_hooks';
import { encodeMessage } from './dns/encode.js';
import { decode, rcodeOf, type Message } from './dns/message.js';
import { Flag, Qtype } from './dns/constants.js';
import { forEachRecord, writePlainName, type ParsedRequest } from './dns/wire.js';
import { stripTsig, type TsigRecord } from './dns/tsig.js';
import { tsigNow, type TsigExchange } from './tsig.js';
import type { Span } from './tracing/span.js';

export type Proto = 'udp' | 'tcp';

/** The nested lookups through the server that led to a query (src/server/selflookup.ts). */
export interface LookupChain {
  /** The `qtype lname` of each lookup along the way, outermost first. */
  readonly keys: readonly string[];
  /** `Query.depth` of the nested query (the asking query's own count, CoreDNS's LoopKey, kept). */
  readonly depth: number;
  /** A lookup made while serving this query was refused (cycle or too long a chain). */
  refused: boolean;
}

/** Where a query came in: fixed per listener and client. */
export interface Transport {
  readonly proto: Proto;
  /** 1 = IPv4, 2 = IPv6 (the `family` metric label). */
  readonly family: 1 | 2;
  readonly remoteAddress: string;
  readonly remotePort: number;
  readonly localAddress: string;
  readonly localPort: number;
  /** The listener's name, used as the `server` metric label: `dns://:53`, `dns://127.0.0.1:1053`. */
  readonly server: string;
  /**
   * The PROXY v2 header's TLVs in hex, for the `proxyproto/tlv` metadata label (`tlv_metadata`);
   * absent or null without them.
   */
  readonly proxyTlv?: string | null;
  /**
   * DNS over HTTPS: the HTTP request's headers (lower-case names), from which *trace* continues a
   * client's B3 trace context. Absent on other transports.
   */
  readonly httpHeaders?: Readonly<Record<string, string | string[] | undefined>>;
  /**
   * TCP only: send several messages for this one query (a zone transfer). Absent on UDP and on the
   * server's own lookups.
   */
  readonly openStream?: () => ReplyStream;
}

/** Messages sent one after another for one query on a TCP connection (docs/plugins.md, transfer). */
export interface ReplyStream {
  /**
   * Send one complete message (id, flags, question and OPT already in place). Resolves once the
   * connection has taken it and has room for the next (after a turn of the event loop, so other
   * connections are served in between); false when the connection is closed. The connection is
   * done with `msg` when `send` returns (it is copied into the connection's frame), so the caller
   * may fill the same buffer with the next message (plugins/transfer does).
   */
  send(msg: Buffer): Promise<boolean>;
  /**
   * The stream failed after some of its messages went out: close the connection, so the client
   * sees a failed transfer at once instead of waiting for a closing message that never comes.
   */
  abort(): void;
}

/** An EDNS0 option (code and raw data). */
export interface EdnsOption {
  readonly code: number;
  readonly data: Buffer;
}

/** How `Query.writeWire` takes its bytes. */
export interface WireOptions {
  /**
   * The writer keeps these bytes (a stored answer it serves again): nobody may change them, and a
   * plugin that must change the reply gets a copy from `Reply.mutableWire()`. Without it the
   * buffer is handed over to the query: the writer must not read or reuse it afterwards, and the
   * plugins above and the server may change it in place.
   */
  readonly shared?: boolean;
}

/**
 * The reply written by a plugin: wire bytes, a decoded message, or both (kept in sync lazily).
 * The decoded message always belongs to the reply; the wire bytes belong to it unless `shared`.
 */
export class Reply {
  private wireBytes: Buffer | null;
  private msg: Message | null;
  private sharedWire: boolean;
  /**
   * EDNS options this reply carries besides the ones in its message (nsid): the server puts them
   * in the reply's OPT, replacing an option of the same code, when the query had EDNS.
   */
  ednsOptions: EdnsOption[] | null = null;

  constructor(
    wire: Buffer | null,
    msg: Message | null,
    readonly plugin: string,
    shared = false,
  ) {
    this.wireBytes = wire;
    this.msg = msg;
    this.sharedWire = wire !== null && shared;
  }

  /** The decoded message, for changing it. Any cached wire form is dropped. */
  message(): Message {
    if (!this.msg) this.msg = decode(this.wireBytes!);
    this.wireBytes = null;
    this.sharedWire = false;
    return this.msg;
  }

  /**
   * The wire bytes, for changing them in place: copied first only when they are shared, encoded
   * when the reply is held as a message. Any decoded form is dropped (it would go stale).
   */
  mutableWire(): Buffer {
    if (!this.wireBytes) this.wireBytes = encodeMessage(this.msg!);
    else if (this.sharedWire) this.wireBytes = Buffer.from(this.wireBytes);
    this.sharedWire = false;
    this.msg = null;
    return this.wireBytes;
  }

  /** True when the wire bytes are kept by their writer and must not be changed in place. */
  get isShared(): boolean {
    return this.sharedWire;
  }

  /** The decoded message, read-only use (keeps the wire form). */
  peek(): Message {
    if (!this.msg) this.msg = decode(this.wireBytes!);
    return this.msg;
  }

  /** Wire form (encoded with name compression when it came as a message), read-only use. */
  wire(): Buffer {
    if (!this.wireBytes) this.wireBytes = encodeMessage(this.msg!);
    return this.wireBytes;
  }

  /** True when the reply is (still) held as wire bytes. */
  get isWire(): boolean {
    return this.wireBytes !== null;
  }

  get rcode(): number {
    if (this.wireBytes) return this.wireBytes[3]! & 0xf; // extended RCODE only via peek()
    return rcodeOf(this.msg!);
  }

  /** The 16-bit flags word (QR included). */
  get flags(): number {
    if (this.wireBytes) return this.wireBytes.readUInt16BE(2);
    return ((this.msg!.flags ?? 0) & 0x7fff) | Flag.QR;
  }

  get answerCount(): number {
    return this.wireBytes ? this.wireBytes.readUInt16BE(6) : this.msg!.answers.length;
  }
}

export class Query {
  /** The reply written so far, or null. */
  reply: Reply | null = null;
  /** Error returned by the plugin that failed (logged by `errors`). */
  error: Error | null = null;
  /** No reply at all is sent, not even a bare one (acl `drop`); set with `reply` left null. */
  dropped = false;
  /**
   * The plugin sent its messages itself through `transport.openStream` (a zone transfer): the
   * server sends nothing more. `reply` then holds the last message, for the plugins above (log,
   * prometheus) to describe.
   */
  streamed = false;
  /**
   * Called with the reply's final bytes (after the server fitted it to the client: OPT,
   * truncation) just before they are sent; null for almost every query. dnstap's `full` sets it,
   * because CoreDNS taps the message its writer sent.
   */
  onSend: ((wire: Buffer) => void) | null = null;
  /**
   * The request's TSIG (src/tsig.ts): set by the dispatcher only when the additional section holds
   * a TSIG RR, null for every other query.
   */
  tsig: TsigExchange | null = null;
  private metadata: Map<string, string> | null = null;
  /** Server-block zone that was matched (`.` if none); set by the router. */
  zone = '.';
  /**
   * How many internal lookups deep this query is (0 for a client's query): a plugin that sends a
   * query through the server again (rewrite's cname rule) passes depth + 1 and stops at a limit.
   */
  depth = 0;
  /**
   * The chain of nested lookups this query is part of (src/server/selflookup.ts); null for a
   * client's query. It travels with the query (and its `derive`d copies), so a lookup that would
   * repeat one of its questions is refused whichever thread serves the chain.
   */
  lookups: LookupChain | null = null;
  /** performance.now() (milliseconds) when the packet was read. */
  readonly start: number;
  /**
   * performance.now() (milliseconds) after which plugins stop waiting for this query (the `cancel`
   * plugin sets it; Infinity = none). Honoured by `forward`, which starts no attempt after it and
   * cuts a running one at it.
   */
  deadline = Infinity;
  /**
   * The span of the plugin serving this query when the *trace* plugin traces it (src/tracing/),
   * else null: forward and grpc start their attempts' spans under it.
   */
  span: Span | null = null;
  private decoded: Message | null = null;

  constructor(
    readonly raw: Buffer,
    readonly req: ParsedRequest,
    readonly transport: Transport,
    start?: number,
  ) {
    this.start = start ?? performance.now();
  }

  /** Plugin metadata (`{/name}` in log formats), created on first use. */
  get meta(): Map<string, string> {
    this.metadata ??= new Map();
    return this.metadata;
  }

  /** One metadata label's value, '' when absent (reads without creating the map). */
  metaValue(label: string): string {
    return this.metadata?.get(label) ?? '';
  }

  /** Query id. */
  get id(): number {
    return this.req.id;
  }
  /** Question name as asked (client's letter case), absolute with trailing dot. */
  get name(): string {
    return this.req.name;
  }
  /** Lower-cased question name, absolute. */
  get lname(): string {
    return this.req.lname;
  }
  get qtype(): number {
    return this.req.qtype;
  }
  get qclass(): number {
    return this.req.qclass;
  }
  get proto(): Proto {
    return this.transport.proto;
  }
  /** DO bit of the query's EDNS. */
  get do(): boolean {
    return this.req.edns !== null && this.req.edns.do;
  }

  /**
   * Buffer size the reply must fit in: 512 for UDP without EDNS, the advertised EDNS size (at least
   * 512) for UDP with EDNS, 65535 for TCP (the `{>bufsize}` of the log plugin).
   */
  get bufsize(): number {
    if (this.transport.proto === 'tcp') return 65535;
    return this.req.edns ? Math.max(512, this.req.edns.udpSize) : 512;
  }

  /** The full request decoded by dns-packet (lazily; do not mutate). */
  get request(): Message {
    if (!this.decoded) this.decoded = decode(this.raw);
    return this.decoded;
  }

  /** Write a decoded reply. `plugin` is recorded for metrics (`plugin` label). */
  write(msg: Message, plugin: string): void {
    this.reply = new Reply(null, msg, plugin);
  }

  /**
   * Write a ready wire reply (its id and question must already match the query). The buffer is
   * handed over (see WireOptions) unless `opts.shared`.
   */
  writeWire(buf: Buffer, plugin: string, opts?: WireOptions): void {
    this.reply = new Reply(buf, null, plugin, opts?.shared === true);
  }

  /**
   * Change the request's header flags word as later plugins, forwarded queries and the reply see
   * it (header's `query` rules). The packet is copied, never changed in place.
   */
  setRequestFlags(flags: number): void {
    if (flags === this.req.flags) return;
    const raw = Buffer.from(this.raw);
    raw.writeUInt16BE(flags, 2);
    this.replaceRequest(raw, { ...this.req, flags });
  }

  /**
   * Lower the EDNS UDP size the client advertised to `size` (bufsize): later plugins, forwarded
   * queries and the reply's size limit see the lower one. Nothing happens without EDNS or when the
   * advertised size is not larger.
   */
  clampUdpSize(size: number): void {
    const edns = this.req.edns;
    if (edns === null || edns.udpSize <= size) return;
    let classOff = -1;
    forEachRecord(this.raw, (section, _rr, typeOff) => {
      if (section === 2 && this.raw.readUInt16BE(typeOff) === Qtype.OPT) classOff = typeOff + 2;
    });
    if (classOff < 0) return;
    const raw = Buffer.from(this.raw);
    raw.writeUInt16BE(size, classOff);
    this.replaceRequest(raw, { ...this.req, edns: { ...edns, udpSize: size } });
  }

  /**
   * Remove the request's TSIG RR (the tsig plugin, once it verified it): later plugins and
   * forwarded queries see the request without it, as CoreDNS's tsig strips it from r.Extra.
   */
  stripTsig(t: TsigRecord): void {
    this.replaceRequest(stripTsig(this.raw, t), { ...this.req, tsigAt: -1, tsigLast: false });
  }

  /**
   * Send several messages for this query (a zone transfer) over TCP; null where the transport has
   * no stream. When the request was TSIG-signed each message is signed, every one after the first
   * over the prior MAC and the timers (RFC 8945 §5.3.1), as miekg/dns's Transfer.Out does.
   */
  openStream(): ReplyStream | null {
    const out = this.transport.openStream?.() ?? null;
    const signer = this.tsig?.signer ?? null;
    if (out === null || signer === null) return out;
    return {
      send: (msg) => {
        const signed = signer.sign(msg, tsigNow());
        return signed === null ? Promise.resolve(false) : out.send(signed);
      },
      abort: () => out.abort(),
    };
  }

  private replaceRequest(raw: Buffer, req: ParsedRequest): void {
    // `raw` and `req` are read-only for plugins; only the two methods above replace them.
    const self = this as { raw: Buffer; req: ParsedRequest };
    self.raw = raw;
    self.req = req;
    this.decoded = null;
  }

  /**
   * Record an error for the `errors` plugin; returns `rcode` for convenience. The error does not
   * say whether a reply was written: `reply` does.
   */
  fail(err: Error, rcode: number): number {
    this.error = err;
    return rcode;
  }

  /**
   * A copy of this query for another name/type (autopath, rewrite, internal lookups): same
   * transport and EDNS, its own reply. The raw packet is rebuilt for the new question.
   */
  derive(name: string, qtype = this.req.qtype): Query {
    const raw = rebuildQuestion(this.raw, this.req, name, qtype);
    const lname = name.toLowerCase();
    // The copy is the server's own question: a TSIG it still carries is not the client's to verify.
    const req: ParsedRequest = {
      ...this.req,
      name,
      lname,
      qtype,
      questionEnd: 12 + wireNameLength(name) + 4,
      tsigAt: -1,
      tsigLast: false,
    };
    const q = new Query(raw, req, this.transport, this.start);
    q.zone = this.zone;
    q.deadline = this.deadline;
    q.depth = this.depth;
    q.lookups = this.lookups;
    q.span = this.span;
    return q;
  }
}

function wireNameLength(name: string): number {
  if (name === '.') return 1;
  return Buffer.byteLength(name) + 1;
}

/** Raw packet identical to `raw` but with the question replaced (additional records kept). */
function rebuildQuestion(raw: Buffer, req: ParsedRequest, name: string, qtype: number): Buffer {
  const nameLen = wireNameLength(name);
  const rest = raw.subarray(req.questionEnd);
  const out = Buffer.allocUnsafe(12 + nameLen + 4 + rest.length);
  raw.copy(out, 0, 0, 12);
  out.writeUInt16BE(1, 4);
  const off = writePlainName(name, out, 12);
  out.writeUInt16BE(qtype, off);
  out.writeUInt16BE(req.qclass, off + 2);
  rest.copy(out, off + 4);
  return out;
}
