/**
 * A small authoritative-style upstream on 127.0.0.1 for the resolver suite: it knows a few
 * "internet" names with per-type records (unlike test/helpers/upstream.ts, which answers per name
 * whatever the type), answers NXDOMAIN + SOA for unknown names and NODATA + SOA for known names
 * without records of the asked type, and records every query it receives.
 */
import * as dgram from 'node:dgram';
import * as dnsPacket from 'dns-packet';
import type { Answer } from 'dns-packet';
import { freePort } from '../helpers/net.js';

export interface ZoneRecord {
  readonly type: 'A' | 'AAAA' | 'CNAME' | 'TXT';
  readonly data: string;
}

/** The external names of the suite (TEST-NET and documentation addresses only). */
export const EXTERNAL_ZONE: Readonly<Record<string, readonly ZoneRecord[]>> = {
  'example.com.': [
    { type: 'A', data: '192.0.2.1' },
    { type: 'AAAA', data: '2001:db8::1' },
  ],
  'www.example.com.': [{ type: 'CNAME', data: 'example.com.' }],
  'v4only.example.net.': [{ type: 'A', data: '198.51.100.7' }],
};

export interface SeenQuery {
  readonly name: string;
  readonly type: string;
}

export class ZoneUpstream {
  readonly received: SeenQuery[] = [];
  private constructor(
    readonly port: number,
    private readonly sock: dgram.Socket,
    private readonly zone: ReadonlyMap<string, readonly ZoneRecord[]>,
  ) {}

  static async start(zone: Readonly<Record<string, readonly ZoneRecord[]>> = EXTERNAL_ZONE): Promise<ZoneUpstream> {
    const port = await freePort();
    const sock = dgram.createSocket('udp4');
    const u = new ZoneUpstream(port, sock, new Map(Object.entries(zone).map(([k, v]) => [k.toLowerCase(), v])));
    sock.on('message', (msg, rinfo) => {
      const out = u.answer(msg);
      if (out) sock.send(out, rinfo.port, rinfo.address);
    });
    await new Promise<void>((resolve, reject) => {
      sock.once('error', reject);
      sock.bind(port, '127.0.0.1', () => resolve());
    });
    return u;
  }

  get addr(): string {
    return `127.0.0.1:${this.port}`;
  }

  /** Queries received for `name` (absolute, any case). */
  count(name: string): number {
    const n = name.toLowerCase();
    return this.received.filter((r) => r.name === n).length;
  }

  private answer(msg: Buffer): Buffer | null {
    let req: dnsPacket.Packet;
    try {
      req = dnsPacket.decode(msg);
    } catch {
      return null;
    }
    const q = req.questions?.[0];
    if (!q) return null;
    const name = `${q.name.toLowerCase()}.`.replace(/^\.$/, '.');
    this.received.push({ name, type: q.type });
    const answers: Answer[] = [];
    let owner = name;
    let records = this.zone.get(owner);
    for (let hops = 0; records && hops < 8; hops++) {
      const cname = records.find((r) => r.type === 'CNAME');
      if (!cname || q.type === 'CNAME') break;
      answers.push({
        name: owner.slice(0, -1),
        type: 'CNAME',
        class: 'IN',
        ttl: 60,
        data: cname.data.replace(/\.$/, ''),
      });
      owner = cname.data.toLowerCase();
      records = this.zone.get(owner);
    }
    for (const r of records ?? []) {
      if (r.type !== q.type) continue;
      if (r.type === 'TXT') answers.push({ name: owner.slice(0, -1), type: 'TXT', class: 'IN', ttl: 60, data: r.data });
      else
        answers.push({
          name: owner.slice(0, -1),
          type: r.type,
          class: 'IN',
          ttl: 60,
          data: r.data.replace(/\.$/, ''),
        } as Answer);
    }
    const exists = this.zone.has(name);
    const soa: Answer = {
      name: '.',
      type: 'SOA',
      class: 'IN',
      ttl: 60,
      data: {
        mname: 'a.root-servers.net',
        rname: 'nstld.verisign-grs.com',
        serial: 1,
        refresh: 1800,
        retry: 900,
        expire: 604800,
        minimum: 60,
      },
    };
    return dnsPacket.encode({
      id: req.id ?? 0,
      type: 'response',
      flags: dnsPacket.RECURSION_AVAILABLE | ((req.flags ?? 0) & dnsPacket.RECURSION_DESIRED) | (exists ? 0 : 3),
      questions: [q],
      answers,
      authorities: answers.length ? [] : [soa],
    });
  }

  stop(): Promise<void> {
    return new Promise((resolve) => this.sock.close(() => resolve()));
  }
}
