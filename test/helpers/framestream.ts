/**
 * A dnstap collector for tests: listens on a unix socket or TCP port, plays the reader's side of
 * the bidirectional Frame Streams handshake (READY → ACCEPT, START; STOP → FINISH) and decodes each
 * data frame as a `Dnstap` protobuf. Written independently of src/dnstap's writer (its own
 * protobuf reader), so the two check each other; the real golang-dnstap reader is the third check.
 */
import { connect, createServer, type Server, type Socket } from 'node:net';
import { FrameReader, Control, controlFrame, CONTENT_TYPE } from '../../src/dnstap/framestream.js';

/** A decoded dnstap.proto `Message` (the fields CoreDNS's dnstap writes). */
export interface TapMessage {
  type?: number;
  socketFamily?: number;
  socketProtocol?: number;
  queryAddress?: Buffer;
  responseAddress?: Buffer;
  queryPort?: number;
  responsePort?: number;
  queryTimeSec?: number;
  queryTimeNsec?: number;
  queryMessage?: Buffer;
  queryZone?: Buffer;
  responseTimeSec?: number;
  responseTimeNsec?: number;
  responseMessage?: Buffer;
}

/** A decoded `Dnstap` frame; `fieldOrder` keeps the field numbers as they came, for byte-level checks. */
export interface TapFrame {
  identity?: string;
  version?: string;
  extra?: string;
  type?: number;
  message?: TapMessage;
  fieldOrder: number[];
  raw: Buffer;
}

interface Field {
  num: number;
  wire: number;
  /** Varints and fixed32 as numbers; length-delimited as bytes. */
  value: number | Buffer;
}

function readVarint(b: Buffer, o: number): [number, number] {
  let v = 0;
  let mul = 1;
  for (;;) {
    if (o >= b.length) throw new Error('protobuf: truncated varint');
    const byte = b[o++]!;
    v += (byte & 0x7f) * mul;
    mul *= 128;
    if (byte < 0x80) return [v, o];
  }
}

function fields(b: Buffer): Field[] {
  const out: Field[] = [];
  let o = 0;
  while (o < b.length) {
    let key: number;
    [key, o] = readVarint(b, o);
    const num = Math.floor(key / 8);
    const wire = key & 7;
    if (wire === 0) {
      let v: number;
      [v, o] = readVarint(b, o);
      out.push({ num, wire, value: v });
    } else if (wire === 2) {
      let len: number;
      [len, o] = readVarint(b, o);
      if (o + len > b.length) throw new Error('protobuf: field overruns message');
      out.push({ num, wire, value: b.subarray(o, o + len) });
      o += len;
    } else if (wire === 5) {
      out.push({ num, wire, value: b.readUInt32LE(o) });
      o += 4;
    } else if (wire === 1) {
      out.push({ num, wire, value: Number(b.readBigUInt64LE(o)) });
      o += 8;
    } else throw new Error(`protobuf: wire type ${wire}`);
  }
  return out;
}

const MESSAGE_FIELDS: Record<number, keyof TapMessage> = {
  1: 'type',
  2: 'socketFamily',
  3: 'socketProtocol',
  4: 'queryAddress',
  5: 'responseAddress',
  6: 'queryPort',
  7: 'responsePort',
  8: 'queryTimeSec',
  9: 'queryTimeNsec',
  10: 'queryMessage',
  11: 'queryZone',
  12: 'responseTimeSec',
  13: 'responseTimeNsec',
  14: 'responseMessage',
};

export function decodeTapMessage(b: Buffer): TapMessage {
  const m: Record<string, number | Buffer> = {};
  for (const f of fields(b)) {
    const key = MESSAGE_FIELDS[f.num];
    if (key !== undefined) m[key] = f.value;
  }
  return m as TapMessage;
}

export function decodeTap(b: Buffer): TapFrame {
  const out: TapFrame = { fieldOrder: [], raw: Buffer.from(b) };
  for (const f of fields(b)) {
    out.fieldOrder.push(f.num);
    const bytes = Buffer.isBuffer(f.value) ? f.value : null;
    if (f.num === 1 && bytes) out.identity = bytes.toString();
    else if (f.num === 2 && bytes) out.version = bytes.toString();
    else if (f.num === 3 && bytes) out.extra = bytes.toString();
    else if (f.num === 14 && bytes) out.message = decodeTapMessage(bytes);
    else if (f.num === 15 && typeof f.value === 'number') out.type = f.value;
  }
  return out;
}

export interface Collector {
  /** Every frame received, in order, over all connections. */
  readonly frames: TapFrame[];
  /** Connections that completed the handshake (READY with our content type, then START). */
  readonly started: number;
  /** Connections that ended with STOP. */
  readonly stopped: number;
  /** `tcp://127.0.0.1:PORT` or the unix socket path, as a Corefile's SOCKET. */
  readonly address: string;
  /** Stop reading without closing: the writer's socket buffer fills (a slow collector). */
  pause(): void;
  resume(): void;
  close(): Promise<void>;
}

/** Starts a collector on `unixPath`, or on an ephemeral TCP port of 127.0.0.1 when none is given. */
export async function startCollector(unixPath?: string): Promise<Collector> {
  const frames: TapFrame[] = [];
  const sockets = new Set<Socket>();
  let started = 0;
  let stopped = 0;
  let paused = false;
  const server: Server = createServer((s) => {
    sockets.add(s);
    if (paused) s.pause();
    s.on('close', () => sockets.delete(s));
    s.on('error', () => s.destroy());
    const reader = new FrameReader(
      (payload) => frames.push(decodeTap(payload)),
      (frame) => {
        if (frame.type === Control.READY) {
          if (frame.contentTypes.includes(CONTENT_TYPE)) s.write(controlFrame(Control.ACCEPT, [CONTENT_TYPE]));
          else s.destroy();
        } else if (frame.type === Control.START) started++;
        else if (frame.type === Control.STOP) {
          stopped++;
          s.end(controlFrame(Control.FINISH, []));
        }
      },
    );
    s.on('data', (chunk: Buffer) => reader.push(chunk));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    if (unixPath !== undefined) server.listen(unixPath, resolve);
    else server.listen(0, '127.0.0.1', resolve);
  });
  const addr = server.address();
  const address = typeof addr === 'object' && addr !== null ? `tcp://127.0.0.1:${addr.port}` : String(unixPath);
  return {
    frames,
    get started() {
      return started;
    },
    get stopped() {
      return stopped;
    },
    address,
    pause() {
      paused = true;
      for (const s of sockets) s.pause();
    },
    resume() {
      paused = false;
      for (const s of sockets) s.resume();
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

/** A sink connected to a `dnstap listen` endpoint (connectSink). */
export interface Sink {
  readonly frames: TapFrame[];
  /** START received: records follow. */
  readonly started: boolean;
  /** STOP received (the server closed it). */
  readonly stopped: boolean;
  readonly closed: boolean;
  socket: Socket;
}

/**
 * A sink connecting to a `dnstap listen` endpoint (src/dnstap/listener.ts): the reader's side of
 * the handshake (ACCEPT on READY, FINISH on STOP), every data frame decoded. `cleanups` gets the
 * socket's destroy.
 */
export function connectSink(
  cleanups: { push(f: () => unknown): unknown },
  o: { path: string } | { port: number },
): Sink {
  const socket = 'path' in o ? connect({ path: o.path }) : connect({ host: '127.0.0.1', port: o.port });
  const s: Sink = { frames: [], started: false, stopped: false, closed: false, socket };
  const state = s as { started: boolean; stopped: boolean; closed: boolean };
  const reader = new FrameReader(
    (payload) => s.frames.push(decodeTap(payload)),
    (frame) => {
      if (frame.type === Control.READY && frame.contentTypes.includes(CONTENT_TYPE))
        socket.write(controlFrame(Control.ACCEPT, [CONTENT_TYPE]));
      else if (frame.type === Control.START) state.started = true;
      else if (frame.type === Control.STOP) {
        state.stopped = true;
        socket.end(controlFrame(Control.FINISH, []));
      }
    },
  );
  socket.on('data', (b: Buffer) => reader.push(b));
  socket.on('error', () => socket.destroy());
  socket.on('close', () => (state.closed = true));
  cleanups.push(() => socket.destroy());
  return s;
}
