/**
 * The view's filter (CoreDNS 1.15.0 plugin/view/view.go Filter): every expression must evaluate
 * to boolean true; an error or any other value means the block does not take the query. In the
 * chain the plugin only passes the query on: the choice was made before the chain ran.
 */
import { ExprRunError } from '../../src/expr/errors.js';
import { exprQuery } from '../../src/expr/query.js';
import type { MetadataCollector } from '../../src/metadata.js';
import { nextOrFailure, type Handler } from '../../src/plugin.js';
import type { Query } from '../../src/query.js';
import type { ViewFilter } from '../../src/view.js';
import type { ViewConfig } from './setup.js';

export class ViewRule implements ViewFilter {
  /** The block's metadata plugin, set at startup: its labels are collected before filtering. */
  collector: MetadataCollector | null = null;

  constructor(private readonly cfg: ViewConfig) {}

  get name(): string {
    return this.cfg.name;
  }

  pass(q: Query): boolean {
    this.collector?.collect(q);
    const scope = { q: exprQuery(q), vars: new Map() };
    for (const e of this.cfg.exprs) {
      try {
        if (e.run(scope) !== true) return false;
      } catch (err) {
        if (err instanceof ExprRunError) return false;
        throw err;
      }
    }
    return true;
  }
}

export class ViewHandler implements Handler {
  readonly name = 'view';
  constructor(private readonly next: Handler | null) {}

  serve(q: Query): number | Promise<number> {
    return nextOrFailure(this.name, this.next, q);
  }
}
