/**
 * The template handler (docs/plugins.md, template): for a query inside one of the templates'
 * zones, the first template whose class, type and a `match` regex fit renders the reply. A query
 * outside every zone costs one zone comparison per zone and allocates nothing.
 */
import type { Answer } from 'dns-packet';
import { Flag, Qtype, Rcode, qclassName, qtypeName } from '../../src/dns/constants.js';
import { replyTo, setFlag, type Message } from '../../src/dns/message.js';
import { matchZone } from '../../src/dns/name.js';
import { fallsThrough } from '../../src/fallthrough.js';
import { parseRR, RRTextError } from '../../src/dns/rrtext.js';
import { LOOKUP_REFUSED, nextOrFailure, type Handler } from '../../src/plugin.js';
import type { Query } from '../../src/query.js';
import { ExprRunError } from '../../src/expr/errors.js';
import { exprQuery } from '../../src/expr/query.js';
import type { ExprValue } from '../../src/expr/values.js';
import { TemplateExecError } from './gotemplate/errors.js';
import { EMPTY_VAR, GoObject, type GoValue } from './gotemplate/values.js';
import { templateFailures, templateMatches, templateRRFailures } from './metrics.js';
import type { RRTemplate, TemplateConfig, TemplateRegex } from './setup.js';

export const PLUGIN = 'template';

/**
 * Lookup of a CNAME target through the whole server; null when no reply came, LOOKUP_REFUSED for
 * a CNAME cycle (SelfLookup).
 */
export type UpstreamLookup = (sub: Query) => Promise<Message | null | typeof LOOKUP_REFUSED>;

/** miekg/dns ClassToString / TypeToString: '' for numbers it has no mnemonic for. */
function className(c: number): string {
  const n = qclassName(c);
  return n.startsWith('CLASS') ? '' : n;
}
function typeName(t: number): string {
  const n = qtypeName(t);
  return n.startsWith('TYPE') ? '' : n;
}

function questionString(name: string, qtype: number, qclass: number): string {
  return `;${name}\t${qclassName(qclass)}\t ${qtypeName(qtype)}`;
}

/** The `.Message` object: header fields and the question section. */
function messageObject(q: Query): GoObject {
  const req = q.request;
  const f = req.flags ?? 0;
  return new GoObject('*dns.Msg', {
    Id: BigInt(req.id ?? 0),
    Response: false,
    Opcode: BigInt((f >> 11) & 0xf),
    Authoritative: (f & Flag.AA) !== 0,
    Truncated: (f & Flag.TC) !== 0,
    RecursionDesired: (f & Flag.RD) !== 0,
    RecursionAvailable: (f & Flag.RA) !== 0,
    Zero: (f & Flag.Z) !== 0,
    AuthenticatedData: (f & Flag.AD) !== 0,
    CheckingDisabled: (f & Flag.CD) !== 0,
    Rcode: BigInt(f & 0xf),
    Question: [
      // Slice elements are addressable: fmt uses (*Question).String, as for .Question.
      new GoObject('dns.Question', { Name: q.name, Qtype: BigInt(q.qtype), Qclass: BigInt(q.qclass) }, {}, () =>
        questionString(q.name, q.qtype, q.qclass),
      ),
    ],
  });
}

const FAILED: unique symbol = Symbol('failed');

function rrKey(rr: Answer): string {
  return `${rr.name.toLowerCase()} ${rr.type} ${JSON.stringify((rr as { data?: unknown }).data)}`;
}

interface Matched {
  data: GoObject;
  zone: string;
  klass: string;
  type: string;
}

export class TemplateHandler implements Handler {
  readonly name = PLUGIN;
  /** Every template's zones (the first, cheap test). */
  private readonly allZones: readonly string[];

  constructor(
    readonly templates: readonly TemplateConfig[],
    readonly next: Handler | null,
    readonly upstream: UpstreamLookup | null,
    /** The block's view name, the `view` label ('' without a view). */
    readonly view = '',
  ) {
    this.allZones = templates.flatMap((t) => t.zones);
  }

  serve(q: Query): number | Promise<number> {
    const lname = q.lname;
    if (matchZone(this.allZones, lname) === undefined) return nextOrFailure(this.name, this.next, q);
    for (const t of this.templates) {
      const zone = matchZone(t.zones, lname);
      if (zone === undefined) continue;
      if (t.qclass !== 255 && q.qclass !== 255 && q.qclass !== t.qclass) continue;
      if (t.qtype !== 255 && q.qtype !== 255 && q.qtype !== t.qtype) continue;
      const m = this.match(t, q, zone);
      if (m === FAILED) return Rcode.SERVFAIL;
      if (!m) {
        if (fallsThrough(t.fallthrough, lname)) continue;
        return Rcode.SERVFAIL;
      }
      templateMatches.inc({ server: q.transport.server, zone: m.zone, view: this.view, class: m.klass, type: m.type });
      if (t.rcode === Rcode.SERVFAIL) return Rcode.SERVFAIL;
      return this.render(t, q, m);
    }
    return nextOrFailure(this.name, this.next, q);
  }

  /**
   * The template's data for `q`, or null when no regex matched or an `expr` was not true, or
   * FAILED when a `var` or `expr` could not be evaluated (SERVFAIL, no fallthrough, as CoreDNS).
   */
  private match(t: TemplateConfig, q: Query, zone: string): Matched | null | typeof FAILED {
    const lname = q.lname;
    let found: RegExpExecArray | null = null;
    let regex: TemplateRegex | null = null;
    for (const r of t.regexes) {
      found = r.re.exec(lname);
      if (found) {
        regex = r;
        break;
      }
    }
    if (!found || !regex) return null;
    const klass = q.qclass !== 255 ? className(q.qclass) : className(t.qclass);
    const type = q.qtype !== 255 ? typeName(q.qtype) : typeName(t.qtype);
    const matches: string[] = [];
    const group = new Map<string, GoValue>();
    for (let i = 0; i < found.length; i++) {
      const s = found[i] ?? '';
      matches.push(s);
      group.set(String(i), s);
    }
    for (let i = 0; i < found.length; i++) {
      const n = regex.names[i];
      if (n) group.set(n, found[i] ?? '');
    }
    let vars: ReadonlyMap<string, GoValue> = EMPTY_VAR;
    if (t.vars.length > 0 || t.exprs.length > 0) {
      const values = new Map<string, ExprValue>();
      const scope = {
        q: exprQuery(q, (k) => {
          const v = group.get(k);
          return typeof v === 'string' ? v : '';
        }),
        vars: values,
      };
      try {
        for (const v of t.vars) values.set(v.name, v.expr.run(scope));
        for (const e of t.exprs) if (e.run(scope) !== true) return null;
      } catch (e) {
        if (e instanceof ExprRunError) {
          q.fail(new Error(`plugin/template: ${e.message}`), Rcode.SERVFAIL);
          return FAILED;
        }
        throw e;
      }
      vars = values as ReadonlyMap<string, GoValue>;
    }
    let message: GoObject | null = null;
    const question = new GoObject(
      '*dns.Question',
      { Name: q.name, Qtype: BigInt(q.qtype), Qclass: BigInt(q.qclass) },
      {},
      () => questionString(q.name, q.qtype, q.qclass),
    );
    const data = new GoObject(
      '*template.templateData',
      {
        Zone: zone,
        Name: lname,
        Regex: regex.source,
        Match: matches,
        Group: group,
        Class: klass,
        Type: type,
        Message: () => (message ??= messageObject(q)),
        Question: question,
        Remote: q.transport.remoteAddress,
        Var: vars,
      },
      {
        // Labels the `metadata` plugin collected for this query (src/metadata.ts); '' without it.
        Meta: (args) => {
          if (args.length !== 1)
            throw new TemplateExecError(`wrong number of args for Meta: want 1 got ${args.length}`);
          if (typeof args[0] !== 'string') throw new TemplateExecError('wrong type for value; expected string');
          return q.metaValue(args[0]);
        },
      },
    );
    return { data, zone, klass, type };
  }

  /** Render one section's record; null (after counting the failure) when it cannot be built. */
  private renderRR(rt: RRTemplate, q: Query, m: Matched): Answer | null {
    const labels = {
      server: q.transport.server,
      zone: m.zone,
      view: this.view,
      class: m.klass,
      type: m.type,
      section: rt.section,
      template: rt.label,
    };
    let text: string;
    try {
      text = rt.tmpl.execute(m.data);
    } catch (e) {
      templateFailures.inc(labels);
      q.fail(e instanceof Error ? e : new Error(String(e)), Rcode.SERVFAIL);
      return null;
    }
    try {
      return parseRR(text);
    } catch (e) {
      templateRRFailures.inc(labels);
      const why = e instanceof RRTextError ? e.message : String(e);
      q.fail(new Error(`plugin/template: bad record ${JSON.stringify(text)}: ${why}`), Rcode.SERVFAIL);
      return null;
    }
  }

  private render(t: TemplateConfig, q: Query, m: Matched): number | Promise<number> {
    const msg = replyTo(q.request, t.rcode, true);
    const answers: Answer[] = [];
    const cnames: [number, string][] = [];
    for (const rt of t.answer) {
      const rr = this.renderRR(rt, q, m);
      if (!rr) return Rcode.SERVFAIL;
      answers.push(rr);
      if (this.upstream && (q.qtype === Qtype.A || q.qtype === Qtype.AAAA) && rr.type === 'CNAME')
        cnames.push([answers.length, rr.data]);
    }
    for (const rt of t.additional) {
      const rr = this.renderRR(rt, q, m);
      if (!rr) return Rcode.SERVFAIL;
      msg.additionals.push(rr);
    }
    for (const rt of t.authority) {
      const rr = this.renderRR(rt, q, m);
      if (!rr) return Rcode.SERVFAIL;
      msg.authorities.push(rr);
    }
    if (t.ederror) {
      const text = Buffer.from(t.ederror.reason, 'utf8');
      const data = Buffer.allocUnsafe(2 + text.length);
      data.writeUInt16BE(t.ederror.code, 0);
      text.copy(data, 2);
      msg.additionals.push({
        type: 'OPT',
        name: '.',
        udpPayloadSize: 4096,
        extendedRcode: 0,
        ednsVersion: 0,
        flags: 0x8000,
        options: [{ code: 15, data }],
      } as unknown as Answer);
    }
    if (cnames.length === 0) {
      msg.answers = answers;
      q.write(msg, this.name);
      return t.rcode;
    }
    return this.withUpstream(q, msg, answers, cnames, t.rcode);
  }

  /** Append the upstream answers for each CNAME target right after its CNAME, as CoreDNS does. */
  private async withUpstream(
    q: Query,
    msg: Message,
    answers: Answer[],
    cnames: [number, string][],
    rcode: number,
  ): Promise<number> {
    const out: Answer[] = [];
    let from = 0;
    for (const [after, target] of cnames) {
      out.push(...answers.slice(from, after));
      from = after;
      const up = await this.upstream!(q.derive(target.endsWith('.') ? target : `${target}.`, q.qtype));
      // A CNAME cycle (through any block or plugin): the query fails (docs/corefile.md §11).
      if (up === LOOKUP_REFUSED)
        return q.fail(new Error(`plugin/template: lookup of ${target} is a cycle`), Rcode.SERVFAIL);
      if (up) {
        setFlag(msg, Flag.TC, ((up.flags ?? 0) & Flag.TC) !== 0);
        // Keep each record once (a target's answer may repeat one of ours).
        const seen = new Set([...answers, ...out].map(rrKey));
        for (const rr of up.answers) if (!seen.has(rrKey(rr))) out.push(rr);
      }
    }
    out.push(...answers.slice(from));
    msg.answers = out;
    q.write(msg, this.name);
    return rcode;
  }
}
