/**
 * HTTP/2 (RFC 9113) wire constants and frame writers for the DoH server's own HTTP/2 layer
 * (src/server/h2session.ts). Only what a server that answers requests needs: no push, no
 * priorities sent.
 */

/** Frame types (§6). */
export const FrameType = {
  DATA: 0,
  HEADERS: 1,
  PRIORITY: 2,
  RST_STREAM: 3,
  SETTINGS: 4,
  PUSH_PROMISE: 5,
  PING: 6,
  GOAWAY: 7,
  WINDOW_UPDATE: 8,
  CONTINUATION: 9,
} as const;

/** Frame flags (§6). */
export const Flag = {
  END_STREAM: 0x1,
  ACK: 0x1,
  END_HEADERS: 0x4,
  PADDED: 0x8,
  PRIORITY: 0x20,
} as const;

/** Error codes (§7). */
export const ErrorCode = {
  NO_ERROR: 0x0,
  PROTOCOL_ERROR: 0x1,
  INTERNAL_ERROR: 0x2,
  FLOW_CONTROL_ERROR: 0x3,
  SETTINGS_TIMEOUT: 0x4,
  STREAM_CLOSED: 0x5,
  FRAME_SIZE_ERROR: 0x6,
  REFUSED_STREAM: 0x7,
  CANCEL: 0x8,
  COMPRESSION_ERROR: 0x9,
  CONNECT_ERROR: 0xa,
  ENHANCE_YOUR_CALM: 0xb,
  INADEQUATE_SECURITY: 0xc,
  HTTP_1_1_REQUIRED: 0xd,
} as const;

/** SETTINGS parameters (§6.5.2). */
export const Setting = {
  HEADER_TABLE_SIZE: 1,
  ENABLE_PUSH: 2,
  MAX_CONCURRENT_STREAMS: 3,
  INITIAL_WINDOW_SIZE: 4,
  MAX_FRAME_SIZE: 5,
  MAX_HEADER_LIST_SIZE: 6,
} as const;

export const FRAME_HEADER_LENGTH = 9;
/** The client connection preface (§3.4). */
export const PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1');
/** SETTINGS_MAX_FRAME_SIZE's initial value, which this server never raises for what it receives. */
export const DEFAULT_MAX_FRAME_SIZE = 16384;
export const MAX_ALLOWED_FRAME_SIZE = 16777215;
export const DEFAULT_WINDOW = 65535;
export const MAX_WINDOW = 0x7fffffff;

/** Write a frame header at `off`. */
export function writeFrameHeader(
  buf: Buffer,
  off: number,
  length: number,
  type: number,
  flags: number,
  streamId: number,
): number {
  buf[off] = (length >>> 16) & 0xff;
  buf[off + 1] = (length >>> 8) & 0xff;
  buf[off + 2] = length & 0xff;
  buf[off + 3] = type;
  buf[off + 4] = flags;
  buf.writeUInt32BE(streamId & MAX_WINDOW, off + 5);
  return off + FRAME_HEADER_LENGTH;
}

/** A frame whose payload is one 32-bit value (RST_STREAM, WINDOW_UPDATE). */
export function u32Frame(type: number, streamId: number, value: number): Buffer {
  const b = Buffer.allocUnsafe(FRAME_HEADER_LENGTH + 4);
  writeFrameHeader(b, 0, 4, type, 0, streamId);
  b.writeUInt32BE(value >>> 0, FRAME_HEADER_LENGTH);
  return b;
}

export function settingsFrame(values: readonly (readonly [number, number])[], ack = false): Buffer {
  const b = Buffer.allocUnsafe(FRAME_HEADER_LENGTH + 6 * values.length);
  writeFrameHeader(b, 0, 6 * values.length, FrameType.SETTINGS, ack ? Flag.ACK : 0, 0);
  let off = FRAME_HEADER_LENGTH;
  for (const [id, value] of values) {
    b.writeUInt16BE(id, off);
    b.writeUInt32BE(value >>> 0, off + 2);
    off += 6;
  }
  return b;
}

export function goawayFrame(lastStreamId: number, code: number): Buffer {
  const b = Buffer.allocUnsafe(FRAME_HEADER_LENGTH + 8);
  writeFrameHeader(b, 0, 8, FrameType.GOAWAY, 0, 0);
  b.writeUInt32BE(lastStreamId & MAX_WINDOW, FRAME_HEADER_LENGTH);
  b.writeUInt32BE(code, FRAME_HEADER_LENGTH + 4);
  return b;
}

export function pingAck(payload: Buffer): Buffer {
  const b = Buffer.allocUnsafe(FRAME_HEADER_LENGTH + 8);
  writeFrameHeader(b, 0, 8, FrameType.PING, Flag.ACK, 0);
  payload.copy(b, FRAME_HEADER_LENGTH, 0, 8);
  return b;
}
