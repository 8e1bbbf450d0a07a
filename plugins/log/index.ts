/**
 * log: one line per query whose name matches a rule, after the rest of the chain answered
 * (docs/plugins.md, log). Default format is CoreDNS's `{common}`, which log pipelines parse; a `json`
 * block property (beyond CoreDNS) writes one JSON object per query through pino instead.
 * Under `-log-format json` every rule writes CoreDNS 1.15.0's JSON query record instead (the
 * formatted line as `msg`, then the structured DNS fields), and the `json` property has no effect.
 */
import { performance } from 'node:perf_hooks';
import type * as Pino from 'pino';
import type { Logger as PinoLogger } from 'pino';
import { requireCjs } from '../../src/util/require.js';
import { directive, oneOf, option, parseOccurrences, str } from '../../src/corefile/options.js';
import { Flag, isServerWrittenRcode, Qtype, qclassName, qtypeName, Rcode, rcodeName } from '../../src/dns/constants.js';
import { isJsonLog, writeQueryLine } from '../../src/log.js';
import { isSubdomain, normalizeZoneArg } from '../../src/dns/name.js';
import type { Handler, PluginDef, SetupContext } from '../../src/plugin.js';
import type { Query } from '../../src/query.js';
import { forEachRecord } from '../../src/dns/wire.js';
import { classify, typify, type ReplyClass, type ReplyType } from '../../src/dns/response.js';
import { compileFormat, COMMON_FORMAT, formatFlags, render, type LogEntry } from './format.js';

const { pino } = requireCjs('pino') as typeof Pino;

interface Rule {
  readonly zone: string;
  readonly segments: ReturnType<typeof compileFormat>;
  readonly classes: ReadonlySet<ReplyClass> | null; // null = all
  readonly json: boolean;
}

function replyFacts(
  q: Query,
  rcode: number,
): { flags: number; size: number; rcode: number; klass: ReplyClass; rtype: ReplyType } {
  if (!q.reply) {
    // No reply written (`q.reply` is the only signal): describe the bare reply the server writes
    // for a SERVFAIL/REFUSED/FORMERR/NOTIMP, nothing for any other returned RCODE.
    if (!isServerWrittenRcode(rcode))
      return { flags: -1, size: -1, rcode, klass: classify(rcode, 0, false), rtype: 'OTHERERROR' };
    // As CoreDNS's log plugin: describe the bare reply the server sends (`SetRcode(req, rc)`:
    // QR, the request's opcode, RD and CD copied for a QUERY, the question, no OPT), so that the
    // line reads `SERVFAIL qr,rd 29` rather than `- - 0`.
    const opcode = q.req.opcode;
    const copied = opcode === 0 ? q.req.flags & (Flag.RD | Flag.CD) : 0;
    const flags = Flag.QR | (opcode << 11) | copied | rcode;
    return {
      flags,
      size: q.req.questionEnd,
      rcode,
      klass: classify(rcode, 0, false),
      rtype: typify({ rcode, opcode, qtype: q.qtype, answers: 0, authoritySoa: false, authorityNs: 0 }),
    };
  }
  const r = q.reply;
  let soa = false;
  let ns = 0;
  let answers: number;
  let size: number;
  if (r.isWire) {
    const buf = r.wire();
    forEachRecord(buf, (section, _rr, typeOff) => {
      if (section !== 1) return;
      const t = buf.readUInt16BE(typeOff);
      if (t === Qtype.SOA) soa = true;
      else if (t === Qtype.NS) ns++;
    });
    answers = r.answerCount;
    size = buf.length;
  } else {
    const m = r.peek();
    for (const a of m.authorities) {
      if (a.type === 'SOA') soa = true;
      else if (a.type === 'NS') ns++;
    }
    answers = m.answers.length;
    size = r.wire().length;
  }
  return {
    flags: r.flags,
    size,
    rcode: r.rcode,
    klass: classify(r.rcode, answers, soa),
    rtype: typify({
      rcode: r.rcode,
      opcode: q.req.opcode,
      qtype: q.qtype,
      answers,
      authoritySoa: soa,
      authorityNs: ns,
    }),
  };
}

class LogHandler implements Handler {
  readonly name = 'log';
  constructor(
    private readonly next: Handler | null,
    private readonly rules: readonly Rule[],
    private readonly ctx: SetupContext,
    private readonly json: PinoLogger | null,
  ) {}

  serve(q: Query): number | Promise<number> {
    if (!this.next) {
      return q.fail(new Error('plugin/log: no next plugin found'), Rcode.SERVFAIL);
    }
    const r = this.next.serve(q);
    if (typeof r === 'number') {
      this.write(q, r);
      return r;
    }
    return r.then((rc) => {
      this.write(q, rc);
      return rc;
    });
  }

  private write(q: Query, rcode: number): void {
    let rule: Rule | undefined;
    for (const ru of this.rules) {
      if (isSubdomain(q.lname, ru.zone)) {
        rule = ru;
        break;
      }
    }
    if (!rule) return;
    const facts = replyFacts(q, rcode);
    if (rule.classes && !rule.classes.has(facts.klass)) return;
    const entry: LogEntry = {
      q,
      recorded: {
        rcode: facts.rcode,
        flags: facts.flags,
        size: facts.size,
        durationNs: BigInt(Math.round((performance.now() - q.start) * 1e6)),
      },
      klass: facts.klass,
      rtype: facts.rtype,
    };
    if (isJsonLog()) {
      // CoreDNS's logJSON: the same fields, in its order; no reply written at all is rcode null.
      const t = q.transport;
      writeQueryLine(render(rule.segments, entry), {
        client_ip: t.remoteAddress,
        client_port: t.remotePort,
        qname: q.lname,
        qtype: qtypeName(q.qtype),
        qclass: qclassName(q.qclass),
        protocol: t.proto,
        id: q.id,
        opcode: q.req.opcode,
        request_size: q.raw.length,
        dnssec_ok: q.do,
        bufsize: q.bufsize,
        rcode: facts.flags < 0 ? null : rcodeName(facts.rcode),
        response_size: facts.size < 0 ? 0 : facts.size,
        duration_seconds: Number(entry.recorded.durationNs) / 1e9,
      });
      return;
    }
    if (rule.json && this.json) {
      this.json.info({
        remote: q.transport.remoteAddress,
        port: q.transport.remotePort,
        id: q.id,
        type: q.qtype,
        name: q.lname,
        proto: q.transport.proto,
        size: q.raw.length,
        do: q.do,
        bufsize: q.bufsize,
        rcode: facts.rcode,
        rflags: formatFlags(facts.flags),
        rsize: facts.size,
        duration: Number(entry.recorded.durationNs) / 1e9,
        class: facts.klass,
      });
      return;
    }
    this.ctx.log.raw('INFO', render(rule.segments, entry));
  }
}

export const LOG_OPTIONS = directive('log', {
  args: { rest: str('NAMES|FORMAT') },
  options: [
    option('class', {
      rest: oneOf(['success', 'denial', 'error', 'all'], 'CLASSES', (v) => `invalid Class: ${v}`),
      min: 1,
      repeat: 'all',
    }),
    option('json'),
  ],
});

export const log: PluginDef = {
  name: 'log',
  repeat: 'all',
  options: LOG_OPTIONS,
  setup(d, ctx) {
    const rules: Rule[] = [];
    for (const occ of parseOccurrences(d, LOG_OPTIONS)) {
      const args = occ.directive.raw;
      let names: string[];
      let format = COMMON_FORMAT;
      if (args.length === 0) names = ['.'];
      else if (args.length === 1) names = [args[0]!];
      else if (args[args.length - 1]!.includes('{')) {
        format = args[args.length - 1]!;
        names = args.slice(0, -1);
      } else names = [...args];
      const named = occ.all('class').flatMap((o) => o.raw);
      const classes =
        named.length === 0
          ? null
          : new Set<ReplyClass>(
              named.flatMap((c) => (c === 'all' ? ['success', 'denial', 'error'] : [c as ReplyClass])),
            );
      const json = occ.has('json');
      const segments = compileFormat(format);
      for (const n of names) {
        // A CIDR expands to one zone per reverse zone it covers. A name that does not normalise
        // (e.g. `{combined}`) still makes a rule that never matches.
        const zones = normalizeZoneArg(n);
        for (const zone of zones.length ? zones : [`${n.toLowerCase()}.`]) {
          rules.push({ zone, segments, classes: classes && classes.size === 3 ? null : classes, json });
        }
      }
    }
    const json = rules.some((r) => r.json)
      ? pino({ base: null, timestamp: pino.stdTimeFunctions.isoTime, messageKey: 'msg' })
      : null;
    return (next) => new LogHandler(next, rules, ctx, json);
  },
};
