/**
 * The server side of one HTTP/2 connection (RFC 9113), as the DoH listener needs it: requests in,
 * one response each out. Node's own `http2` module costs some 80 µs of CPU per DoH request (an
 * Http2Stream duplex, header objects and their collection, for a 50-byte body), eight times what
 * the rest of a query costs; this layer parses frames straight from the TLS socket's reads,
 * decodes headers with src/server/hpack.ts and writes each response as one HEADERS frame and one
 * DATA frame in a single buffer, with a turn's responses leaving in one TLS record.
 *
 * What it does (docs/corefile.md §7.5): the connection preface and SETTINGS exchange; PING
 * answered; GOAWAY sent on shutdown (streams in flight finish) and on connection errors (with
 * the RFC's error code); streams bounded by SETTINGS_MAX_CONCURRENT_STREAMS (REFUSED_STREAM past
 * it, counting streams the peer reset while their query still runs); request bodies bounded (the
 * DoH limit, 65,536 bytes: a larger one is handed over marked too large, so the handler answers
 * 400, and the rest of it is discarded); flow control both ways (a 256 KiB connection window
 * given back as DATA is taken — a connection holds at most a stream window per stream — and the
 * peer's windows honoured for response bodies, which wait for its WINDOW_UPDATE); header blocks
 * over at most 32 CONTINUATION frames and 64 KiB; HEAD answered without a body. What a DoH server
 * never needs is refused or ignored: PUSH_PROMISE from a client is
 * a PROTOCOL_ERROR, PRIORITY frames and unknown frame types are ignored.
 */
import type * as net from 'node:net';
import { HpackDecoder, staticStatusIndex, writeIndexed, writeLiteralWithoutIndexing } from './hpack.js';
import {
  DEFAULT_MAX_FRAME_SIZE,
  DEFAULT_WINDOW,
  ErrorCode,
  Flag,
  FRAME_HEADER_LENGTH,
  FrameType,
  goawayFrame,
  MAX_ALLOWED_FRAME_SIZE,
  MAX_WINDOW,
  pingAck,
  PREFACE,
  Setting,
  settingsFrame,
  u32Frame,
  writeFrameHeader,
} from './h2frames.js';

/** The largest DoH request body (CoreDNS's doh.maxDNSQuerySize); one byte more is "too large". */
export const MAX_REQUEST_BODY = 65536;
/** The stream window this server grants: a body one byte over the limit can arrive whole. */
const STREAM_WINDOW = MAX_REQUEST_BODY + 1;
/** The connection window this server keeps open, given back as request bodies are taken. */
const CONNECTION_WINDOW = 256 * 1024;
/** Joined HEADERS and CONTINUATION payloads, and the decoded header list, at most. */
const HEADER_BLOCK_LIMIT = 64 * 1024;
/** CONTINUATION frames one header block may take (nghttp2 allows 8; browsers send 1 or 2). */
const MAX_CONTINUATIONS = 32;
/** Unsent response bytes past which the connection's requests are not read. */
const WRITE_HIGH_WATER = 256 * 1024;
/** How many closed streams' ends are remembered (to tell a late frame from a protocol error). */
const CLOSED_MEMORY = 128;
/** How a stream closed: we reset it (late frames are ignored), the peer reset it, or both ends finished. */
const enum Closed {
  OURS = 1,
  PEER_RESET = 2,
  DONE = 3,
}
/** Headers an HTTP/2 request must not carry (§8.2.2). */
const CONNECTION_HEADERS = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'upgrade']);

const EMPTY_FIELDS: readonly string[] = [];
const EMPTY_BODY = Buffer.alloc(0);

/** Static-table name indexes (RFC 7541 Appendix A) of the response headers. */
const NAME_STATUS = 8;
const NAME_CACHE_CONTROL = 24;
const NAME_CONTENT_LENGTH = 28;
const NAME_CONTENT_TYPE = 31;
const NAME_DATE = 33;

/** What the session tells its owner. */
export interface H2Handler {
  /** A request, complete (or its body over the limit: `bodyTooLarge`). */
  request(stream: H2Stream): void;
  /** A stream handed to `request` is gone: answered, reset by either side, or the connection closed. */
  closed(stream: H2Stream): void;
}

/** The two shapes of a DoH response: a DNS message, or a short text error. */
export interface H2Response {
  readonly status: number;
  readonly body: Buffer;
  /** `application/dns-message` with `cache-control: max-age=` this; null: a text/plain error. */
  readonly maxAge: number | null;
}

/** One request stream. */
export class H2Stream {
  method = '';
  path = '';
  /**
   * The request's header fields as decoded, name, value, name, value… (names lowercase); the
   * regular ones (not pseudo-headers) start at `headersFrom`.
   */
  fields: readonly string[] = EMPTY_FIELDS;
  headersFrom = 0;
  /** When the request was handed over (Date.now(); the write timeout runs from then). */
  readAt = 0;
  /** Its place in the session's list of open streams. */
  slot = -1;
  /** Its query is running; and the stream closed (reset) while it ran. */
  busy = false;
  orphan = false;
  body: Buffer | null = null;
  bodyTooLarge = false;
  /** The request's content-length, or -1. */
  contentLength = -1;
  private bodyLength = 0;
  /** Handed to the handler and not yet closed. */
  delivered = false;
  /** The request was received to its END_STREAM. */
  remoteClosed = false;
  /** Gone from the session. */
  closed = false;
  /** Response bytes the peer's stream window allows. */
  sendWindow: number;
  /** Stream-level receive window left. */
  recvWindow = STREAM_WINDOW;
  private chunks: Buffer[] | null = null;
  /** A response body waiting for the peer's windows, and how much of it went. */
  pending: Buffer | null = null;
  pendingOff = 0;

  constructor(
    readonly session: H2Session,
    readonly id: number,
    sendWindow: number,
  ) {
    this.sendWindow = sendWindow;
  }

  /** Add body bytes `src[start, end)`; false once the body is over the limit (then dropped). */
  addBody(src: Buffer, start: number, end: number): boolean {
    if (this.bodyTooLarge) return false;
    const n = end - start;
    this.bodyLength += n;
    if (this.bodyLength > MAX_REQUEST_BODY) {
      this.bodyTooLarge = true;
      this.body = null;
      this.chunks = null;
      return false;
    }
    if (n === 0) return true;
    const copy = Buffer.allocUnsafe(n);
    src.copy(copy, 0, start, end);
    if (this.body === null) this.body = copy;
    else {
      this.chunks ??= [this.body];
      this.chunks.push(copy);
    }
    return true;
  }

  /** Body bytes received so far. */
  get receivedBody(): number {
    return this.bodyLength;
  }

  /** The whole body, joined. */
  finishBody(): void {
    if (this.chunks !== null) {
      this.body = Buffer.concat(this.chunks, this.bodyLength);
      this.chunks = null;
    }
  }

  /** Answered, or reset by either side. */
  get sent(): boolean {
    return this.closed;
  }

  send(r: H2Response): void {
    this.session.respond(this, r);
  }

  /** A write deadline passed: Go's HTTP/2 server resets such a stream with INTERNAL_ERROR. */
  cut(): void {
    this.session.resetStream(this, ErrorCode.INTERNAL_ERROR);
  }

  /** The request's query is being worked on (until `workDone`), answered or not. */
  working(): void {
    this.busy = true;
  }

  workDone(): void {
    if (!this.busy) return;
    this.busy = false;
    if (this.orphan) {
      this.orphan = false;
      this.session.orphanDone();
    }
  }
}

let dateSecond = -1;
let dateText = '';
/** The `date` header (IMF-fixdate), made once a second. */
function httpDate(): string {
  const now = Date.now();
  const s = Math.floor(now / 1000);
  if (s !== dateSecond) {
    dateSecond = s;
    dateText = new Date(s * 1000).toUTCString();
  }
  return dateText;
}

export class H2Session {
  /** The start of a frame not yet whole, reads received since, and the bytes that make it whole. */
  private buf: Buffer | null = null;
  private readonly pending: Buffer[] = [];
  private pendingBytes = 0;
  private need = 0;
  private prefaceSeen = false;
  private readonly decoder = new HpackDecoder();
  /**
   * Open streams, unordered (a stream knows its slot). Few at a time, looked up newest first, and
   * kept in an array rather than a Map: a Map's insert and delete per request was a tenth of
   * what a DoH request allocated.
   */
  private readonly open: H2Stream[] = [];
  /** The last CLOSED_MEMORY closed streams and how each closed, as a ring. */
  private readonly closedIds = new Int32Array(CLOSED_MEMORY);
  private readonly closedHow = new Uint8Array(CLOSED_MEMORY);
  private closedNext = 0;
  /** Streams whose response body waits for window. */
  private readonly blocked = new Set<H2Stream>();
  private lastStreamId = 0;
  /**
   * Streams reset by the peer while their query still runs. They count against max_streams until
   * it ends: otherwise HEADERS then RST_STREAM, repeated, starts unbounded work (the 2023 "rapid
   * reset" attack, CVE-2023-44487), which Go's server bounds the same way.
   */
  private orphans = 0;
  /** A header block being continued: its stream, END_STREAM flag and fragments. */
  private contId = 0;
  private contEndStream = false;
  private contParts: Buffer[] = [];
  private contSize = 0;
  private contSelfDependent = false;
  private contFrames = 0;
  private peerMaxFrame = DEFAULT_MAX_FRAME_SIZE;
  private peerInitialWindow = DEFAULT_WINDOW;
  private connSendWindow = DEFAULT_WINDOW;
  private connRecvWindow = CONNECTION_WINDOW;
  private connToReturn = 0;
  /** GOAWAY sent (shutdown): no new streams; the socket ends when the last one closes. */
  private goingAway = false;
  private peerGoingAway = false;
  /** A connection error was sent: nothing more is read. */
  private dead = false;
  private held = false;
  private readPaused = false;
  private readonly headerScratch = Buffer.allocUnsafe(512);
  private readonly release = (): void => {
    this.held = false;
    const s = this.sock;
    s.uncork();
    if (s.writableLength > WRITE_HIGH_WATER && !this.readPaused && !s.destroyed) {
      this.readPaused = true;
      s.pause();
      s.once('drain', this.resume);
    }
  };
  private readonly resume = (): void => {
    this.readPaused = false;
    if (!this.sock.destroyed) this.sock.resume();
  };

  constructor(
    private readonly sock: net.Socket,
    private readonly handler: H2Handler,
    maxStreams: number,
  ) {
    this.maxStreams = maxStreams > 0 ? maxStreams : Number.MAX_SAFE_INTEGER;
    const settings: [number, number][] = [
      [Setting.INITIAL_WINDOW_SIZE, STREAM_WINDOW],
      [Setting.MAX_HEADER_LIST_SIZE, HEADER_BLOCK_LIMIT],
    ];
    if (maxStreams > 0) settings.unshift([Setting.MAX_CONCURRENT_STREAMS, maxStreams]);
    // The server's preface, sent at once (§3.4), and the connection window opened past 64 KiB.
    this.write(settingsFrame(settings));
    this.write(u32Frame(FrameType.WINDOW_UPDATE, 0, CONNECTION_WINDOW - DEFAULT_WINDOW));
    sock.on('data', (chunk: Buffer) => this.onData(chunk));
    sock.on('close', () => this.onClose());
  }

  private readonly maxStreams: number;

  /** Streams open (requests being read or answered), for the write-timeout sweep. */
  get openStreams(): readonly H2Stream[] {
    return this.open;
  }

  private find(id: number): H2Stream | undefined {
    const open = this.open;
    for (let i = open.length - 1; i >= 0; i--) if (open[i]!.id === id) return open[i];
    return undefined;
  }

  /** End gracefully: GOAWAY now, the socket once the streams in flight are answered. */
  shutdown(): void {
    if (this.goingAway || this.dead) return;
    this.goingAway = true;
    this.write(goawayFrame(this.lastStreamId, ErrorCode.NO_ERROR));
    if (this.open.length === 0) this.sock.end();
  }

  private write(b: Buffer): void {
    const s = this.sock;
    if (s.destroyed || s.writableEnded) return;
    if (!this.held) {
      // Everything written in this turn of the event loop leaves together (one TLS record).
      this.held = true;
      s.cork();
      setImmediate(this.release);
    }
    s.write(b);
  }

  private onData(chunk: Buffer): void {
    if (this.dead) return;
    if (this.buf !== null) {
      // A frame started in an earlier read: gather reads until it is whole, then join once (a
      // client trickling a frame a byte per record must not cost a copy of it per byte).
      this.pending.push(chunk);
      this.pendingBytes += chunk.length;
      if (this.buf.length + this.pendingBytes < this.need) return;
    }
    let buf = this.buf === null ? chunk : Buffer.concat([this.buf, ...this.pending]);
    this.buf = null;
    this.pending.length = 0;
    this.pendingBytes = 0;
    if (!this.prefaceSeen) {
      const n = Math.min(buf.length, PREFACE.length);
      if (buf.compare(PREFACE, 0, n, 0, n) !== 0) return this.fail(ErrorCode.PROTOCOL_ERROR);
      if (buf.length < PREFACE.length) {
        this.buf = Buffer.from(buf);
        this.need = PREFACE.length;
        return;
      }
      this.prefaceSeen = true;
      buf = buf.subarray(PREFACE.length);
    }
    let off = 0;
    while (buf.length - off >= FRAME_HEADER_LENGTH) {
      const length = (buf[off]! << 16) | (buf[off + 1]! << 8) | buf[off + 2]!;
      if (length > DEFAULT_MAX_FRAME_SIZE) return this.fail(ErrorCode.FRAME_SIZE_ERROR);
      if (buf.length - off < FRAME_HEADER_LENGTH + length) break;
      const type = buf[off + 3]!;
      const flags = buf[off + 4]!;
      const id = buf.readUInt32BE(off + 5) & MAX_WINDOW;
      const start = off + FRAME_HEADER_LENGTH;
      off = start + length;
      // A request's HEADERS and DATA are read in place (no view per frame); the rest get one.
      if (this.contId !== 0 && (type !== FrameType.CONTINUATION || id !== this.contId))
        return this.fail(ErrorCode.PROTOCOL_ERROR);
      if (type === FrameType.DATA) this.onDataFrame(flags, id, buf, start, off);
      else if (type === FrameType.HEADERS) this.onHeaders(flags, id, buf, start, off);
      else this.frame(type, flags, id, buf.subarray(start, off));
      if (this.dead) return;
    }
    // Keep only the partial frame, not the whole chunk it came in.
    if (off < buf.length) {
      this.buf = Buffer.from(buf.subarray(off));
      const left = buf.length - off;
      this.need =
        left < FRAME_HEADER_LENGTH
          ? FRAME_HEADER_LENGTH
          : FRAME_HEADER_LENGTH + ((buf[off]! << 16) | (buf[off + 1]! << 8) | buf[off + 2]!);
    }
  }

  /** Every frame type but DATA and HEADERS. */
  private frame(type: number, flags: number, id: number, p: Buffer): void {
    switch (type) {
      case FrameType.PRIORITY:
        if (id === 0) return this.fail(ErrorCode.PROTOCOL_ERROR);
        if (p.length !== 5) return this.resetId(id, ErrorCode.FRAME_SIZE_ERROR);
        if ((p.readUInt32BE(0) & MAX_WINDOW) === id) return this.resetId(id, ErrorCode.PROTOCOL_ERROR);
        return;
      case FrameType.RST_STREAM:
        return this.onRst(id, p);
      case FrameType.SETTINGS:
        return this.onSettings(flags, id, p);
      case FrameType.PUSH_PROMISE:
        return this.fail(ErrorCode.PROTOCOL_ERROR);
      case FrameType.PING:
        if (id !== 0) return this.fail(ErrorCode.PROTOCOL_ERROR);
        if (p.length !== 8) return this.fail(ErrorCode.FRAME_SIZE_ERROR);
        if ((flags & Flag.ACK) === 0) this.write(pingAck(p));
        return;
      case FrameType.GOAWAY:
        if (id !== 0) return this.fail(ErrorCode.PROTOCOL_ERROR);
        if (p.length < 8) return this.fail(ErrorCode.FRAME_SIZE_ERROR);
        this.peerGoingAway = true;
        if (this.open.length === 0) this.sock.end();
        return;
      case FrameType.WINDOW_UPDATE:
        return this.onWindowUpdate(id, p);
      case FrameType.CONTINUATION:
        return this.onContinuation(flags, id, p);
      default:
        // Unknown frame types are ignored (§5.5).
        return;
    }
  }

  /** A DATA frame, its payload `b[start, end)`. */
  private onDataFrame(flags: number, id: number, b: Buffer, start: number, end: number): void {
    if (id === 0) return this.fail(ErrorCode.PROTOCOL_ERROR);
    if (id > this.lastStreamId) return this.fail(ErrorCode.PROTOCOL_ERROR);
    const length = end - start;
    this.connRecvWindow -= length;
    if (this.connRecvWindow < 0) return this.fail(ErrorCode.FLOW_CONTROL_ERROR);
    let dataStart = start;
    let dataEnd = end;
    if (flags & Flag.PADDED) {
      if (length < 1 || b[start]! >= length) return this.fail(ErrorCode.PROTOCOL_ERROR);
      dataStart = start + 1;
      dataEnd = end - b[start]!;
    }
    const st = this.find(id);
    if (st === undefined || st.remoteClosed) {
      // Its data is dropped and its window given back; what else depends on how it closed (§5.1).
      this.giveBack(length);
      if (st !== undefined) return this.resetStream(st, ErrorCode.STREAM_CLOSED);
      return this.onClosedStream(id);
    }
    st.recvWindow -= length;
    if (st.recvWindow < 0) {
      this.giveBack(length);
      return this.resetStream(st, ErrorCode.FLOW_CONTROL_ERROR);
    }
    const padding = length - (dataEnd - dataStart);
    if (padding > 0) {
      // Padding is not body: its share of the stream window comes back at once.
      this.write(u32Frame(FrameType.WINDOW_UPDATE, id, padding));
      st.recvWindow += padding;
    }
    // The connection window comes back as soon as the bytes are taken: what a connection holds
    // is bounded by each stream's window (65,537) times max_streams, and unfinished bodies can
    // never use the whole connection window up and wait for each other.
    st.addBody(b, dataStart, dataEnd);
    this.giveBack(length);
    if (st.contentLength >= 0 && st.receivedBody > st.contentLength)
      return this.resetStream(st, ErrorCode.PROTOCOL_ERROR);
    if (st.bodyTooLarge && !st.delivered) {
      // The handler answers 400 now, as Go's MaxBytesReader fails the read; the rest is dropped.
      st.remoteClosed = (flags & Flag.END_STREAM) !== 0;
      this.deliver(st);
      return;
    }
    if (flags & Flag.END_STREAM) this.complete(st);
  }

  /** A HEADERS frame, its payload `b[frameStart, frameEnd)`. */
  private onHeaders(flags: number, id: number, b: Buffer, frameStart: number, frameEnd: number): void {
    if (id === 0) return this.fail(ErrorCode.PROTOCOL_ERROR);
    let start = frameStart;
    let end = frameEnd;
    if (flags & Flag.PADDED) {
      if (end - start < 1) return this.fail(ErrorCode.PROTOCOL_ERROR);
      end -= b[start]!;
      start++;
    }
    let selfDependent = false;
    if (flags & Flag.PRIORITY) {
      if (start + 5 > end) return this.fail(ErrorCode.PROTOCOL_ERROR);
      selfDependent = (b.readUInt32BE(start) & MAX_WINDOW) === id;
      start += 5;
    }
    if (start > end) return this.fail(ErrorCode.PROTOCOL_ERROR);
    const endStream = (flags & Flag.END_STREAM) !== 0;
    if ((flags & Flag.END_HEADERS) === 0) {
      this.contId = id;
      this.contEndStream = endStream;
      this.contSelfDependent = selfDependent;
      this.contParts = [Buffer.from(b.subarray(start, end))];
      this.contSize = end - start;
      this.contFrames = 0;
      return;
    }
    this.headerBlock(id, endStream, b, start, end, selfDependent);
  }

  private onContinuation(flags: number, id: number, p: Buffer): void {
    if (this.contId === 0 || id !== this.contId) return this.fail(ErrorCode.PROTOCOL_ERROR);
    // Each frame is charged its header too, and their number is capped: endless empty
    // CONTINUATION frames (the 2024 "CONTINUATION flood") must not grow the list of parts.
    this.contSize += FRAME_HEADER_LENGTH + p.length;
    if (this.contSize > HEADER_BLOCK_LIMIT || ++this.contFrames > MAX_CONTINUATIONS)
      return this.fail(ErrorCode.ENHANCE_YOUR_CALM);
    if (p.length > 0) this.contParts.push(Buffer.from(p));
    if ((flags & Flag.END_HEADERS) === 0) return;
    const block = Buffer.concat(this.contParts);
    this.contId = 0;
    this.contParts = [];
    this.contSize = 0;
    this.headerBlock(id, this.contEndStream, block, 0, block.length, this.contSelfDependent);
  }

  /** A whole header block, `block[start, end)`: a new request, or trailers of one. */
  private headerBlock(
    id: number,
    endStream: boolean,
    block: Buffer,
    start: number,
    end: number,
    selfDependent: boolean,
  ): void {
    const fields: string[] = [];
    // Decoded even for a stream that is refused: the HPACK table must stay in step with the peer's.
    const decoded = this.decoder.decode(block, fields, HEADER_BLOCK_LIMIT, start, end);
    if (decoded === 'compression-error') return this.fail(ErrorCode.COMPRESSION_ERROR);
    if ((id & 1) === 0) return this.fail(ErrorCode.PROTOCOL_ERROR);
    const known = this.find(id);
    if (known !== undefined) {
      // Trailers: they end the request; their fields are not used.
      if (known.remoteClosed) return this.resetStream(known, ErrorCode.STREAM_CLOSED);
      if (!endStream || selfDependent) return this.resetStream(known, ErrorCode.PROTOCOL_ERROR);
      this.complete(known);
      return;
    }
    if (id <= this.lastStreamId) return this.onClosedStream(id, true);
    this.lastStreamId = id;
    if (selfDependent) {
      this.write(u32Frame(FrameType.RST_STREAM, id, ErrorCode.PROTOCOL_ERROR));
      this.rememberClosed(id, Closed.OURS);
      return;
    }
    if (this.goingAway || this.open.length + this.orphans >= this.maxStreams || decoded === 'too-large') {
      this.write(u32Frame(FrameType.RST_STREAM, id, ErrorCode.REFUSED_STREAM));
      this.rememberClosed(id, Closed.OURS);
      return;
    }
    const st = new H2Stream(this, id, this.peerInitialWindow);
    if (!requestFields(st, fields)) {
      this.write(u32Frame(FrameType.RST_STREAM, id, ErrorCode.PROTOCOL_ERROR));
      this.rememberClosed(id, Closed.OURS);
      return;
    }
    st.slot = this.open.length;
    this.open.push(st);
    if (endStream) this.complete(st);
  }

  /**
   * A frame other than PRIORITY for a stream no longer open (§5.1): ignored after our own
   * RST_STREAM (frames already in flight), a stream error after the peer's, a connection error
   * STREAM_CLOSED after both ends finished — and PROTOCOL_ERROR for a HEADERS frame reusing an
   * identifier never seen (§5.1.1).
   */
  private onClosedStream(id: number, headers = false): void {
    const how = this.closedHowOf(id);
    if (how === Closed.OURS) return;
    if (how === Closed.PEER_RESET) {
      this.write(u32Frame(FrameType.RST_STREAM, id, ErrorCode.STREAM_CLOSED));
      return;
    }
    if (how === Closed.DONE) return this.fail(ErrorCode.STREAM_CLOSED);
    // Forgotten (older than the memory) or never opened: a new HEADERS below the last is an error.
    if (headers) this.fail(ErrorCode.PROTOCOL_ERROR);
  }

  private rememberClosed(id: number, how: Closed): void {
    const i = this.closedNext;
    this.closedIds[i] = id;
    this.closedHow[i] = how;
    this.closedNext = (i + 1) % CLOSED_MEMORY;
  }

  /** How a remembered stream closed (its newest entry: an id reset before it opened may recur), or 0. */
  private closedHowOf(id: number): number {
    for (let k = 1; k <= CLOSED_MEMORY; k++) {
      const i = (this.closedNext - k + CLOSED_MEMORY) % CLOSED_MEMORY;
      if (this.closedIds[i] === id) return this.closedHow[i]!;
    }
    return 0;
  }

  /** The request's END_STREAM: hand it over. */
  private complete(st: H2Stream): void {
    st.remoteClosed = true;
    if (st.delivered) return;
    if (st.contentLength >= 0 && st.receivedBody !== st.contentLength)
      return this.resetStream(st, ErrorCode.PROTOCOL_ERROR);
    st.finishBody();
    this.deliver(st);
  }

  private deliver(st: H2Stream): void {
    st.delivered = true;
    this.handler.request(st);
  }

  private onRst(id: number, p: Buffer): void {
    if (id === 0) return this.fail(ErrorCode.PROTOCOL_ERROR);
    if (p.length !== 4) return this.fail(ErrorCode.FRAME_SIZE_ERROR);
    if (id > this.lastStreamId) return this.fail(ErrorCode.PROTOCOL_ERROR);
    const st = this.find(id);
    if (st !== undefined) this.remove(st, Closed.PEER_RESET);
  }

  private onSettings(flags: number, id: number, p: Buffer): void {
    if (id !== 0) return this.fail(ErrorCode.PROTOCOL_ERROR);
    if (flags & Flag.ACK) {
      if (p.length !== 0) this.fail(ErrorCode.FRAME_SIZE_ERROR);
      return;
    }
    if (p.length % 6 !== 0) return this.fail(ErrorCode.FRAME_SIZE_ERROR);
    for (let off = 0; off < p.length; off += 6) {
      const key = p.readUInt16BE(off);
      const value = p.readUInt32BE(off + 2);
      if (key === Setting.ENABLE_PUSH && value > 1) return this.fail(ErrorCode.PROTOCOL_ERROR);
      if (key === Setting.INITIAL_WINDOW_SIZE) {
        if (value > MAX_WINDOW) return this.fail(ErrorCode.FLOW_CONTROL_ERROR);
        const delta = value - this.peerInitialWindow;
        this.peerInitialWindow = value;
        for (const st of this.open) {
          st.sendWindow += delta;
          if (st.sendWindow > MAX_WINDOW) return this.fail(ErrorCode.FLOW_CONTROL_ERROR);
        }
      } else if (key === Setting.MAX_FRAME_SIZE) {
        if (value < DEFAULT_MAX_FRAME_SIZE || value > MAX_ALLOWED_FRAME_SIZE)
          return this.fail(ErrorCode.PROTOCOL_ERROR);
        this.peerMaxFrame = value;
      }
      // HEADER_TABLE_SIZE: responses are never indexed, so the peer's table size does not matter.
    }
    this.write(settingsFrame([], true));
    this.flushBlocked();
  }

  private onWindowUpdate(id: number, p: Buffer): void {
    if (p.length !== 4) return this.fail(ErrorCode.FRAME_SIZE_ERROR);
    const inc = p.readUInt32BE(0) & MAX_WINDOW;
    if (id === 0) {
      if (inc === 0) return this.fail(ErrorCode.PROTOCOL_ERROR);
      this.connSendWindow += inc;
      if (this.connSendWindow > MAX_WINDOW) return this.fail(ErrorCode.FLOW_CONTROL_ERROR);
      this.flushBlocked();
      return;
    }
    if (id > this.lastStreamId) return this.fail(ErrorCode.PROTOCOL_ERROR);
    const st = this.find(id);
    if (st === undefined) return;
    if (inc === 0) return this.resetStream(st, ErrorCode.PROTOCOL_ERROR);
    st.sendWindow += inc;
    if (st.sendWindow > MAX_WINDOW) return this.resetStream(st, ErrorCode.FLOW_CONTROL_ERROR);
    if (st.pending !== null) this.flushStream(st);
  }

  /** Give `n` received bytes back to the connection window, a quarter of it at a time. */
  private giveBack(n: number): void {
    if (n <= 0) return;
    this.connToReturn += n;
    if (this.connToReturn >= CONNECTION_WINDOW >> 2) {
      this.write(u32Frame(FrameType.WINDOW_UPDATE, 0, this.connToReturn));
      this.connRecvWindow += this.connToReturn;
      this.connToReturn = 0;
    }
  }

  /** Write the response: HEADERS and, when the windows allow, the whole body in one DATA frame. */
  respond(st: H2Stream, r: H2Response): void {
    if (st.closed || this.sock.destroyed) return;
    const hb = this.headerScratch;
    let off = FRAME_HEADER_LENGTH;
    const index = staticStatusIndex(r.status);
    off =
      index > 0
        ? writeIndexed(hb, off, index)
        : writeLiteralWithoutIndexing(hb, off, NAME_STATUS, '', String(r.status));
    if (r.maxAge !== null) {
      off = writeLiteralWithoutIndexing(hb, off, NAME_CONTENT_TYPE, '', 'application/dns-message');
      off = writeLiteralWithoutIndexing(hb, off, NAME_CACHE_CONTROL, '', `max-age=${r.maxAge}`);
    } else {
      off = writeLiteralWithoutIndexing(hb, off, NAME_CONTENT_TYPE, '', 'text/plain; charset=utf-8');
      off = writeLiteralWithoutIndexing(hb, off, 0, 'x-content-type-options', 'nosniff');
    }
    off = writeLiteralWithoutIndexing(hb, off, NAME_CONTENT_LENGTH, '', String(r.body.length));
    off = writeLiteralWithoutIndexing(hb, off, NAME_DATE, '', httpDate());
    // A HEAD request gets the headers of the response it asked about, not its body (as Go's server).
    const body = st.method === 'HEAD' ? EMPTY_BODY : r.body;
    const whole =
      body.length === 0 ||
      (body.length <= this.connSendWindow && body.length <= st.sendWindow && body.length <= this.peerMaxFrame);
    const headersEnd = body.length === 0 ? Flag.END_HEADERS | Flag.END_STREAM : Flag.END_HEADERS;
    writeFrameHeader(hb, 0, off - FRAME_HEADER_LENGTH, FrameType.HEADERS, headersEnd, st.id);
    if (!whole) {
      this.write(Buffer.from(hb.subarray(0, off)));
      st.pending = body;
      st.pendingOff = 0;
      this.flushStream(st);
      return;
    }
    const out = Buffer.allocUnsafe(off + (body.length > 0 ? FRAME_HEADER_LENGTH + body.length : 0));
    hb.copy(out, 0, 0, off);
    if (body.length > 0) {
      writeFrameHeader(out, off, body.length, FrameType.DATA, Flag.END_STREAM, st.id);
      body.copy(out, off + FRAME_HEADER_LENGTH);
      this.connSendWindow -= body.length;
      st.sendWindow -= body.length;
    }
    this.write(out);
    this.answered(st);
  }

  /** Send what the windows allow of a waiting response body. */
  private flushStream(st: H2Stream): void {
    const body = st.pending!;
    while (st.pendingOff < body.length) {
      const n = Math.min(body.length - st.pendingOff, this.connSendWindow, st.sendWindow, this.peerMaxFrame);
      if (n <= 0) {
        this.blocked.add(st);
        return;
      }
      const last = st.pendingOff + n === body.length;
      const frame = Buffer.allocUnsafe(FRAME_HEADER_LENGTH + n);
      writeFrameHeader(frame, 0, n, FrameType.DATA, last ? Flag.END_STREAM : 0, st.id);
      body.copy(frame, FRAME_HEADER_LENGTH, st.pendingOff, st.pendingOff + n);
      st.pendingOff += n;
      this.connSendWindow -= n;
      st.sendWindow -= n;
      this.write(frame);
    }
    st.pending = null;
    this.blocked.delete(st);
    this.answered(st);
  }

  private flushBlocked(): void {
    for (const st of [...this.blocked]) {
      if (this.connSendWindow <= 0) return;
      if (!st.closed && st.pending !== null) this.flushStream(st);
    }
  }

  /** The response's END_STREAM went out; a request still sending its body is told to stop. */
  private answered(st: H2Stream): void {
    if (st.remoteClosed) return this.remove(st, Closed.DONE);
    this.write(u32Frame(FrameType.RST_STREAM, st.id, ErrorCode.NO_ERROR));
    this.remove(st, Closed.OURS);
  }

  /** Reset a stream (a stream error, or the write timeout). */
  resetStream(st: H2Stream, code: number): void {
    if (st.closed) return;
    this.write(u32Frame(FrameType.RST_STREAM, st.id, code));
    this.remove(st, Closed.OURS);
  }

  /** RST_STREAM for a stream that may never have opened. */
  private resetId(id: number, code: number): void {
    const st = this.find(id);
    if (st !== undefined) return this.resetStream(st, code);
    this.write(u32Frame(FrameType.RST_STREAM, id, code));
    this.rememberClosed(id, Closed.OURS);
  }

  /** A reset stream's query ended: it no longer counts against max_streams. */
  orphanDone(): void {
    this.orphans--;
  }

  private remove(st: H2Stream, how: Closed): void {
    if (st.closed) return;
    st.closed = true;
    if (st.busy) {
      st.orphan = true;
      this.orphans++;
    }
    this.rememberClosed(st.id, how);
    st.pending = null;
    const open = this.open;
    const last = open.pop()!;
    if (last !== st) {
      open[st.slot] = last;
      last.slot = st.slot;
    }
    if (this.blocked.size > 0) this.blocked.delete(st);
    if (st.delivered) this.handler.closed(st);
    if (this.open.length === 0 && (this.goingAway || this.peerGoingAway)) this.sock.end();
  }

  /** A connection error (§5.4.1): GOAWAY with its code, then the connection ends. */
  private fail(code: number): void {
    if (this.dead) return;
    this.dead = true;
    this.buf = null;
    this.write(goawayFrame(this.lastStreamId, code));
    this.sock.end();
    for (const st of [...this.open]) this.remove(st, Closed.OURS);
  }

  private onClose(): void {
    this.dead = true;
    this.buf = null;
    for (const st of [...this.open]) this.remove(st, Closed.OURS);
  }
}

/** Take a request's pseudo-headers and fields (§8.3.1); false for a malformed request. */
function requestFields(st: H2Stream, fields: string[]): boolean {
  let method = '';
  let path = '';
  let scheme = '';
  let regular = -1;
  for (let i = 0; i < fields.length; i += 2) {
    const name = fields[i]!;
    if (name.charCodeAt(0) === 58 /* ':' */) {
      if (regular >= 0) return false;
      const value = fields[i + 1]!;
      if (name === ':method') {
        if (method !== '') return false;
        method = value;
      } else if (name === ':path') {
        if (path !== '') return false;
        path = value;
      } else if (name === ':scheme') {
        if (scheme !== '') return false;
        scheme = value;
      } else if (name !== ':authority') return false;
      continue;
    }
    if (regular < 0) regular = i;
    for (let k = 0; k < name.length; k++) {
      const c = name.charCodeAt(k);
      if (c >= 65 && c <= 90) return false; // field names are lowercase in HTTP/2 (§8.2.1)
    }
    if (CONNECTION_HEADERS.has(name)) return false;
    if (name === 'te' && fields[i + 1] !== 'trailers') return false;
    if (name === 'content-length') {
      const v = fields[i + 1]!;
      if (!/^[0-9]{1,15}$/.test(v) || (st.contentLength >= 0 && st.contentLength !== Number(v))) return false;
      st.contentLength = Number(v);
    }
  }
  if (method === '' || (method !== 'CONNECT' && (path === '' || scheme === ''))) return false;
  st.method = method;
  st.path = path;
  st.fields = fields;
  st.headersFrom = regular < 0 ? fields.length : regular;
  return true;
}
