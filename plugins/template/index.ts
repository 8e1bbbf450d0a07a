/**
 * The `template` directive (docs/plugins.md, template): answers built from Go templates for the
 * queries its regexes match. Every occurrence in a server block is one template, tried in order.
 */
import type { Handler, PluginDef } from '../../src/plugin.js';
import { TemplateHandler } from './handler.js';
import { parseTemplates, TEMPLATE_OPTIONS } from './setup.js';

export const template: PluginDef = {
  name: 'template',
  repeat: 'all',
  options: TEMPLATE_OPTIONS,
  setup(d, ctx) {
    const templates = parseTemplates(d, ctx.block.zones);
    // CNAME targets are resolved through the whole server (CoreDNS's upstream.Lookup).
    const lookups = ctx.selfLookup;
    return (next: Handler | null, block): Handler =>
      new TemplateHandler(templates, next, (sub) => lookups.lookup(sub), block.view ?? '');
  },
};
