/**
 * view: routes a query to this server block only when the view's expressions hold for it, so
 * blocks serving the same zone and port are told apart by their views (docs/plugins.md, view;
 * CoreDNS 1.15.0 plugin/view). The core routes through the VIEW capability (src/view.ts); the
 * view's name becomes the block's `view` metric label and, with *metadata*, the `view/name` label.
 */
import { METADATA_COLLECTOR } from '../../src/metadata.js';
import type { PluginDef } from '../../src/plugin.js';
import { VIEW } from '../../src/view.js';
import { ViewHandler, ViewRule } from './handler.js';
import { parseView, VIEW_OPTIONS } from './setup.js';

export { VIEW_OPTIONS };

export const view: PluginDef = {
  name: 'view',
  repeat: 'error',
  options: VIEW_OPTIONS,
  setup(d, ctx) {
    const rule = new ViewRule(parseView(d));
    ctx.provide(VIEW, rule);
    ctx.onStartup(() => {
      const collector = ctx.lookup(METADATA_COLLECTOR) ?? null;
      rule.collector = collector;
      collector?.addProvider((_q, meta) => void meta.set('view/name', rule.name));
    });
    return (next) => new ViewHandler(next);
  },
};
