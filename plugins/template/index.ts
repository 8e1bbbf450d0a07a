/**
 * The `template` directive (docs/plugins.md, template): answers built from Go templates for the
 * queries its regexes match. Every occurrence in a server block is one template, tried in order.
 */
import { isIP } from 'node:net';
import type { Handler, PluginDef } from '../../src/plugin.js';
import { selfLookup, type SelfLookupChains } from '../../src/server/selflookup.js';
import { TemplateHandler } from './handler.js';
import { parseTemplates, TEMPLATE_OPTIONS } from './setup.js';

export const template: PluginDef = {
  name: 'template',
  repeat: 'all',
  options: TEMPLATE_OPTIONS,
  setup(d, ctx) {
    const templates = parseTemplates(d, ctx.block.zones);
    const chains = ctx.shared<SelfLookupChains>('selflookup:chains', () => new Map());
    // CNAME targets are resolved through this server's own listener (CoreDNS's upstream.Lookup).
    const target = {
      host: (): string => ctx.block.bindAddresses.find((x) => isIP(x) !== 0 && x !== '0.0.0.0' && x !== '::') ?? '127.0.0.1',
      port: (): number => ctx.block.port,
    };
    return (next: Handler | null): Handler => new TemplateHandler(templates, next, (sub) => selfLookup(sub, target, chains));
  },
};
