/**
 * The PROXY protocol header (v1 text, v2 binary; haproxy's proxy-protocol.txt) read from the start
 * of a buffer, as CoreDNS 1.15.0's go-proxyproto v0.15.0 `Read` reads it: the same signatures,
 * checks and error texts (the UDP listener logs them), so that a header CoreDNS drops is dropped
 * here too. Our own reader over Buffers rather than `proxy-protocol-js`: a datagram without a
 * header costs one byte comparison, and the error texts are go-proxyproto's (docs/plugins.md,
 * proxyproto).
 */
import { isIPv4, isIPv6 } from 'node:net';
import { bytesToIPv6, ipv6ToBytes } from '../dns/name.js';

/** The v2 signature: `\r\n\r\n\0\r\nQUIT\n`. */
const SIG_V2 = Buffer.from([0x0d, 0x0a, 0x0d, 0x0a, 0x00, 0x0d, 0x0a, 0x51, 0x55, 0x49, 0x54, 0x0a]);
/** The v1 signature `PROXY`. */
const SIG_V1 = Buffer.from('PROXY', 'latin1');
/** go-proxyproto's MaxV2HeaderSize: the largest address block plus TLVs it reads. */
const MAX_V2_LENGTH = 4096;
/** A v1 line is at most 107 bytes with its CRLF. */
const MAX_V1_LENGTH = 107;

/** v2 commands (byte 13). */
export const CMD_LOCAL = 0x20;
export const CMD_PROXY = 0x21;

/** v2 address family and transport (byte 14); v1 `TCP4`/`TCP6`/`UNKNOWN` map onto them. */
export const AF_UNSPEC = 0x00;
export const TCP_V4 = 0x11;
export const UDP_V4 = 0x12;
export const TCP_V6 = 0x21;
export const UDP_V6 = 0x22;
const UNIX_STREAM = 0x31;
const UNIX_DGRAM = 0x32;
const SUPPORTED_TRANSPORTS = new Set([AF_UNSPEC, TCP_V4, UDP_V4, TCP_V6, UDP_V6, UNIX_STREAM, UNIX_DGRAM]);

/** One end of the proxied connection; `address` is canonical text (an IPv4-mapped one as IPv4). */
export interface ProxyEndpoint {
  readonly address: string;
  readonly port: number;
  readonly family: 1 | 2;
}

export interface ProxyHeader {
  readonly version: 1 | 2;
  /** CMD_LOCAL (health checks of the proxy itself: keep the socket's addresses) or CMD_PROXY. */
  readonly command: number;
  /** The family/transport byte; AF_UNSPEC for a LOCAL header whose addresses were skipped. */
  readonly transport: number;
  /** Null for LOCAL/UNKNOWN headers and UNIX addresses (which name no IP client). */
  readonly source: ProxyEndpoint | null;
  readonly destination: ProxyEndpoint | null;
  /** The v2 TLV vector as received (may be empty). */
  readonly tlvs: Buffer;
}

export type HeaderRead =
  /** No PROXY signature: the bytes are a plain message. */
  | { readonly kind: 'none' }
  /** A stream needs more bytes to decide (only when `final` is false). */
  | { readonly kind: 'more' }
  | { readonly kind: 'error'; readonly error: string }
  /** A header of `length` bytes; the payload follows it. */
  | { readonly kind: 'header'; readonly header: ProxyHeader; readonly length: number };

const NONE: HeaderRead = { kind: 'none' };
const MORE: HeaderRead = { kind: 'more' };

const err = (error: string): HeaderRead => ({ kind: 'error', error });

const E_V1 = "proxyproto: can't read version 1 header";
const E_V1_LONG = 'proxyproto: version 1 header must be 107 bytes or less';
const E_CRLF = 'proxyproto: version 1 header is invalid, must end with \\r\\n';
const E_FAMILY = "proxyproto: can't read address family or protocol";
const E_ADDRESS = 'proxyproto: invalid address';
const E_PORT = 'proxyproto: invalid port number';
const E_COMMAND = 'proxyproto: unsupported proxy protocol version and command';
const E_TRANSPORT = 'proxyproto: unsupported address family and protocol';
const E_LENGTH = 'proxyproto: invalid length';

/**
 * Read a header at the start of `buf`. `final`: `buf` is all there is (a datagram), so a short
 * signature is no signature and a short header an error; otherwise (a stream's first bytes) the
 * answer may be `more`.
 */
export function readProxyHeader(buf: Buffer, final: boolean): HeaderRead {
  const b0 = buf[0];
  if (b0 !== 0x50 && b0 !== 0x0d) return buf.length === 0 && !final ? MORE : NONE;
  if (buf.length < 5) return final ? NONE : MORE;
  if (buf.compare(SIG_V1, 0, 5, 0, 5) === 0) return readV1(buf, final);
  if (buf.length < 12) return final ? NONE : MORE;
  if (buf.compare(SIG_V2, 0, 12, 0, 12) === 0) return readV2(buf, final);
  return NONE;
}

function readV1(buf: Buffer, final: boolean): HeaderRead {
  const end = buf.indexOf(0x0a);
  if (end < 0 || end >= MAX_V1_LENGTH) {
    if (buf.length >= MAX_V1_LENGTH) return err(E_V1_LONG);
    return final ? err(E_V1) : MORE;
  }
  const length = end + 1;
  if (end < 1 || buf[end - 1] !== 0x0d) return err(E_CRLF);
  const tokens = buf.toString('latin1', 0, end - 1).split(' ');
  if (tokens[0] !== 'PROXY') return err(E_V1);
  if (tokens.length < 2) return err(E_FAMILY);
  const proto = tokens[1];
  if (proto === 'UNKNOWN') {
    return { kind: 'header', length, header: header(1, CMD_LOCAL, AF_UNSPEC, null, null, EMPTY) };
  }
  if ((proto !== 'TCP4' && proto !== 'TCP6') || tokens.length !== 6) return err(E_FAMILY);
  const v6 = proto === 'TCP6';
  const src = v1Address(tokens[2]!, v6);
  if (src === null) return err(E_ADDRESS);
  const dst = v1Address(tokens[3]!, v6);
  if (dst === null) return err(E_ADDRESS);
  const sport = v1Port(tokens[4]!);
  if (sport < 0) return err(E_PORT);
  const dport = v1Port(tokens[5]!);
  if (dport < 0) return err(E_PORT);
  return {
    kind: 'header',
    length,
    header: header(1, CMD_PROXY, v6 ? TCP_V6 : TCP_V4, endpoint(src, sport), endpoint(dst, dport), EMPTY),
  };
}

const EMPTY = Buffer.alloc(0);
/** go-proxyproto keeps a NOOP TLV but not its value. */
const NOOP_EMPTY = Buffer.from([0x04, 0, 0]);

/** netip.ParseAddr without zones; TCP4 wants IPv4, TCP6 IPv6 syntax (a mapped IPv4 included). */
function v1Address(text: string, v6: boolean): string | null {
  if (v6) return isIPv6(text) && !text.includes('%') ? ipv6Text(ipv6ToBytes(text)!) : null;
  return isIPv4(text) ? text : null;
}

/** A decimal port without a leading zero, at most 65535; -1 when invalid. */
function v1Port(text: string): number {
  if (!/^\d{1,5}$/.test(text) || (text.length > 1 && text[0] === '0')) return -1;
  const n = Number(text);
  return n > 65535 ? -1 : n;
}

function readV2(buf: Buffer, final: boolean): HeaderRead {
  if (buf.length < 16) {
    if (!final) return MORE;
    if (buf.length < 13) return err(`proxyproto: can't read proxy protocol version and command: EOF`);
    const cmd = buf[12]!;
    if (cmd !== CMD_LOCAL && cmd !== CMD_PROXY) return err(E_COMMAND);
    if (buf.length < 14) return err(`${E_FAMILY}: EOF`);
    const t = buf[13]!;
    if (!SUPPORTED_TRANSPORTS.has(t) || (t === AF_UNSPEC && cmd !== CMD_LOCAL)) return err(E_TRANSPORT);
    return err(`proxyproto: can't read length: ${buf.length === 14 ? 'EOF' : 'unexpected EOF'}`);
  }
  const command = buf[12]!;
  if (command !== CMD_LOCAL && command !== CMD_PROXY) return err(E_COMMAND);
  let transport = buf[13]!;
  if (!SUPPORTED_TRANSPORTS.has(transport)) return err(E_TRANSPORT);
  if (transport === AF_UNSPEC && command !== CMD_LOCAL) return err(E_TRANSPORT);
  const length = buf.readUInt16BE(14);
  const total = 16 + length;
  const family = transport >> 4;
  const minimum = family === 1 ? 12 : family === 2 ? 36 : family === 3 ? 216 : 0;
  if (length < minimum) {
    // A LOCAL header may carry a short address block: skipped, and its addresses unknown.
    if (command !== CMD_LOCAL) return err(E_LENGTH);
    if (length > MAX_V2_LENGTH) return err(E_LENGTH);
    if (buf.length < total) return final ? err(`${E_LENGTH}: EOF`) : MORE;
    return { kind: 'header', length: total, header: header(2, command, AF_UNSPEC, null, null, EMPTY) };
  }
  if (length > MAX_V2_LENGTH) return err(E_LENGTH);
  if (buf.length < total) {
    if (!final) return MORE;
    const have = buf.length - 16;
    if (have < minimum) return err(`${E_ADDRESS}: ${have === 0 ? 'EOF' : 'unexpected EOF'}`);
    return err('unexpected EOF');
  }
  let source: ProxyEndpoint | null = null;
  let destination: ProxyEndpoint | null = null;
  if (family === 1) {
    source = endpoint(ipv4(buf, 16), buf.readUInt16BE(24));
    destination = endpoint(ipv4(buf, 20), buf.readUInt16BE(26));
  } else if (family === 2) {
    source = endpoint(ipv6Text(buf.subarray(16, 32)), buf.readUInt16BE(48));
    destination = endpoint(ipv6Text(buf.subarray(32, 48)), buf.readUInt16BE(50));
  } else if (family === 0) {
    transport = AF_UNSPEC;
  }
  const tlvs = buf.subarray(16 + minimum, total);
  return { kind: 'header', length: total, header: header(2, command, transport, source, destination, tlvs) };
}

/** Sixteen address bytes as Go prints them: an IPv4-mapped address as IPv4. */
function ipv6Text(b: Uint8Array): string {
  let mapped = b[10] === 0xff && b[11] === 0xff;
  for (let i = 0; i < 10 && mapped; i++) if (b[i] !== 0) mapped = false;
  return mapped ? `${b[12]}.${b[13]}.${b[14]}.${b[15]}` : bytesToIPv6(b);
}

function ipv4(buf: Buffer | Uint8Array, at: number): string {
  return `${buf[at]}.${buf[at + 1]}.${buf[at + 2]}.${buf[at + 3]}`;
}

function endpoint(address: string, port: number): ProxyEndpoint {
  return { address, port, family: isIPv4(address) ? 1 : 2 };
}

function header(
  version: 1 | 2,
  command: number,
  transport: number,
  source: ProxyEndpoint | null,
  destination: ProxyEndpoint | null,
  tlvs: Buffer,
): ProxyHeader {
  return { version, command, transport, source, destination, tlvs };
}

/** A datagram transport (UDP or UNIX datagram). */
export function isDatagram(transport: number): boolean {
  return (transport & 0x0f) === 0x02;
}

/**
 * The TLV vector as CoreDNS publishes it in the `proxyproto/tlv` label: split into TLVs (none if
 * one is malformed), the value of NOOP padding (type 0x04) dropped, joined again, hex; null when
 * empty.
 */
export function tlvHex(tlvs: Buffer): string | null {
  if (tlvs.length === 0) return null;
  const kept: Buffer[] = [];
  for (let i = 0; i < tlvs.length; ) {
    if (i + 3 > tlvs.length) return null;
    const len = tlvs.readUInt16BE(i + 1);
    if (i + 3 + len > tlvs.length) return null;
    kept.push(tlvs[i] === 0x04 ? NOOP_EMPTY : tlvs.subarray(i, i + 3 + len));
    i += 3 + len;
  }
  return Buffer.concat(kept).toString('hex');
}
