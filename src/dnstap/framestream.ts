/**
 * Frame Streams (farsightsec's framing that dnstap rides on): control frames and data frames,
 * and the writer's side of the bidirectional handshake CoreDNS's dnstap uses — send READY with
 * the content type, wait for ACCEPT, send START; STOP on close.
 */
export const CONTENT_TYPE = 'protobuf:dnstap.Dnstap';

export const Control = { ACCEPT: 1, START: 2, STOP: 3, READY: 4, FINISH: 5 } as const;
const FIELD_CONTENT_TYPE = 1;

/** A control frame: escape (0), length, control type, then content-type fields. */
export function controlFrame(type: number, contentTypes: readonly string[]): Buffer {
  const fields = contentTypes.map((t) => Buffer.from(t, 'latin1'));
  const bodyLen = 4 + fields.reduce((n, f) => n + 8 + f.length, 0);
  const out = Buffer.allocUnsafe(8 + bodyLen);
  out.writeUInt32BE(0, 0);
  out.writeUInt32BE(bodyLen, 4);
  out.writeUInt32BE(type, 8);
  let o = 12;
  for (const f of fields) {
    out.writeUInt32BE(FIELD_CONTENT_TYPE, o);
    out.writeUInt32BE(f.length, o + 4);
    f.copy(out, o + 8);
    o += 8 + f.length;
  }
  return out;
}

/** A parsed control frame body. */
export interface ControlFrame {
  type: number;
  contentTypes: string[];
}

/** Parses a control frame's body (after the escape and length words). */
export function parseControl(body: Buffer): ControlFrame {
  if (body.length < 4) throw new Error('control frame too short');
  const type = body.readUInt32BE(0);
  const contentTypes: string[] = [];
  let o = 4;
  while (o + 8 <= body.length) {
    const field = body.readUInt32BE(o);
    const len = body.readUInt32BE(o + 4);
    if (o + 8 + len > body.length) throw new Error('control field overruns its frame');
    if (field === FIELD_CONTENT_TYPE) contentTypes.push(body.toString('latin1', o + 8, o + 8 + len));
    o += 8 + len;
  }
  return { type, contentTypes };
}

/**
 * Splits a byte stream into frames: `onControl` for control frames, `onData` for data frames.
 * Bytes are kept until a whole frame has arrived.
 */
export class FrameReader {
  private pending: Buffer = Buffer.alloc(0);

  constructor(
    private readonly onData: (payload: Buffer) => void,
    private readonly onControl: (frame: ControlFrame) => void,
  ) {}

  push(chunk: Buffer): void {
    this.pending = this.pending.length === 0 ? chunk : Buffer.concat([this.pending, chunk]);
    let o = 0;
    for (;;) {
      if (this.pending.length - o < 4) break;
      const len = this.pending.readUInt32BE(o);
      if (len === 0) {
        if (this.pending.length - o < 8) break;
        const clen = this.pending.readUInt32BE(o + 4);
        if (this.pending.length - o < 8 + clen) break;
        this.onControl(parseControl(this.pending.subarray(o + 8, o + 8 + clen)));
        o += 8 + clen;
      } else {
        if (this.pending.length - o < 4 + len) break;
        this.onData(this.pending.subarray(o + 4, o + 4 + len));
        o += 4 + len;
      }
    }
    this.pending = o === 0 ? this.pending : this.pending.subarray(o);
  }
}
