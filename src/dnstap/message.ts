/**
 * The dnstap record (dnstap.proto, `Dnstap` wrapping one `Message`) and its protobuf encoding.
 * Field numbers are dnstap.proto's; fields go out in ascending order, as Go's proto.Marshal
 * writes them, so a reader sees the same bytes CoreDNS's dnstap plugin sends.
 */
import { isIPv4 } from 'node:net';
import { ipv6ToBytes } from '../dns/name.js';
import { ProtoWriter } from './protobuf.js';

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

/** One message, as the query path hands it over; encoded later, off the query path. */
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

/** Seconds and nanoseconds; microsecond resolution, all a double of epoch milliseconds holds. */
function writeTime(w: ProtoWriter, secField: number, ms: number): void {
  const sec = Math.floor(ms / 1000);
  const nsec = Math.min(999_999, Math.round((ms - sec * 1000) * 1000)) * 1000;
  w.uint(secField, sec).fixed32(secField + 1, nsec);
}

/** Scratch writers reused by every encoding (single-threaded; the result is copied out). */
const scratchMessage = new ProtoWriter(1024);
const scratchDnstap = new ProtoWriter(1024);

/** Appends the protobuf bytes of `Dnstap{type: MESSAGE, identity, version, extra, message}` to `d`. */
function writeDnstap(d: ProtoWriter, id: TapIdentity, r: TapRecord): void {
  const m = scratchMessage.reset();
  const q = r.address !== undefined ? addressBytes(r.address) : null;
  const resp = r.responseAddress !== undefined ? addressBytes(r.responseAddress) : null;
  // As CoreDNS's msg.SetResponseAddress, called last, the family is the response address's.
  m.uint(1, r.type)
    .uint(2, (resp ?? q)?.family ?? FAMILY_INET)
    .uint(3, r.proto === 'tcp' ? SocketProtocol.TCP : SocketProtocol.UDP);
  if (q !== null) m.bytes(4, q.bytes);
  if (resp !== null) m.bytes(5, resp.bytes);
  if (q !== null) m.uint(6, r.port ?? 0);
  if (resp !== null) m.uint(7, r.responsePort ?? 0);
  writeTime(m, 8, r.queryTimeMs);
  if (r.queryMessage !== undefined) m.bytes(10, r.queryMessage);
  if (r.responseTimeMs !== undefined) writeTime(m, 12, r.responseTimeMs);
  if (r.responseMessage !== undefined) m.bytes(14, r.responseMessage);
  d.bytes(1, id.identity).bytes(2, id.version);
  if (r.extra !== undefined) d.bytes(3, r.extra);
  d.bytes(14, m.finish()).uint(15, MESSAGE_TYPE_MESSAGE);
}

/** The protobuf bytes of `Dnstap{type: MESSAGE, identity, version, extra, message}`. */
export function encodeTap(id: TapIdentity, r: TapRecord): Buffer {
  const d = scratchDnstap.reset();
  writeDnstap(d, id, r);
  return Buffer.from(d.finish());
}

/**
 * Appends the record to `out` as one Frame Streams data frame (a big-endian length, then the bytes
 * {@link encodeTap} returns): a batch of records is written straight into the buffer that goes to
 * the socket, instead of a buffer per record copied again into the batch.
 */
export function writeTapFrame(out: ProtoWriter, id: TapIdentity, r: TapRecord): void {
  const at = out.placeholder32();
  writeDnstap(out, id, r);
  out.setUInt32BE(at, out.length - at - 4);
}
