/**
 * CoreDNS's gRPC service on the wire (docs/corefile.md §6.5): `coredns.dns.DnsService/Query` takes
 * and returns one `DnsPacket { bytes msg = 1; }` (CoreDNS's pb/dns.proto), each sent as one gRPC
 * length-prefixed message over HTTP/2. A message of one bytes field needs no protobuf library:
 * this file encodes and decodes it and the five-byte gRPC frame around it, for the grpc:// listener
 * (src/server/grpc.ts) and the grpc plugin's client alike.
 */

/** The request path of the one method. */
export const QUERY_PATH = '/coredns.dns.DnsService/Query';

/** The largest DNS message (dns.MaxMsgSize). */
export const MAX_DNS_MESSAGE = 65535;

/**
 * The largest protobuf payload either side accepts: the DNS message plus the field's tag (1 byte)
 * and length (3 bytes), CoreDNS's maxProtobufPayloadBytes.
 */
export const MAX_PROTOBUF_PAYLOAD = MAX_DNS_MESSAGE + 4;

/** gRPC status codes used here (google.golang.org/grpc/codes). */
export const GrpcStatus = {
  OK: 0,
  UNKNOWN: 2,
  INVALID_ARGUMENT: 3,
  NOT_FOUND: 5,
  RESOURCE_EXHAUSTED: 8,
  INTERNAL: 13,
  UNIMPLEMENTED: 12,
  UNAVAILABLE: 14,
} as const;

/** `DnsPacket{msg}` as a gRPC message: the 5-byte prefix, the field tag 0x0a, the length varint, the bytes. */
export function frameDnsPacket(msg: Buffer): Buffer {
  const n = msg.length;
  // An empty bytes field is the proto3 default and is not written at all.
  const lenBytes = n === 0 ? 0 : n < 0x80 ? 1 : n < 0x4000 ? 2 : 3;
  const payload = n === 0 ? 0 : 1 + lenBytes + n;
  const out = Buffer.allocUnsafe(5 + payload);
  out[0] = 0; // not compressed
  out.writeUInt32BE(payload, 1);
  if (n === 0) return out;
  let o = 5;
  out[o++] = 0x0a; // field 1, wire type 2 (length-delimited)
  let v = n;
  while (v >= 0x80) {
    out[o++] = (v & 0x7f) | 0x80;
    v >>>= 7;
  }
  out[o++] = v;
  msg.copy(out, o);
  return out;
}

/** Why a gRPC body could not be read as one DnsPacket: the status and message to answer with. */
export class GrpcWireError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/**
 * The one message of a unary call's body (its 5-byte prefix checked) as protobuf bytes. Throws a
 * GrpcWireError worded as grpc-go's for a compressed, short, oversized or extra message.
 */
export function unframe(body: Buffer, maxPayload = MAX_PROTOBUF_PAYLOAD): Buffer {
  if (body.length < 5) {
    throw new GrpcWireError(
      GrpcStatus.INTERNAL,
      body.length === 0 ? 'grpc: no message in request' : 'grpc: truncated message prefix',
    );
  }
  if (body[0] !== 0) {
    throw new GrpcWireError(GrpcStatus.INTERNAL, 'grpc: compressed flag set with identity or empty encoding');
  }
  const len = body.readUInt32BE(1);
  if (len > maxPayload) {
    throw new GrpcWireError(
      GrpcStatus.RESOURCE_EXHAUSTED,
      `grpc: received message larger than max (${len} vs. ${maxPayload})`,
    );
  }
  if (body.length < 5 + len) throw new GrpcWireError(GrpcStatus.INTERNAL, 'grpc: truncated message');
  if (body.length > 5 + len) {
    throw new GrpcWireError(GrpcStatus.UNIMPLEMENTED, 'grpc: more than one message in a unary call');
  }
  return body.subarray(5, 5 + len);
}

/**
 * The `msg` field of a DnsPacket. Unknown fields are skipped as protobuf requires; the last `msg`
 * wins. Throws a GrpcWireError (INTERNAL, as grpc-go's failed unmarshal) on malformed protobuf.
 */
export function decodeDnsPacket(pb: Buffer): Buffer {
  let msg: Buffer = Buffer.alloc(0);
  let o = 0;
  const bad = (): GrpcWireError =>
    new GrpcWireError(
      GrpcStatus.INTERNAL,
      'grpc: error unmarshalling request: proto: cannot parse invalid wire-format data',
    );
  const varint = (): number => {
    let v = 0;
    let mul = 1;
    for (let i = 0; i < 10; i++) {
      if (o >= pb.length) throw bad();
      const b = pb[o++]!;
      v += (b & 0x7f) * mul;
      if ((b & 0x80) === 0) return v;
      mul *= 128;
    }
    throw bad();
  };
  while (o < pb.length) {
    const key = varint();
    const field = Math.floor(key / 8);
    const type = key & 7;
    if (field === 0) throw bad();
    if (type === 0) varint();
    else if (type === 1) o += 8;
    else if (type === 5) o += 4;
    else if (type === 2) {
      const len = varint();
      if (o + len > pb.length) throw bad();
      if (field === 1) msg = pb.subarray(o, o + len);
      o += len;
    } else throw bad();
    if (o > pb.length) throw bad();
  }
  return msg;
}

/** grpc-message's percent-encoding (gRPC over HTTP/2: bytes outside 0x20–0x7e and `%`). */
export function encodeGrpcMessage(text: string): string {
  let out = '';
  for (const b of Buffer.from(text, 'utf8')) {
    out +=
      b >= 0x20 && b <= 0x7e && b !== 0x25
        ? String.fromCharCode(b)
        : `%${b.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}

export function decodeGrpcMessage(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}
