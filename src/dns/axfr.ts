/**
 * Pulling a zone from a primary (RFC 5936 AXFR over TCP) and asking a primary for its SOA serial,
 * as the *secondary* plugin does through miekg/dns's `Transfer.In` and `Client.Exchange`
 * (docs/plugins.md, secondary). The reply to an AXFR is a sequence of messages on one connection:
 * the first must be NOERROR and start with the zone's SOA, the transfer ends with the message whose
 * last record is the SOA again. Every wait is bounded: the connection must open, and each message
 * arrive, within `timeoutMs` (miekg's 2 s), the whole transfer must end within `deadlineMs` and stay
 * under `maxBytes`; a primary that stalls, trickles or never ends fails the transfer instead of
 * holding it. Errors are worded as Go's and miekg's (`dial tcp …: connect: connection refused`,
 * `dns: bad xfr rcode: 5`, `dns: no SOA`), since they reach the log lines CoreDNS writes.
 */
import * as net from 'node:net';
import { Flag, Qclass, Qtype } from './constants.js';
import { randomId } from './ids.js';
import { FrameReader, framed } from './tcpframes.js';
import { writePlainName } from './wire.js';
import { answerRecords, readHeader } from './wirerecords.js';
import type { ZoneRecord } from './zonefile/record.js';
import { joinHostPort, splitHostPort } from '../util/hostport.js';

export interface XfrOptions {
  /** Dial and per-message read timeout (miekg/dns's default: 2 s). */
  readonly timeoutMs?: number;
  /** The whole exchange must end within this (10 minutes unless given). */
  readonly deadlineMs?: number;
  /** At most this many bytes of messages (256 MiB unless given). */
  readonly maxBytes?: number;
  /** Stops the exchange (shutdown). */
  readonly signal?: AbortSignal;
}

const TIMEOUT_MS = 2000;
const DEADLINE_MS = 10 * 60_000;
const MAX_BYTES = 256 * 1024 * 1024;

/**
 * A failed exchange. `setup`: it failed before the query was sent (the dial), which CoreDNS logs
 * as a failed setup (`Failed to setup transfer`) rather than a failed transfer.
 */
export class XfrError extends Error {
  constructor(
    message: string,
    readonly setup: boolean,
  ) {
    super(message);
  }
}

/** A pulled zone: its records in the order received, and the messages they came in. */
export interface AxfrResult {
  readonly records: ZoneRecord[];
  readonly messages: Buffer[];
}

/** `zone. IN <qtype>` with RD, as miekg's SetQuestion / SetAxfr write it. */
export function questionMessage(zone: string, qtype: number, id = randomId()): Buffer {
  const buf = Buffer.alloc(12 + Buffer.byteLength(zone) + 2 + 4);
  buf.writeUInt16BE(id, 0);
  buf.writeUInt16BE(Flag.RD, 2);
  buf.writeUInt16BE(1, 4);
  const off = writePlainName(zone, buf, 12);
  buf.writeUInt16BE(qtype, off);
  buf.writeUInt16BE(Qclass.IN, off + 2);
  return buf.subarray(0, off + 4);
}

/**
 * One TCP connection that sends a query and hands each reply message to `onMessage` until it
 * returns true (done). Resolves when done; rejects with Go's wording on every failure.
 */
function streamExchange(to: string, query: Buffer, o: XfrOptions, onMessage: (msg: Buffer) => boolean): Promise<void> {
  const timeoutMs = o.timeoutMs ?? TIMEOUT_MS;
  const maxBytes = o.maxBytes ?? MAX_BYTES;
  const { host, port } = splitHostPort(to);
  return new Promise<void>((resolve, reject) => {
    let settled = false;
    let received = 0;
    let local = '';
    const sock = net.connect({ host, port: Number(port) });
    const frames = new FrameReader();
    let readTimer: NodeJS.Timeout | null = null;
    const deadline = setTimeout(
      () => finish(new Error(`read tcp ${local}->${to}: i/o timeout`)),
      o.deadlineMs ?? DEADLINE_MS,
    );
    const onAbort = (): void => finish(new Error('transfer stopped'));
    o.signal?.addEventListener('abort', onAbort);
    function finish(err: Error | null): void {
      if (settled) return;
      settled = true;
      if (readTimer !== null) clearTimeout(readTimer);
      clearTimeout(deadline);
      o.signal?.removeEventListener('abort', onAbort);
      sock.destroy();
      if (err === null) resolve();
      else reject(new XfrError(err.message, local === ''));
    }
    const armRead = (): void => {
      if (readTimer !== null) clearTimeout(readTimer);
      readTimer = setTimeout(() => finish(new Error(`read tcp ${local}->${to}: i/o timeout`)), timeoutMs);
    };
    if (o.signal?.aborted) {
      finish(new Error('transfer stopped'));
      return;
    }
    // The dial is bounded like each read (net.DialTimeout).
    readTimer = setTimeout(() => finish(new Error(`dial tcp ${to}: i/o timeout`)), timeoutMs);
    sock.on('connect', () => {
      local = joinHostPort(sock.localAddress ?? '', String(sock.localPort));
      sock.write(framed(query));
      armRead();
    });
    sock.on('data', (chunk: Buffer) => {
      received += chunk.length;
      if (received > maxBytes) {
        finish(new Error(`dns: transfer from ${to} larger than ${maxBytes} bytes`));
        return;
      }
      armRead();
      try {
        frames.push(chunk, (frame) => {
          if (settled) return;
          if (onMessage(Buffer.from(frame))) finish(null);
        });
      } catch (e) {
        finish(e as Error);
      }
    });
    sock.on('end', () => finish(new Error('EOF')));
    sock.on('close', () => finish(new Error('EOF')));
    sock.on('error', (e: NodeJS.ErrnoException) => {
      if (local === '') {
        const why = e.code === 'ECONNREFUSED' ? 'connect: connection refused' : e.message;
        finish(new Error(`dial tcp ${to}: ${why}`));
      } else if (e.code === 'ECONNRESET') finish(new Error(`read tcp ${local}->${to}: read: connection reset by peer`));
      else finish(e);
    });
  });
}

/** The last answer record of a message is an SOA (miekg's isSOALast); -1 when it has none. */
function lastType(records: readonly ZoneRecord[]): number {
  return records.at(-1)?.type ?? -1;
}

/**
 * Pull `zone` (lower-case, absolute) from `to` (`host:port`) by AXFR, as miekg/dns's inAxfr reads
 * it. Rejects with miekg's and Go's error texts.
 */
export async function axfrIn(zone: string, to: string, o: XfrOptions = {}): Promise<AxfrResult> {
  const id = randomId();
  const records: ZoneRecord[] = [];
  const messages: Buffer[] = [];
  let first = true;
  await streamExchange(to, questionMessage(zone, Qtype.AXFR, id), o, (msg) => {
    const h = readHeader(msg);
    if (h.id !== id) throw new Error('dns: id mismatch');
    const rrs = answerRecords(msg, to);
    if (first) {
      if (h.rcode !== 0) throw new Error(`dns: bad xfr rcode: ${h.rcode}`);
      if (rrs.length === 0 || rrs[0]!.type !== Qtype.SOA) throw new Error('dns: no SOA');
      first = false;
      messages.push(msg);
      for (const r of rrs) records.push(r);
      // Only the SOA: more follow.
      if (rrs.length === 1) return false;
      return lastType(rrs) === Qtype.SOA;
    }
    messages.push(msg);
    for (const r of rrs) records.push(r);
    return lastType(rrs) === Qtype.SOA;
  });
  return { records, messages };
}

/**
 * Ask `to` for the SOA of `zone` over TCP (CoreDNS's shouldTransfer uses TCP "to minimize
 * spoofing"): the serial of the first SOA in the answer, or null when the reply is not NOERROR or
 * has none.
 */
export async function soaSerialOf(zone: string, to: string, o: XfrOptions = {}): Promise<number | null> {
  const id = randomId();
  let serial: number | null = null;
  await streamExchange(to, questionMessage(zone, Qtype.SOA, id), o, (msg) => {
    const h = readHeader(msg);
    if (h.id !== id) throw new Error('dns: id mismatch');
    if (h.rcode !== 0) return true;
    for (const r of answerRecords(msg, to)) {
      if (r.type === Qtype.SOA && r.serial !== undefined) {
        serial = r.serial;
        break;
      }
    }
    return true;
  });
  return serial;
}
