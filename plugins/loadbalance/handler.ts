/**
 * The loadbalance handler: post-processes NOERROR replies written by the plugins below it
 * (cache hits included), except zone transfers.
 */
import type { Answer } from 'dns-packet';
import { Qtype, Rcode } from '../../src/dns/constants.js';
import { canonicalIP } from '../../src/dns/name.js';
import { nextOrFailure, type Handler } from '../../src/plugin.js';
import type { Query } from '../../src/query.js';
import type { LoadbalanceConfig } from './setup.js';
import { shuffleMessage, shuffleWire } from './shuffle.js';
import type { WeightFile } from './weights.js';

export class LoadbalanceHandler implements Handler {
  readonly name = 'loadbalance';

  constructor(
    readonly cfg: LoadbalanceConfig,
    readonly next: Handler | null,
    readonly weights: WeightFile | null = null,
  ) {}

  serve(q: Query): number | Promise<number> {
    const before = q.reply;
    const r = nextOrFailure(this.name, this.next, q);
    if (typeof r === 'number') {
      this.apply(q, before);
      return r;
    }
    return r.then((rc) => {
      this.apply(q, before);
      return rc;
    });
  }

  private apply(q: Query, before: Query['reply']): void {
    const reply = q.reply;
    if (!reply || reply === before || reply.rcode !== Rcode.NOERROR) return;
    if (q.qtype === Qtype.AXFR || q.qtype === Qtype.IXFR) return;
    if (this.cfg.policy === 'weighted') {
      this.weighted(q);
      return;
    }
    // In place: `mutableWire()` copies only bytes their writer keeps (docs/ARCHITECTURE.md).
    if (reply.isWire && shuffleWire(reply.mutableWire(), this.cfg.prefer)) return;
    shuffleMessage(reply.message(), this.cfg.prefer);
  }

  /** weighted: pick the first A/AAAA record by weight for the query name and move it to the front. */
  private weighted(q: Query): void {
    const msg = q.reply!.message();
    const table = this.weights?.weights.get(q.lname);
    const idx: number[] = [];
    msg.answers.forEach((r, i) => {
      if (r.type === 'A' || r.type === 'AAAA') idx.push(i);
    });
    if (idx.length < 2) return;
    const weightOf = (r: Answer): number => table?.get(canonicalIP(String((r as { data: unknown }).data)) ?? '') ?? 1;
    const weights = idx.map((i) => weightOf(msg.answers[i]!));
    const total = weights.reduce((s, w) => s + w, 0);
    let pick = Math.random() * total;
    let chosen = 0;
    for (let k = 0; k < weights.length; k++) {
      pick -= weights[k]!;
      if (pick < 0) {
        chosen = k;
        break;
      }
    }
    const addrs = idx.map((i) => msg.answers[i]!);
    const ordered = [addrs[chosen]!, ...addrs.filter((_, k) => k !== chosen)];
    idx.forEach((i, k) => {
      msg.answers[i] = ordered[k]!;
    });
  }
}
