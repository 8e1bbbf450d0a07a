/**
 * NOTIFY (RFC 1996) to the secondaries of a zone, as CoreDNS 1.15.0's transfer.Notify does: one
 * message per `to` address that is not `*`, over UDP (from `source` when set), each tried up to
 * three times until the secondary answers NOERROR.
 */
import * as dgram from 'node:dgram';
import { isIPv6 } from 'node:net';
import { Flag, Opcode, Qclass, Qtype, rcodeName } from '../../src/dns/constants.js';
import { randomId } from '../../src/dns/ids.js';
import { writePlainName } from '../../src/dns/wire.js';
import { splitHostPort } from '../../src/util/hostport.js';

/** miekg/dns's Client default read timeout. */
const ATTEMPT_TIMEOUT_MS = 2000;
const ATTEMPTS = 3;

/** `zone. IN SOA` with opcode NOTIFY and AA (miekg's Msg.SetNotify). */
export function notifyMessage(zone: string, id = randomId()): Buffer {
  const buf = Buffer.alloc(12 + Buffer.byteLength(zone) + 2 + 4);
  buf.writeUInt16BE(id, 0);
  buf.writeUInt16BE((Opcode.NOTIFY << 11) | Flag.AA, 2);
  buf.writeUInt16BE(1, 4);
  const off = writePlainName(zone, buf, 12);
  buf.writeUInt16BE(Qtype.SOA, off);
  buf.writeUInt16BE(Qclass.IN, off + 2);
  return buf.subarray(0, off + 4);
}

/** One exchange: the reply's RCODE, or an Error (timeout, socket error). */
function exchangeOnce(msg: Buffer, host: string, port: number, source: string | null): Promise<number | Error> {
  return new Promise((resolve) => {
    const sock = dgram.createSocket(isIPv6(host) ? 'udp6' : 'udp4');
    const id = msg.readUInt16BE(0);
    let done = false;
    const finish = (r: number | Error): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      sock.close();
      resolve(r);
    };
    const timer = setTimeout(() => finish(new Error(`read udp ${host}:${port}: i/o timeout`)), ATTEMPT_TIMEOUT_MS);
    sock.on('error', (e) => finish(e));
    // Only a response (QR set) from the secondary we asked, with our id: the socket is not
    // connected, so anything else that reaches its port is ignored. The opcode is not checked:
    // CoreDNS (miekg's Exchange) accepts a reply whose opcode is QUERY, which some secondaries
    // send, and retrying on it would notify them three times where CoreDNS notifies once.
    sock.on('message', (m, from) => {
      if (from.port !== port || from.address !== host) return;
      if (m.length >= 12 && m.readUInt16BE(0) === id && (m[2]! & 0x80) !== 0) finish(m[3]! & 0xf);
    });
    sock.bind(0, source ?? undefined, () => sock.send(msg, port, host));
  });
}

/** Notify one secondary (`host:port`); null when it accepted, else CoreDNS's error text. */
export async function sendNotify(zone: string, to: string, source: string | null): Promise<string | null> {
  const { host, port } = splitHostPort(to);
  let code = -1;
  let err: Error | null = null;
  for (let i = 0; i < ATTEMPTS; i++) {
    const r = await exchangeOnce(notifyMessage(zone), host, Number(port), source);
    if (r instanceof Error) {
      err = r;
      continue;
    }
    err = null;
    code = r;
    if (code === 0) return null;
  }
  if (err !== null)
    return `notify for zone ${JSON.stringify(zone)} was not accepted by ${JSON.stringify(to)}: ${JSON.stringify(err.message)}`;
  return `notify for zone ${JSON.stringify(zone)} was not accepted by ${JSON.stringify(to)}: rcode was ${JSON.stringify(rcodeName(code < 0 ? 2 : code))}`;
}
