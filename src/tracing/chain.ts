/**
 * Child spans per plugin (docs/plugins.md, trace): CoreDNS's `plugin.NextOrFailure` starts a span
 * named after the next plugin whenever the query carries one, so a traced query shows the chain as
 * nested spans (`servedns` → `cache` → `forward` → `connect`). Here the core puts a
 * `SpanningHandler` in front of each handler below *trace* when it builds a block's chain
 * (src/server/instance.ts) — only in blocks that have *trace*, so other blocks run the chain they
 * always ran. An untraced query in such a block costs one null check per plugin.
 */
import { capability } from '../capabilities.js';
import type { Handler, Rcode } from '../plugin.js';
import type { Query } from '../query.js';

/**
 * Offered by *trace*: the block's chain gets a span per plugin from the directive named by the
 * value (the offering plugin's own) down.
 */
export const CHAIN_SPANS = capability<string>('trace.chainspans');

export class SpanningHandler implements Handler {
  readonly name: string;
  constructor(readonly inner: Handler) {
    this.name = inner.name;
  }

  serve(q: Query): Rcode | Promise<Rcode> {
    const parent = q.span;
    if (parent === null) return this.inner.serve(q);
    const child = parent.child(this.name);
    q.span = child;
    let r: Rcode | Promise<Rcode>;
    try {
      r = this.inner.serve(q);
    } catch (e) {
      child.finish();
      q.span = parent;
      throw e;
    }
    if (typeof r === 'number') {
      child.finish();
      q.span = parent;
      return r;
    }
    return r.then(
      (rc) => {
        child.finish();
        q.span = parent;
        return rc;
      },
      (e: unknown) => {
        child.finish();
        q.span = parent;
        throw e;
      },
    );
  }
}

/** The handler itself, without the span wrapper the core may have put in front of it. */
export function untraced(h: Handler | null): Handler | null {
  return h instanceof SpanningHandler ? h.inner : h;
}
