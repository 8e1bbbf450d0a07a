/**
 * Zone transfers as the differential tests read them from both servers: the AXFR/IXFR query, and
 * every message of one transfer over TCP, parsed by src/dnscompare.
 */
import * as net from 'node:net';
import * as dnsPacket from 'dns-packet';
import type { Answer } from 'dns-packet';
import { parseMessage, type WireMessage } from '../../src/dnscompare/index.js';
import { Qtype } from '../../src/dns/constants.js';

/** One transfer over TCP: every message until the closing SOA (or the first message when it is not a transfer). */
export function transferMessages(port: number, query: Buffer, timeoutMs = 20000): Promise<WireMessage[]> {
  return new Promise((resolve, reject) => {
    const sock = net.connect(port, '127.0.0.1');
    const out: WireMessage[] = [];
    let buf = Buffer.alloc(0);
    let soas = 0;
    const timer = setTimeout(() => finish(new Error(`transfer from port ${port} did not end`)), timeoutMs);
    const finish = (err: Error | null): void => {
      clearTimeout(timer);
      sock.destroy();
      if (err) reject(err);
      else resolve(out);
    };
    sock.on('connect', () => {
      const len = Buffer.alloc(2);
      len.writeUInt16BE(query.length);
      sock.write(Buffer.concat([len, query]));
    });
    sock.on('data', (chunk) => {
      buf = Buffer.concat([buf, chunk]);
      while (buf.length >= 2 && buf.length >= 2 + buf.readUInt16BE(0)) {
        const parsed = parseMessage(buf.subarray(2, 2 + buf.readUInt16BE(0)));
        buf = buf.subarray(2 + buf.readUInt16BE(0));
        if (!parsed.ok) return finish(new Error(`malformed message from port ${port}: ${parsed.error}`));
        const m = parsed.msg;
        out.push(m);
        for (const a of m.answer) if (a.type === Qtype.SOA) soas++;
        // Done: an error, a single-SOA reply (IXFR up to date), or the closing SOA.
        if (m.rcode !== 0 || (out.length === 1 && soas === 1 && m.answer.length === 1) || soas >= 2)
          return finish(null);
      }
    });
    sock.on('error', (e) => finish(e));
    sock.on('close', () => finish(out.length > 0 ? null : new Error('connection closed without a reply')));
  });
}

/** An AXFR or IXFR query for `zone`; IXFR with the client's `serial` in its authority section. */
export function axfrQuery(zone: string, type: 'AXFR' | 'IXFR', serial?: number, edns?: number): Buffer {
  return dnsPacket.encode({
    id: 4242,
    type: 'query',
    flags: 0,
    questions: [{ name: zone, type, class: 'IN' }],
    authorities:
      serial === undefined
        ? []
        : [
            {
              name: zone,
              type: 'SOA',
              ttl: 0,
              data: {
                mname: 'ns.' + zone,
                rname: 'h.' + zone,
                serial,
                refresh: 0,
                retry: 0,
                expire: 0,
                minimum: 0,
              },
            },
          ],
    additionals: edns === undefined ? [] : [{ type: 'OPT', name: '.', udpPayloadSize: edns, flags: 0 } as Answer],
  });
}
