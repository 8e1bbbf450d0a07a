/**
 * The dnssec handler (plugin/dnssec/handler.go and responsewriter.go): answers DNSKEY queries for
 * its zones' apexes itself, and signs the replies written below it when the query has the DO bit.
 *
 * The signature cache is the hot path. On top of it a reply memo maps the bytes of a reply from
 * below (without its id) to the signed reply: a hit re-checks that every RRset's signatures are the
 * ones the cache holds and still good, counts the same cache hits CoreDNS would, and hands the
 * stored bytes up (shared) without decoding or encoding anything.
 */
import { CounterCell } from '../../src/metrics/batch.js';
import { packetClassName, Qtype } from '../../src/dns/constants.js';
import { replyTo, setRcode, type Message, type Record } from '../../src/dns/message.js';
import { matchZone } from '../../src/dns/name.js';
import { messageRecords, type MessageRecord } from '../../src/dns/wirerecords.js';
import { labelsText } from '../../src/dns/zonefile/names.js';
import { nameWire } from '../../src/dnssec/rrsig.js';
import type { Logger } from '../../src/log.js';
import { nextOrFailure, type Handler } from '../../src/plugin.js';
import type { Query, Reply } from '../../src/query.js';
import type { CachedSig } from './cache.js';
import { cacheEntries, cacheHits, cacheMisses } from './metrics.js';
import { lowerText, ORIG_TTL, type NewRecord, type ReplySigner, type SignStats } from './signer.js';

const T_RRSIG = 46;

/** A signed reply kept for the same reply from below. */
interface Memo {
  readonly wire: Buffer;
  readonly used: readonly { key: string; sigs: CachedSig[] }[];
}

interface ServerCells {
  readonly hits: CounterCell;
  readonly misses: CounterCell;
  lastSize: number;
}

/** The owner's text as dns-packet writes names (no trailing dot). */
function packetName(owner: Buffer): string {
  const labels: Buffer[] = [];
  let off = 0;
  while (off < owner.length && owner[off] !== 0) {
    labels.push(owner.subarray(off + 1, off + 1 + owner[off]!));
    off += owner[off]! + 1;
  }
  const t = labelsText(labels);
  return t === '.' ? '.' : t.slice(0, -1);
}

/** A record for the reply message: its RDATA as wire bytes (the encoder writes them as they are). */
function toRecord(r: NewRecord): Record {
  return {
    name: packetName(r.owner),
    type: `UNKNOWN_${r.type}`,
    class: packetClassName(r.class),
    ttl: r.ttl,
    data: r.rdata,
  } as unknown as Record;
}

export class DnssecHandler implements Handler {
  readonly name = 'dnssec';
  private readonly memo = new Map<string, Memo>();
  private readonly cells = new Map<string, ServerCells>();
  /** DNSKEY records per zone (owner = zone), built once. */
  private readonly dnskeys = new Map<string, NewRecord[]>();

  constructor(
    private readonly next: Handler | null,
    private readonly signer: ReplySigner,
    private readonly memoCapacity: number,
    private readonly log: Logger,
  ) {
    for (const z of signer.zones) {
      const owner = nameWire(z);
      this.dnskeys.set(
        z,
        signer.keys.map((k) => ({ owner, type: 48, class: 1, ttl: k.ttl, rdata: k.rdata })),
      );
    }
  }

  private cellsFor(server: string): ServerCells {
    let c = this.cells.get(server);
    if (c === undefined) {
      c = {
        hits: new CounterCell(cacheHits, { server }),
        misses: new CounterCell(cacheMisses, { server }),
        lastSize: -1,
      };
      this.cells.set(server, c);
    }
    return c;
  }

  private count(server: string, stats: SignStats): void {
    const c = this.cellsFor(server);
    for (let i = 0; i < stats.hits; i++) c.hits.inc();
    for (let i = 0; i < stats.misses; i++) c.misses.inc();
  }

  serve(q: Query): number | Promise<number> {
    const zone = matchZone(this.signer.zones, q.lname);
    if (zone === undefined) return nextOrFailure(this.name, this.next, q);
    if (q.qtype === Qtype.DNSKEY && this.signer.zones.includes(q.lname)) return this.dnskey(q, q.lname);
    if (!q.do) return nextOrFailure(this.name, this.next, q);
    const before = q.reply;
    const r = nextOrFailure(this.name, this.next, q);
    return typeof r === 'number' ? this.after(q, r, before) : r.then((rc) => this.after(q, rc, before));
  }

  /** getDNSKEY: the zone's keys, signed when the query has DO; authoritative. */
  private dnskey(q: Query, zone: string): number {
    const m = replyTo(q.request, 0, true);
    const keys = this.dnskeys.get(zone)!;
    m.answers = keys.map(toRecord);
    if (q.do) {
      const stats: SignStats = { hits: 0, misses: 0, used: [] };
      for (const s of this.signer.sign(keys, zone, ORIG_TTL, Date.now() / 1000, stats)) {
        m.answers.push(toRecord({ ...s, type: T_RRSIG }));
      }
      this.count(q.transport.server, stats);
    }
    q.write(m, this.name);
    return 0;
  }

  private after(q: Query, rc: number, before: Reply | null): number {
    const reply = q.reply;
    if (reply === null || reply === before) return rc;
    const wire = reply.wire();
    const nowS = Date.now() / 1000;
    const server = q.transport.server;
    const key = wire.toString('latin1', 2);
    const hit = this.memo.get(key);
    if (hit !== undefined && this.stillCached(hit, nowS)) {
      const c = this.cellsFor(server);
      for (let i = 0; i < hit.used.length; i++) c.hits.inc();
      q.writeWire(hit.wire, reply.plugin, { shared: true });
      this.setSize(server);
      return hit.wire[3]! & 0xf;
    }
    return this.signFull(q, reply, wire, key, nowS, rc);
  }

  private stillCached(m: Memo, nowS: number): boolean {
    for (const u of m.used) if (this.signer.cache.get(u.key, nowS) !== u.sigs) return false;
    return true;
  }

  private setSize(server: string): void {
    const c = this.cellsFor(server);
    const n = this.signer.cache.size;
    if (c.lastSize !== n) {
      c.lastSize = n;
      cacheEntries.set({ server, type: 'signature' }, n);
    }
  }

  private signFull(q: Query, reply: Reply, wire: Buffer, memoKey: string, nowS: number, rc: number): number {
    let recs: MessageRecord[];
    let qname: Buffer;
    let qtype: number;
    try {
      if (wire.readUInt16BE(4) < 1) return rc;
      recs = messageRecords(wire);
      const q0 = readQuestion(wire);
      qname = q0.name;
      qtype = q0.type;
    } catch (e) {
      this.log.warning(`not signing unreadable reply: ${(e as Error).message}`);
      return rc;
    }
    const server = q.transport.server;
    // ResponseWriter.WriteMsg: the zone of the reply's own question.
    const zone = matchZone(this.signer.zones, lowerText(qname));
    if (zone === undefined) return rc;
    const stats: SignStats = { hits: 0, misses: 0, used: [] };
    const parts = this.signer.signReply(
      recs,
      { rcode: wire[3]! & 0xf, opcode: (wire[2]! >> 3) & 0xf, qname, qtype, zone },
      nowS,
      stats,
    );
    this.count(server, stats);
    const m: Message = reply.message();
    for (const r of parts.answer) m.answers.push(toRecord(r));
    for (const r of parts.authority) m.authorities.push(toRecord(r));
    if (parts.additional.length > 0) {
      // Before the OPT, which the encoder writes last anyway.
      for (const r of parts.additional) m.additionals.push(toRecord(r));
    }
    if (parts.rcode !== undefined) setRcode(m, parts.rcode);
    if (parts.moveToAnswer) {
      m.answers = m.authorities.slice(-2);
      m.authorities = [];
    }
    this.setSize(server);
    const out = reply.wire();
    if (this.memoCapacity > 0) {
      if (this.memo.size >= this.memoCapacity) {
        const oldest = this.memo.keys().next();
        if (oldest.done !== true) this.memo.delete(oldest.value);
      }
      this.memo.set(memoKey, { wire: Buffer.from(out), used: stats.used });
    }
    return parts.rcode ?? rc;
  }
}

/** The first question of a message: name (wire, uncompressed) and type. */
function readQuestion(wire: Buffer): { name: Buffer; type: number } {
  let off = 12;
  const parts: number[] = [];
  for (;;) {
    const len = wire[off];
    if (len === undefined || (len & 0xc0) !== 0) throw new Error('bad question');
    if (len === 0) break;
    for (let i = off; i <= off + len; i++) parts.push(wire[i]!);
    off += len + 1;
  }
  parts.push(0);
  return { name: Buffer.from(parts), type: wire.readUInt16BE(off + 1) };
}
