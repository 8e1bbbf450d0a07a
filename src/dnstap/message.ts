/**
 * The dnstap record (dnstap.proto, `Dnstap` wrapping one `Message`) and its protobuf encoding.
 * Field numbers are dnstap.proto's; fields go out in ascending order, as Go's proto.Marshal
 * writes them, so a reader sees the same bytes CoreDNS's dnstap plugin sends.
 */
import { isIPv4 } from 'node:net';
import { ipv6ToBytes } from '../dns/name.js';
import { ProtoWriter, varintSize } from './protobuf.js';

/** dnstap.proto `Message.Type`. */
export const MessageType = {
  CLIENT_QUERY: 5,
  CLIENT_RESPONSE: 6,
  FORWARDER_QUERY: 7,
  FORWARDER_RESPONSE: 8,
} as const;
export type MessageType = (typeof MessageType)[keyof typeof MessageType];

/** dnstap.proto `SocketProtocol` (the two clusterdns listens on). */
export const SocketProtocol = { UDP: 1, TCP: 2 } as const;

/** Who the tap is: written into every record. */
export interface TapIdentity {
  identity: Uint8Array;
  version: Uint8Array;
}

/** One message, as the query path hands it over; encoded at once, its buffers not kept. */
export interface TapRecord {
  type: MessageType;
  proto: 'udp' | 'tcp';
  /** Query address and port: the client's, or ours on the upstream socket (FORWARDER_*; may be absent). */
  address?: string;
  port?: number;
  /** Response address and port: the upstream (FORWARDER_* only). */
  responseAddress?: string;
  responsePort?: number;
  /** Wall-clock times in milliseconds since the epoch, with sub-millisecond fractions. */
  queryTimeMs: number;
  responseTimeMs?: number;
  /** Wire bytes, only with `full`. */
  queryMessage?: Uint8Array;
  responseMessage?: Uint8Array;
  extra?: Uint8Array;
}

const MESSAGE_TYPE_MESSAGE = 1;
const FAMILY_INET = 1;
const FAMILY_INET6 = 2;

/** Address bytes and family as Go's `net.IP.To4` decides: IPv4-mapped IPv6 counts as IPv4. */
function addressBytes(addr: string): { family: number; bytes: Uint8Array } {
  // Most records of a run come from few clients: keep the last few conversions.
  const hit = addressCache.get(addr);
  if (hit !== undefined) return hit;
  const v = parseAddress(addr);
  if (addressCache.size >= 256) addressCache.clear();
  addressCache.set(addr, v);
  return v;
}

const addressCache = new Map<string, { family: number; bytes: Uint8Array }>();

function parseAddress(addr: string): { family: number; bytes: Uint8Array } {
  const mapped = addr.length > 7 && addr.slice(0, 7).toLowerCase() === '::ffff:' ? addr.slice(7) : addr;
  if (isIPv4(mapped)) return { family: FAMILY_INET, bytes: Uint8Array.from(mapped.split('.'), Number) };
  return { family: FAMILY_INET6, bytes: ipv6ToBytes(addr) ?? new Uint8Array(16) };
}

/** Whole seconds of an epoch time in milliseconds. */
function secondsOf(ms: number): number {
  return Math.floor(ms / 1000);
}

/** Nanoseconds past `sec`; microsecond resolution, all a double of epoch milliseconds holds. */
function nanosOf(ms: number, sec: number): number {
  return Math.min(999_999, Math.round((ms - sec * 1000) * 1000)) * 1000;
}

/** The bytes of a length-delimited field with a one-byte tag (field numbers below 16). */
function bytesFieldSize(n: number): number {
  return 1 + varintSize(n) + n;
}

/**
 * Fields 1 and 2 of every record (identity and version), encoded once per tap and copied into each
 * record as they are.
 */
export function encodeIdentity(id: TapIdentity): Buffer {
  const w = new ProtoWriter(id.identity.length + id.version.length + 12);
  return Buffer.from(w.bytes(1, id.identity).bytes(2, id.version).finish());
}

/**
 * Appends the protobuf bytes of `Dnstap{type: MESSAGE, identity, version, extra, message}` to `d`,
 * `identity` being {@link encodeIdentity}'s bytes. The embedded Message's size is worked out
 * first, so it is written in place rather than built aside and copied in.
 */
function writeDnstap(d: ProtoWriter, identity: Uint8Array, r: TapRecord): void {
  const q = r.address !== undefined ? addressBytes(r.address) : null;
  const resp = r.responseAddress !== undefined ? addressBytes(r.responseAddress) : null;
  const querySec = secondsOf(r.queryTimeMs);
  const responseSec = r.responseTimeMs !== undefined ? secondsOf(r.responseTimeMs) : 0;
  // type, family and protocol: one-byte tags and one-byte values.
  let size = 6 + 1 + varintSize(querySec) + 5;
  if (q !== null) size += bytesFieldSize(q.bytes.length) + 1 + varintSize(r.port ?? 0);
  if (resp !== null) size += bytesFieldSize(resp.bytes.length) + 1 + varintSize(r.responsePort ?? 0);
  if (r.queryMessage !== undefined) size += bytesFieldSize(r.queryMessage.length);
  if (r.responseTimeMs !== undefined) size += 1 + varintSize(responseSec) + 5;
  if (r.responseMessage !== undefined) size += bytesFieldSize(r.responseMessage.length);

  d.raw(identity);
  if (r.extra !== undefined) d.bytes(3, r.extra);
  d.lengthDelimited(14, size);
  // As CoreDNS's msg.SetResponseAddress, called last, the family is the response address's.
  d.uint(1, r.type)
    .uint(2, (resp ?? q)?.family ?? FAMILY_INET)
    .uint(3, r.proto === 'tcp' ? SocketProtocol.TCP : SocketProtocol.UDP);
  if (q !== null) d.bytes(4, q.bytes);
  if (resp !== null) d.bytes(5, resp.bytes);
  if (q !== null) d.uint(6, r.port ?? 0);
  if (resp !== null) d.uint(7, r.responsePort ?? 0);
  d.uint(8, querySec).fixed32(9, nanosOf(r.queryTimeMs, querySec));
  if (r.queryMessage !== undefined) d.bytes(10, r.queryMessage);
  if (r.responseTimeMs !== undefined) d.uint(12, responseSec).fixed32(13, nanosOf(r.responseTimeMs, responseSec));
  if (r.responseMessage !== undefined) d.bytes(14, r.responseMessage);
  d.uint(15, MESSAGE_TYPE_MESSAGE);
}

/** The protobuf bytes of `Dnstap{type: MESSAGE, identity, version, extra, message}`. */
export function encodeTap(id: TapIdentity, r: TapRecord): Buffer {
  const d = new ProtoWriter(1024);
  writeDnstap(d, encodeIdentity(id), r);
  return Buffer.from(d.finish());
}

/**
 * Appends the record to `out` as one Frame Streams data frame (a big-endian length, then the bytes
 * {@link encodeTap} returns), `identity` being {@link encodeIdentity}'s bytes for the tap: a batch
 * of records is written straight into the buffer that goes to the socket.
 */
export function writeTapFrame(out: ProtoWriter, identity: Uint8Array, r: TapRecord): void {
  const at = out.placeholder32();
  writeDnstap(out, identity, r);
  out.setUInt32BE(at, out.length - at - 4);
}
