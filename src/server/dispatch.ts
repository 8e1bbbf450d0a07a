/**
 * The per-packet path: parse, check, route, run the chain, fit and send the reply. Kept free of
 * per-query closures on the synchronous path: a chain that returns a number is finished inline.
 */
import { performance } from 'node:perf_hooks';
import { bareReplyRcode, DEFAULT_MAX_UDP_SIZE, Opcode, qtypeName, Qclass, Rcode } from '../dns/constants.js';
import type { TsigKeyring } from '../dns/tsig.js';
import { parseRequest, type ParsedRequest } from '../dns/wire.js';
import { coreLog } from '../log.js';
import * as dnsMetrics from '../metrics/dns.js';
import { Query, type LookupChain, type Transport } from '../query.js';
import type { Dispatch, Exchange } from './listener.js';
import { bareReply, finalizeReply } from './reply.js';
import type { Route, RouteTable } from './routes.js';
import { TsigExchange, tsigNow } from '../tsig.js';

/** The keys of a listener without `tsig`: every TSIG request fails with BADKEY (miekg's ErrSecret). */
const NO_KEYS: TsigKeyring = new Map();

export interface DispatchOptions {
  /** Largest UDP reply offered to EDNS clients. */
  maxUdpSize: number;
  /**
   * Recover from a plugin's exception with SERVFAIL (default). False with the `debug` plugin: the
   * exception is not caught and ends the process with its stack trace, as an unrecovered Go panic
   * ends CoreDNS.
   */
  recover?: boolean;
  /** A block of the listener takes UPDATE messages (dynupdate): read them instead of NOTIMP. */
  allowUpdate?: boolean;
}

/**
 * How a listener dispatches packets, and lookups through it are answered: `debug` on a block of
 * the listener (ListenSpec.debug) turns recovery off. One definition for the Server and the
 * socketless test runner (test/helpers/corefile.ts).
 */
export function listenerDispatchOptions(
  spec: { readonly debug: boolean; readonly update?: boolean },
  maxUdpSize: number = DEFAULT_MAX_UDP_SIZE,
): DispatchOptions {
  return { maxUdpSize, recover: !spec.debug, allowUpdate: spec.update === true };
}

/** `debug`: let the exception end the process (from outside the promise that carried it). */
function crash(e: unknown): void {
  process.nextTick(() => {
    throw e;
  });
}

/** Observations for queries the server rejects before any chain: zone="dropped", plugin="". */
function recordDropped(t: Transport, req: ParsedRequest, reqSize: number, reply: Buffer, start: number): void {
  // Batched cells like the prometheus plugin's: a REFUSED flood is a hot path too.
  const z = dnsMetrics.dnsCells(t.server, 'dropped');
  const p = t.proto === 'tcp' ? z.tcp : z.udp;
  p.request(t.family, req.qtype).inc();
  if (req.edns?.do) z.doRequests.inc();
  p.reqSize.observe(reqSize);
  p.respSize.observe(reply.length);
  z.response(reply[3]! & 0xf, '').inc();
  z.duration.observe((performance.now() - start) / 1000);
}

/** Send the reply for the chain's result and end the exchange, whatever goes wrong in between. */
function complete(q: Query, rcode: number, ex: Exchange, opts: DispatchOptions): void {
  try {
    finish(q, rcode, ex, opts);
  } catch (e) {
    panicked(q, e, ex);
  } finally {
    ex.done();
  }
}

function finish(q: Query, rcode: number, ex: Exchange, opts: DispatchOptions): void {
  let out: Buffer;
  // Dropped on purpose (acl `drop`): the client gets nothing.
  if (q.reply === null && q.dropped) return;
  // A zone transfer sent its messages on the connection already.
  if (q.streamed) return;
  if (q.reply === null) {
    // Nothing written (`q.reply` is the only signal): the server writes a bare reply with the
    // returned RCODE, or SERVFAIL for one that claims success without an answer (§7.4).
    out = bareReply(q.raw, q.req.questionEnd, bareReplyRcode(rcode), q.req.edns);
  } else {
    try {
      out = finalizeReply(q.reply, q.req, q.transport.proto, opts.maxUdpSize);
    } catch (e) {
      coreLog.error(`failed to encode reply for ${q.lname} ${qtypeName(q.qtype)}: ${(e as Error).message}`);
      out = bareReply(q.raw, q.req.questionEnd, Rcode.SERVFAIL, q.req.edns);
    }
  }
  if (q.tsig !== null) {
    const signed = signReply(q.tsig, out);
    if (signed === null) return;
    out = signed;
  }
  if (q.reply !== null && q.onSend !== null) q.onSend(out);
  ex.respond(out);
}

/**
 * A TSIG-signed request that the tsig plugin took: the reply is signed as sent (after its OPT and
 * truncation), as miekg/dns signs in its writer; null (nothing is sent) when it cannot be signed.
 * Out of line: the common path only tests `q.tsig`.
 */
function signReply(t: TsigExchange, out: Buffer): Buffer | null {
  return t.signer === null ? out : t.signer.sign(out, tsigNow());
}

/** An UPDATE routed to a block without dynupdate: NOTIMP, counted as dropped (acceptsOpcode). */
function updateNotImplemented(ex: Exchange, req: ParsedRequest, packet: Buffer, start: number): void {
  const reply = bareReply(packet, req.questionEnd, Rcode.NOTIMP, req.edns);
  ex.respond(reply);
  recordDropped(ex, req, packet.length, reply, start);
  ex.done();
}

/** The listener's keys for a request with a TSIG RR (src/tsig.ts). */
function tsigExchange(route: Route): TsigExchange {
  return new TsigExchange(route.tsigKeys ?? NO_KEYS);
}

function panicked(q: Query, err: unknown, ex: Exchange): void {
  dnsMetrics.panicsTotal.inc();
  coreLog.error(`Recovered from panic in server: "${q.transport.server}" ${(err as Error)?.stack ?? String(err)}`);
  ex.respond(bareReply(q.raw, q.req.questionEnd, Rcode.SERVFAIL, q.req.edns));
}

export function makeDispatch(table: RouteTable, opts: DispatchOptions): Dispatch {
  return (packet, ex) => dispatchPacket(table, opts, packet, ex, null);
}

/**
 * Serve one packet on a listener's routes and hand the reply to `ex`. `lookups` is the chain of
 * nested lookups the packet is part of (null for a client's packet; src/server/selflookup.ts runs
 * derived queries through here with an exchange that keeps the reply instead of sending it).
 */
export function dispatchPacket(
  table: RouteTable,
  opts: DispatchOptions,
  packet: Buffer,
  ex: Exchange,
  lookups: LookupChain | null,
): void {
  const start = performance.now();
  const parsed = parseRequest(packet, opts.allowUpdate === true);
  if (parsed.kind === 'drop') {
    ex.done();
    return;
  }
  if (parsed.kind === 'rcode') {
    ex.respond(bareReply(packet, parsed.questionEnd, parsed.rcode, parsed.edns));
    ex.done();
    return;
  }
  const req = parsed.req;
  if (req.edns !== null && req.edns.version !== 0) {
    // BADVERS: no further processing, not counted in metrics.
    ex.respond(bareReply(packet, req.questionEnd, Rcode.BADVERS, req.edns));
    ex.done();
    return;
  }
  const routable = req.qclass === Qclass.IN || table.anyClass;
  let q: Query | null = null;
  let route: Route | undefined;
  if (!routable) route = undefined;
  else if (table.hasViews) {
    // Views read the query (client address, metadata) before a block is chosen.
    q = new Query(packet, req, ex, start);
    route = table.lookupViews(req.lname, req.qtype, q);
  } else route = table.lookup(req.lname, req.qtype);
  if (route === undefined || route.chain === null) {
    const reply = bareReply(packet, req.questionEnd, Rcode.REFUSED, req.edns);
    ex.respond(reply);
    recordDropped(ex, req, packet.length, reply, start);
    ex.done();
    return;
  }
  // Another block of the listener takes UPDATE, this one not.
  if (req.opcode === Opcode.UPDATE && route.update !== true) return updateNotImplemented(ex, req, packet, start);
  q ??= new Query(packet, req, ex, start);
  q.zone = route.zone;
  if (req.tsigAt >= 0) q.tsig = tsigExchange(route);
  if (lookups !== null) {
    q.lookups = lookups;
    q.depth = lookups.depth;
  }
  let result: number | Promise<number>;
  try {
    result = route.chain.serve(q);
  } catch (e) {
    if (opts.recover === false) throw e;
    panicked(q, e, ex);
    ex.done();
    return;
  }
  if (typeof result === 'number') {
    complete(q, result, ex, opts);
    return;
  }
  result.then(
    (rc) => complete(q, rc, ex, opts),
    (e: unknown) => {
      if (opts.recover === false) return crash(e);
      panicked(q, e, ex);
      ex.done();
    },
  );
}
