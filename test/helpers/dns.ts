/**
 * DNS test vocabulary: build a Query for unit-testing a handler, and real UDP/TCP clients for
 * end-to-end tests against 127.0.0.1.
 */
import * as dnsPacket from 'dns-packet';
import type { RecordType } from 'dns-packet';
import { tcpExchange, udpExchange as clientUdpExchange } from '../../src/dns/client.js';
import { decode, type Message } from '../../src/dns/message.js';
import { parseRequest } from '../../src/dns/wire.js';
import { Query, type Transport } from '../../src/query.js';

export interface QueryOptions {
  id?: number;
  /** Add an OPT record with this UDP size (EDNS). */
  edns?: number;
  do?: boolean;
  rd?: boolean;
  cd?: boolean;
  class?: 'IN' | 'CH' | 'HS' | 'ANY';
  /** EDNS options to send (dns-packet shape). */
  options?: { code: number; data: Buffer }[];
}

/** Encode a query packet. `name` may be given with or without the trailing dot. */
export function encodeQuery(name: string, type: RecordType | string, o: QueryOptions = {}): Buffer {
  const flags = (o.rd === false ? 0 : dnsPacket.RECURSION_DESIRED) | (o.cd ? dnsPacket.CHECKING_DISABLED : 0);
  const additionals =
    o.edns !== undefined || o.do
      ? [
          {
            type: 'OPT',
            name: '.',
            udpPayloadSize: o.edns ?? 4096,
            flags: o.do ? dnsPacket.DNSSEC_OK : 0,
            options: o.options ?? [],
          },
        ]
      : [];
  return dnsPacket.encode({
    id: o.id ?? Math.floor(Math.random() * 65536),
    type: 'query',
    flags,
    questions: [
      { name: name === '.' ? '.' : name.replace(/\.$/, ''), type: type as RecordType, class: o.class ?? 'IN' },
    ],
    additionals: additionals as dnsPacket.Answer[],
  });
}

export const TEST_TRANSPORT: Transport = {
  proto: 'udp',
  family: 1,
  remoteAddress: '10.244.2.7',
  remotePort: 40000,
  localAddress: '127.0.0.1',
  localPort: 53,
  server: 'dns://:53',
};

/** A Query as the server would build it, for calling `handler.serve(q)` directly. */
export function makeQuery(
  name: string,
  type: RecordType | string,
  o: QueryOptions & { transport?: Partial<Transport> } = {},
): Query {
  const raw = encodeQuery(name, type, o);
  const parsed = parseRequest(raw);
  if (parsed.kind !== 'query') throw new Error(`test query rejected: ${JSON.stringify(parsed)}`);
  return new Query(raw, parsed.req, { ...TEST_TRANSPORT, ...o.transport });
}

/** Send one query over UDP to 127.0.0.1:port and decode the reply. */
export function udpQuery(
  port: number,
  name: string,
  type: RecordType | string,
  o: QueryOptions & { timeoutMs?: number; host?: string } = {},
): Promise<Message> {
  return udpExchange(port, encodeQuery(name, type, o), o.timeoutMs, o.host).then(decode);
}

/** Send raw bytes over UDP and return the raw reply (rejects on timeout). */
export async function udpExchange(port: number, packet: Buffer, timeoutMs = 5000, host = '127.0.0.1'): Promise<Buffer> {
  return (await clientUdpExchange(packet, { port, host, timeoutMs })).reply;
}

/** Like udpExchange, and the client's port (`localPort`) the reply came to. */
export function udpExchangeFrom(
  port: number,
  packet: Buffer,
  host = '127.0.0.1',
  timeoutMs = 5000,
): Promise<{ reply: Buffer; localPort: number }> {
  return clientUdpExchange(packet, { port, host, timeoutMs });
}

/**
 * Open a TCP connection and exchange several queries on it (pipelined), replies by id. Resolves
 * with the replies received once `done` holds for them: by default when every query was answered
 * (a test of dropped queries passes the ids it expects instead).
 */
export async function tcpQueries(
  port: number,
  packets: Buffer[],
  timeoutMs = 5000,
  host = '127.0.0.1',
  done: (replies: readonly Message[]) => boolean = (replies) => replies.length === packets.length,
): Promise<Message[]> {
  // Decoded once each as they arrive, so `done` sees messages.
  const decoded: Message[] = [];
  await tcpExchange(packets, { port, host, timeoutMs }, (raw) => {
    while (decoded.length < raw.length) decoded.push(decode(raw[decoded.length]!));
    return done(decoded);
  });
  return decoded;
}

export async function tcpQuery(
  port: number,
  name: string,
  type: RecordType | string,
  o: QueryOptions = {},
): Promise<Message> {
  const [r] = await tcpQueries(port, [encodeQuery(name, type, o)]);
  return r!;
}

/** RCODE of a decoded reply (low 4 bits). */
export function rcode(m: Message): number {
  return (m.flags ?? 0) & 0xf;
}
