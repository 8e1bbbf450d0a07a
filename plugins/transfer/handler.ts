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
import { copyBytes, WireRecordBatch } from '../../src/dns/recordbatch.js';
import type { TransferBatch, TransferSource } from '../../src/transfer.js';
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
  private readonly buf: Buffer;
  private off: number;
  /** Records in the message. */
  count = 0;
  /** A record longer than a message's budget, sent alone in a buffer of its own. */
  private big: Buffer | null = null;

  constructor(private readonly head: Buffer) {
    this.buf = Buffer.allocUnsafe(head.length + MESSAGE_RECORD_BYTES);
    head.copy(this.buf, 0);
    this.off = head.length;
  }

  /** Record bytes in the message. */
  get size(): number {
    return this.off - this.head.length;
  }

  /** Appends `records` records, the `len` bytes at `start` in `rec`. */
  append(rec: Buffer, start: number, len: number, records = 1): void {
    if (this.off + len > this.buf.length) {
      // Only a single record longer than a message's budget (the message is empty): CoreDNS
      // sends it alone.
      this.big = Buffer.allocUnsafe(this.head.length + len);
      this.head.copy(this.big, 0);
      rec.copy(this.big, this.head.length, start, start + len);
      this.off = this.head.length + len;
      this.count += records;
      return;
    }
    this.off += copyBytes(rec, start, len, this.buf, this.off);
    this.count += records;
  }

  /**
   * The finished message; the builder starts the next one in the same buffer, so the message must
   * be sent (copied into the connection's frame) before anything more is appended.
   */
  take(): Buffer {
    const msg = (this.big ?? this.buf).subarray(0, this.off);
    msg.writeUInt16BE(this.count, 6);
    this.big = null;
    this.off = this.head.length;
    this.count = 0;
    return msg;
  }
}

function closedDuringTransfer(q: Query): number {
  return q.fail(new Error('connection closed during transfer'), Rcode.SERVFAIL);
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

  private async stream(q: Query, records: Iterable<TransferBatch>): Promise<number> {
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
    records: Iterable<TransferBatch>,
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
    for (const batch of records) {
      if (batch instanceof WireRecordBatch) {
        // Records the source wrote in wire form: copied into the message a run at a time (the
        // batch is the source's again when the next one is pulled).
        const buf = batch.buffer;
        for (let i = 0; i < batch.count; ) {
          // The run of records from `i` that still fits in the message, copied in one go.
          const start = batch.start(i);
          const room = MESSAGE_RECORD_BYTES - msg.size;
          let j = i;
          while (j < batch.count && batch.end(j) - start <= room) j++;
          if (j === i) {
            if (msg.count > 0) {
              if (!(await flush())) return closedDuringTransfer(q);
              continue;
            }
            j = i + 1; // a record larger than a whole message's budget: alone
          }
          msg.append(buf, start, batch.end(j - 1) - start, j - i);
          i = j;
        }
        generated += batch.count;
      } else {
        if (batch.length === 0) {
          // The source paused in a long stretch of work of its own (src/transfer.ts).
          generated = 0;
          await nextTurn();
          continue;
        }
        if (soa === null && batch[0]!.type === 'SOA') soa = batch[0]!;
        for (const rr of batch) {
          const form = codecForm(rr);
          let len = writeRecord(form, scratch, 0);
          if (msg.count > 0 && msg.size + len > MESSAGE_RECORD_BYTES) {
            if (!(await flush())) return closedDuringTransfer(q);
            // Another transfer may have used the scratch buffer while this one waited.
            len = writeRecord(form, scratch, 0);
          }
          msg.append(scratch, 0, len);
        }
        generated += batch.length;
      }
      // The source generates as it is pulled: give other clients their turn now and then.
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
    if (msg.count > 0 && !(await flush())) return closedDuringTransfer(q);
    // The messages are on the connection; the last one stands for them in log and metrics.
    q.streamed = true;
    if (last !== null) q.writeWire(last, this.name);
    this.log.info(
      `Outgoing transfer of ${sent} records of zone ${JSON.stringify(q.name)} to ${ip} for ${soaSerial} SOA serial`,
    );
    return 0;
  }
}
