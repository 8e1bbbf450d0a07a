/**
 * A plain DNS client: one query over UDP (from a fresh socket), queries pipelined on one TCP
 * connection (two-byte length framing, RFC 1035 §4.2.2), and `exchange`, which asks over UDP and
 * asks again over TCP when the reply is truncated (TC), as a stub resolver does. Every exchange
 * ends: with the reply, the socket's error, or an error after `timeoutMs`.
 *
 * For one-off exchanges (the loop plugin's probe, tests): a fresh unconnected socket that keeps the
 * query's id and takes any datagram (what tests of malformed or unmatched replies need). Forward
 * and shadow keep long-lived connected sockets with many queries in flight (exchangesocket.ts);
 * TCP framing is shared with forward (tcpframes.ts).
 */
import * as dgram from 'node:dgram';
import * as net from 'node:net';
import { Flag } from './constants.js';
import { FrameReader, framed } from './tcpframes.js';

export interface ClientOptions {
  /** Server port. */
  readonly port: number;
  /** Server address; 127.0.0.1 unless given. */
  readonly host?: string;
  /** Give up after this long (5 s unless given). */
  readonly timeoutMs?: number;
  /** Give up when this is aborted (the caller stops), closing the socket. */
  readonly signal?: AbortSignal;
}

/** Options of a UDP exchange. */
export interface UdpOptions extends ClientOptions {
  /** Take only a datagram whose ID is the query's (others are ignored); the first datagram otherwise. */
  readonly matchId?: boolean;
}

const DEFAULT_HOST = '127.0.0.1';
const DEFAULT_TIMEOUT_MS = 5000;

/** A UDP reply and the client port it was received on. */
export interface UdpReply {
  readonly reply: Buffer;
  readonly localPort: number;
}

/**
 * Send `packet` over UDP from a socket bound to an ephemeral port on the server's address (so the
 * source address is known: tests of acl and whoami read it), and resolve with the first datagram
 * that comes back (with `matchId`, the first whose ID is the query's).
 */
export async function udpExchange(packet: Buffer, o: UdpOptions): Promise<UdpReply> {
  const host = o.host ?? DEFAULT_HOST;
  const timeoutMs = o.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const sock = dgram.createSocket(net.isIPv6(host) ? 'udp6' : 'udp4');
  try {
    await new Promise<void>((resolve, reject) => {
      sock.once('error', reject);
      sock.bind(0, host, () => {
        sock.off('error', reject);
        resolve();
      });
    });
    const localPort = sock.address().port;
    const id = packet.readUInt16BE(0);
    const reply = await new Promise<Buffer>((resolve, reject) => {
      const finish = (err: Error | null, m?: Buffer): void => {
        clearTimeout(timer);
        o.signal?.removeEventListener('abort', aborted);
        if (err) reject(err);
        else resolve(m!);
      };
      const aborted = (): void => finish(new Error(`UDP query to ${host}:${o.port} aborted`));
      const timer = setTimeout(() => finish(new Error(`UDP query to ${host}:${o.port} timed out`)), timeoutMs);
      if (o.signal?.aborted) return aborted();
      o.signal?.addEventListener('abort', aborted);
      sock.on('message', (m) => {
        if (o.matchId !== true || (m.length >= 12 && m.readUInt16BE(0) === id)) finish(null, m);
      });
      sock.once('error', (e) => finish(e));
      sock.send(packet, o.port, host);
    });
    return { reply, localPort };
  } finally {
    sock.close();
  }
}

/**
 * Open one TCP connection, write every packet (pipelined), and resolve with the replies received
 * (in arrival order) once `done` holds for them: by default when every query was answered.
 */
export function tcpExchange(
  packets: readonly Buffer[],
  o: ClientOptions,
  done: (replies: readonly Buffer[]) => boolean = (r) => r.length === packets.length,
): Promise<Buffer[]> {
  const host = o.host ?? DEFAULT_HOST;
  const timeoutMs = o.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  return new Promise((resolve, reject) => {
    const sock = net.connect(o.port, host);
    const replies: Buffer[] = [];
    const frames = new FrameReader();
    const timer = setTimeout(() => {
      sock.destroy();
      reject(
        new Error(`TCP exchange with ${host}:${o.port} timed out after ${replies.length}/${packets.length} replies`),
      );
    }, timeoutMs);
    sock.on('connect', () => {
      for (const p of packets) sock.write(framed(p));
    });
    sock.on('data', (chunk) => {
      frames.push(chunk, (frame) => replies.push(Buffer.from(frame)));
      if (done(replies)) {
        clearTimeout(timer);
        sock.end();
        resolve(replies);
      }
    });
    sock.on('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
  });
}

/** Is `reply` truncated (TC set)? */
export function isTruncated(reply: Buffer): boolean {
  return reply.length >= 4 && (reply.readUInt16BE(2) & Flag.TC) !== 0;
}

/** Ask over UDP; when the reply is truncated, ask again over TCP and return that reply. */
export async function exchange(packet: Buffer, o: ClientOptions): Promise<Buffer> {
  const { reply } = await udpExchange(packet, o);
  if (!isTruncated(reply)) return reply;
  const [full] = await tcpExchange([packet], o);
  return full!;
}
