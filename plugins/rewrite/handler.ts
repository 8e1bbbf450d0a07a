/**
 * The rewrite query path (docs/plugins.md, rewrite). The rules run in order against the question;
 * a query no rule matches goes to the next plugin untouched, without allocating. Otherwise the
 * rewritten request goes down the chain as a derived query, and its reply comes back with the
 * client's question restored and the response rules applied (in reverse rule order), the way
 * CoreDNS's ResponseReverter does.
 */
import type { Answer } from 'dns-packet';
import { Flag, isServerWrittenRcode, Rcode } from '../../src/dns/constants.js';
import { encodeMessage } from '../../src/dns/encode.js';
import { replyTo, type Message } from '../../src/dns/message.js';
import { fqdn, isDomainName, toPacketName } from '../../src/dns/name.js';
import type { Logger } from '../../src/log.js';
import {
  LOOKUP_REFUSED,
  nextOrFailure,
  type Handler,
  type Rcode as RcodeT,
  type SelfLookup,
} from '../../src/plugin.js';
import type { Query } from '../../src/query.js';
import { CnameResponseRule, packetOption, type ResponseRule } from './response.js';
import type { Rule } from './rules/rule.js';
import { RewriteState, type EdnsOption } from './state.js';

/** CoreDNS 1.15.0's limit on cname-rule lookups that re-enter the server. */
export const MAX_CNAME_REWRITE_DEPTH = 8;

export class RewriteHandler implements Handler {
  readonly name = 'rewrite';
  /** EDNS0 option codes the rules set: copied from the rewritten request into OPT-less replies. */
  private readonly supported: ReadonlySet<number>;

  constructor(
    private readonly rules: readonly Rule[],
    private readonly next: Handler | null,
    /** Lookups through the whole server (null: none is running). */
    private readonly selfLookup: SelfLookup | null,
    private readonly log: Logger,
  ) {
    this.supported = new Set(rules.flatMap((r) => r.ednsCodes ?? []));
  }

  serve(q: Query): RcodeT | Promise<RcodeT> {
    const rules = this.rules;
    let st: RewriteState | null = null;
    for (let i = 0; i < rules.length; i++) {
      const rule = rules[i]!;
      if (!rule.matches(st ?? q)) continue;
      st ??= new RewriteState(q);
      if (!rule.apply(st)) continue;
      if (!isDomainName(st.name)) return q.fail(new Error(`invalid name after rewrite: ${st.name}`), Rcode.SERVFAIL);
      if (rule.mode === 'stop') {
        st.stopped = true;
        break;
      }
    }
    if (st === null) return nextOrFailure(this.name, this.next, q);
    return this.serveRewritten(q, st);
  }

  private serveRewritten(q: Query, st: RewriteState): RcodeT | Promise<RcodeT> {
    const d = st.toQuery();
    const rc = nextOrFailure(this.name, this.next, d);
    if (typeof rc === 'number') return this.back(q, st, d, rc);
    return rc.then((r) => this.back(q, st, d, r));
  }

  /** The reply of the rewritten query `d`, turned into the reply to `q`. */
  private back(q: Query, st: RewriteState, d: Query, rc: RcodeT): RcodeT | Promise<RcodeT> {
    if (d !== q && d.error) q.error = d.error;
    const revert = st.stopped || st.response.length > 0;
    if (!revert) {
      // CoreDNS hands the client's writer on: the reply keeps the rewritten question.
      if (d.reply) {
        if (
          st.ednsOptions !== null &&
          d.req.edns !== null &&
          !d.reply.peek().additionals.some((r) => r.type === 'OPT')
        ) {
          const m = d.reply.message();
          this.echoOptions(m, st, d);
          writeExactCase(q, m, d.reply.plugin);
        } else q.reply = d.reply;
      } else if (d !== q && isServerWrittenRcode(rc)) {
        const m = replyTo(d.request, rc);
        this.echoOptions(m, st, d);
        writeExactCase(q, m, this.name);
      }
      return rc;
    }
    let msg: Message;
    let plugin = this.name;
    let status = rc;
    if (d.reply) {
      msg = d.reply.message();
      plugin = d.reply.plugin;
    } else if (isServerWrittenRcode(rc)) {
      // Nothing written: the reply for the RCODE goes through the response rules too.
      msg = replyTo(d.request, rc);
      this.echoOptions(msg, st, d);
      status = Rcode.NOERROR;
    } else {
      return rc;
    }
    restoreQuestion(msg, q);
    const rules = st.response;
    if (rules.some((r) => r instanceof CnameResponseRule)) {
      return this.applyWithCname(msg, rules, q, d).then(() => this.finish(q, st, d, msg, plugin, status));
    }
    if (rules.length > 0) applyRules(msg, rules);
    return this.finish(q, st, d, msg, plugin, status);
  }

  private finish(q: Query, st: RewriteState, d: Query, msg: Message, plugin: string, status: RcodeT): RcodeT {
    this.echoOptions(msg, st, d);
    writeExactCase(q, msg, plugin);
    return status;
  }

  /**
   * A reply without OPT to a request an EDNS0 rule gave options: the server would build the OPT
   * from the (rewritten) request, carrying the options the rules registered, minus reverted ones.
   */
  private echoOptions(msg: Message, st: RewriteState, d: Query): void {
    const opts = st.ednsOptions;
    if (opts === null || d.req.edns === null) return;
    if (msg.additionals.some((r) => r.type === 'OPT')) return;
    const reverted: EdnsOption[] = opts.slice();
    const rules = st.response;
    for (let i = rules.length - 1; i >= 0; i--) rules[i]!.revertOption?.(reverted);
    const options = reverted.filter((o) => this.supported.has(o.code)).map((o) => packetOption(o.code, o.data));
    msg.additionals.push({
      type: 'OPT',
      name: '.',
      udpPayloadSize: d.req.edns.udpSize,
      extendedRcode: 0,
      ednsVersion: 0,
      flags: d.req.edns.flags & 0xff00,
      options,
    } as unknown as Answer);
  }

  /** The response rules with cname rules among them: each record in turn, lookups awaited. */
  private async applyWithCname(msg: Message, rules: readonly ResponseRule[], q: Query, d: Query): Promise<void> {
    const sections = [msg.authorities, msg.answers, msg.additionals];
    let any = false;
    for (const section of sections) {
      for (const rr of section.slice()) {
        any = true;
        for (let i = rules.length - 1; i >= 0; i--) {
          const r = rules[i]!;
          if (r instanceof CnameResponseRule) await this.cname(msg, rr, r, q, d);
          else r.record(msg, rr);
        }
      }
    }
    if (!any) applyMessageLevel(msg, rules);
  }

  /** One CNAME record against one cname rule: look the rewritten target up and splice it in. */
  private async cname(msg: Message, rr: Answer, rule: CnameResponseRule, q: Query, d: Query): Promise<void> {
    if (rr.type !== 'CNAME' || typeof rr.data !== 'string') return;
    const target = fqdn(rr.data);
    const t = rule.rule.targets(target);
    if (t === null || t[0] !== target) return;
    const [from, to] = t;
    if (q.depth > MAX_CNAME_REWRITE_DEPTH) return;
    if (this.selfLookup === null) {
      this.log.error('upstream lookup failed: no full server is running');
      return;
    }
    const lq = d.derive(to, d.qtype);
    lq.depth = q.depth + 1;
    let up: Message | null;
    try {
      // The same target may come round again: the depth limit above bounds it, as in CoreDNS.
      const r = await this.selfLookup.lookup(lq, { repeats: true });
      up = r === LOOKUP_REFUSED ? null : r;
    } catch (e) {
      this.log.error(`upstream lookup failed: ${(e as Error).message}`);
      return;
    }
    if (!up) {
      this.log.error('upstream lookup returned nil');
      return;
    }
    const answers: Answer[] = [];
    for (const a of msg.answers) {
      if (a.type !== 'CNAME') continue;
      answers.push(a);
      if (typeof a.data === 'string' && fqdn(a.data) === from) {
        a.data = toPacketName(to);
        break;
      }
    }
    for (const a of up.answers) answers.push(a);
    msg.answers = answers;
    msg.flags = ((msg.flags ?? 0) & ~Flag.TC) | ((up.flags ?? 0) & Flag.TC);
  }
}

/**
 * Write `msg` as wire bytes compressed the way miekg/dns compresses (only names of the same letter
 * case): an answer owner rewritten to the lower-cased name keeps that case instead of pointing at
 * the client's question. A message the encoder refuses is left to the server (which answers SERVFAIL).
 */
function writeExactCase(q: Query, msg: Message, plugin: string): void {
  let wire: Buffer;
  try {
    wire = encodeMessage(msg, true);
  } catch {
    q.write(msg, plugin);
    return;
  }
  q.writeWire(wire, plugin);
}

/** The client's question back in the reply (first question replaced, or added when there is none). */
function restoreQuestion(msg: Message, q: Query): void {
  const orig = q.request.questions[0];
  if (!orig) return;
  const copy = { ...orig };
  if (!msg.questions || msg.questions.length === 0) msg.questions = [copy];
  else msg.questions[0] = copy;
}

/** Every record of the authority, answer and additional sections, the rules in reverse order. */
export function applyRules(msg: Message, rules: readonly ResponseRule[]): void {
  let any = false;
  for (const section of [msg.authorities, msg.answers, msg.additionals]) {
    if (!section) continue;
    for (const rr of section) {
      any = true;
      for (let i = rules.length - 1; i >= 0; i--) rules[i]!.record(msg, rr);
    }
  }
  if (!any) applyMessageLevel(msg, rules);
}

function applyMessageLevel(msg: Message, rules: readonly ResponseRule[]): void {
  for (let i = rules.length - 1; i >= 0; i--) rules[i]!.message?.(msg);
}
