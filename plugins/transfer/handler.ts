/**
 * The transfer handler (CoreDNS 1.15.0 plugin/transfer/transfer.go): AXFR and IXFR over TCP for
 * the zones of its stanzas, from the first source (file, kubernetes, …) authoritative for exactly
 * the asked zone. IXFR is answered with the SOA alone when the client's serial is current and with
 * the whole zone otherwise (sources keep no history). Over UDP both get REFUSED; a client not in
 * `to` gets a REFUSED reply.
 *
 * The records are packed into messages as CoreDNS packs its envelopes — a message is sent before
 * the next record would take its records past 63,000 bytes (uncompressed) — and each message is
 * sent and drained before the source generates more, so a zone of any size streams in bounded
 * memory, and the event loop turns between messages (docs/plugins.md, transfer).
 */
import type { Answer } from 'dns-packet';
import { Qtype, Rcode } from '../../src/dns/constants.js';
import { encodeMessage } from '../../src/dns/encode.js';
import { replyTo } from '../../src/dns/message.js';
import { matchZone } from '../../src/dns/name.js';
import { MAX_RECORD_BYTES, writeRecord } from '../../src/dns/rrwrite.js';
import type { Logger } from '../../src/log.js';
import { nextOrFailure, type Handler } from '../../src/plugin.js';
import { Reply, type Query, type ReplyStream } from '../../src/query.js';
import { finalizeReply } from '../../src/server/reply.js';
import type { TransferSource } from '../../src/transfer.js';
import { splitHostPort } from '../../src/util/hostport.js';
import type { XfrStanza } from './setup.js';

/** CoreDNS flushes an envelope before its records would pass this many bytes. */
export const MESSAGE_RECORD_BYTES = 63000;

/** The stanza whose zone is the longest match for `lname` (CoreDNS's longestMatch). */
export function longestMatch(stanzas: readonly XfrStanza[], lname: string): XfrStanza | null {
  let best: XfrStanza | null = null;
  let zone = '';
  for (const x of stanzas) {
    const z = matchZone(x.zones, lname);
    if (z === undefined) continue;
    if (z.length > zone.length || (z.length === zone.length && z > zone)) {
      zone = z;
      best = x;
    }
  }
  return best;
}

/** `to *`, or the client's address is the host of one of the `to` addresses (any port). */
export function allowed(x: XfrStanza, ip: string): boolean {
  for (const h of x.to) {
    if (h === '*') return true;
    let host: string;
    try {
      host = splitHostPort(h).host;
    } catch {
      return false;
    }
    if (host === ip) return true;
  }
  return false;
}

/**
 * Records generated or written between two turns of the event loop: encoding one 63,000-byte
 * message at once stopped the server for tens of milliseconds (p99 of other clients' queries).
 */
const RECORDS_PER_TURN = 64;

function nextTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/**
 * The record as dns-packet's codec writes it: SVCB and HTTPS records hold their RDATA as wire
 * bytes (src/zone/rr.ts), which dns-packet, having no codec for them, would write with type 0;
 * under their RFC 3597 names it writes the bytes as they are.
 */
function codecForm(rr: Answer): Answer {
  const t = rr.type as string;
  if (t === 'SVCB' || t === 'HTTPS')
    return { ...rr, type: t === 'SVCB' ? 'UNKNOWN_64' : 'UNKNOWN_65' } as unknown as Answer;
  return rr;
}

/**
 * Where each record is written before it is known whether it fits the current message: one per
 * process, used synchronously (a record is written and copied out in the same turn).
 */
const scratch = Buffer.allocUnsafe(MAX_RECORD_BYTES);

/**
 * The message being filled: the reply header and question with AA (`head`), then records written
 * out uncompressed as CoreDNS writes them. Records go into its bytes as they are pulled from the
 * source, so no record object outlives the turn that generated it: holding a message's ~700
 * record objects across turns made each young-generation collection promote nearly all it saw,
 * and a full collection of the old generation followed every transfer (p99 of other queries).
 */
class MessageBuilder {
  private buf: Buffer;
  private off: number;
  /** Records in the message. */
  count = 0;

  constructor(private readonly head: Buffer) {
    this.buf = this.fresh(MESSAGE_RECORD_BYTES);
    this.off = head.length;
  }

  private fresh(room: number): Buffer {
    const buf = Buffer.allocUnsafe(this.head.length + room);
    this.head.copy(buf, 0);
    return buf;
  }

  /** Record bytes in the message. */
  get size(): number {
    return this.off - this.head.length;
  }

  /** Appends the `len` bytes at the start of `rec`. */
  append(rec: Buffer, len: number): void {
    if (this.off + len > this.buf.length) {
      // Only a single record longer than a message's budget: CoreDNS sends it alone.
      const bigger = this.fresh(this.size + len);
      this.buf.copy(bigger, this.head.length, this.head.length, this.off);
      this.buf = bigger;
    }
    rec.copy(this.buf, this.off, 0, len);
    this.off += len;
    this.count++;
  }

  /** The finished message; the builder starts the next one. */
  take(): Buffer {
    const msg = this.buf.subarray(0, this.off);
    msg.writeUInt16BE(this.count, 6);
    this.buf = this.fresh(MESSAGE_RECORD_BYTES);
    this.off = this.head.length;
    this.count = 0;
    return msg;
  }
}

export class TransferHandler implements Handler {
  readonly name = 'transfer';

  constructor(
    private readonly stanzas: readonly XfrStanza[],
    /** The block's sources, filled by their startup hooks. */
    private readonly sources: readonly TransferSource[],
    private readonly next: Handler | null,
    private readonly log: Logger,
  ) {}

  serve(q: Query): number | Promise<number> {
    if (q.qtype !== Qtype.AXFR && q.qtype !== Qtype.IXFR) return nextOrFailure(this.name, this.next, q);
    if (q.proto !== 'tcp') return Rcode.REFUSED;
    const x = longestMatch(this.stanzas, q.lname);
    if (x === null) return nextOrFailure(this.name, this.next, q);
    if (!allowed(x, q.transport.remoteAddress)) {
      // Written here (not left to the server) so that log and prometheus see it, as in CoreDNS.
      q.write(replyTo(q.request, Rcode.REFUSED), this.name);
      return 0;
    }
    let serial = 0;
    if (q.qtype === Qtype.IXFR) {
      const ns = q.request.authorities ?? [];
      const soa = ns[0];
      if (ns.length !== 1 || soa?.type !== 'SOA') return Rcode.SERVFAIL;
      serial = soa.data.serial ?? 0;
    }
    for (const source of this.sources) {
      const records = source.transfer(q.lname, serial);
      if (records === null) continue;
      return this.stream(q, records);
    }
    return nextOrFailure(this.name, this.next, q);
  }

  private async stream(q: Query, records: Iterable<readonly Answer[]>): Promise<number> {
    const opened: { out: ReplyStream | null } = { out: null };
    try {
      return await this.streamTo(q, records, opened);
    } catch (e) {
      // Part of the zone is on the wire: a SERVFAIL now would never be sent (the query counts
      // as answered), so end the connection rather than leave the secondary waiting.
      opened.out?.abort();
      throw e;
    }
  }

  private async streamTo(
    q: Query,
    records: Iterable<readonly Answer[]>,
    opened: { out: ReplyStream | null },
  ): Promise<number> {
    // Opened at the first message: an IXFR for a current serial is a plain reply instead.
    let out: ReplyStream | null = null;
    let sent = 0;
    let soa: Answer | null = null;
    let last: Buffer | null = null;
    let generated = 0;
    const msg = new MessageBuilder(encodeMessage(replyTo(q.request, 0, true)));
    const flush = (): Promise<boolean> => {
      sent += msg.count;
      const reply = new Reply(msg.take(), null, this.name);
      last = finalizeReply(reply, q.req, 'tcp');
      out ??= q.openStream();
      opened.out = out;
      return out === null ? Promise.resolve(false) : out.send(last);
    };
    for (const records0 of records) {
      if (records0.length === 0) {
        // The source paused in a long stretch of work of its own (src/transfer.ts).
        generated = 0;
        await nextTurn();
        continue;
      }
      if (soa === null && records0[0]!.type === 'SOA') soa = records0[0]!;
      for (const rr of records0) {
        const len = writeRecord(codecForm(rr), scratch, 0);
        if (msg.count > 0 && msg.size + len > MESSAGE_RECORD_BYTES) {
          if (!(await flush())) return q.fail(new Error('connection closed during transfer'), Rcode.SERVFAIL);
        }
        msg.append(scratch, len);
      }
      // The source generates as it is pulled: give other clients their turn now and then.
      generated += records0.length;
      if (generated >= RECORDS_PER_TURN) {
        generated = 0;
        await nextTurn();
      }
    }
    const ip = q.transport.remoteAddress;
    const soaSerial = soa === null ? 0 : (soa as Answer & { data: { serial: number } }).data.serial;
    if (sent === 0 && msg.count === 1 && soa !== null) {
      // IXFR for a current serial: the SOA alone, a plain reply (no AA), as CoreDNS writes it.
      const m = replyTo(q.request);
      m.answers = [soa];
      q.write(m, this.name);
      this.log.info(
        `Outgoing noop, incremental transfer for up to date zone ${JSON.stringify(q.name)} to ${ip} for ${soaSerial} SOA serial`,
      );
      return 0;
    }
    if (msg.count > 0 && !(await flush())) {
      return q.fail(new Error('connection closed during transfer'), Rcode.SERVFAIL);
    }
    // The messages are on the connection; the last one stands for them in log and metrics.
    q.streamed = true;
    if (last !== null) q.writeWire(last, this.name);
    this.log.info(
      `Outgoing transfer of ${sent} records of zone ${JSON.stringify(q.name)} to ${ip} for ${soaSerial} SOA serial`,
    );
    return 0;
  }
}
