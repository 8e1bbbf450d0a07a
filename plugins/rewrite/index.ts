/**
 * The `rewrite` directive (docs/plugins.md, rewrite): rules that rewrite the request before the
 * rest of the chain sees it, and the reply on its way back.
 *
 * A rule is one stream of tokens: the directive line's arguments, or — when the line has fewer than
 * two — every token of the block after it, flattened (CoreDNS reads a block token by token, so
 * `rewrite stop {` + `name regex …` + `answer name …` is one rule). The declaration below lists the
 * words a block line starts with, for the README check; the rule itself is parsed by `newRule`
 * with CoreDNS's error texts, since a rule's arguments only make sense together.
 */
import { ConfigError, type Token } from '../../src/corefile/types.js';
import { directive, option, str } from '../../src/corefile/options.js';
import type { Handler, PluginDef } from '../../src/plugin.js';
import { RewriteHandler } from './handler.js';
import { newRule } from './rules/newrule.js';
import { RuleError, type Rule } from './rules/rule.js';
import type { Dispenser } from '../../src/corefile/dispenser.js';

const RULE_ARGS = { rest: str('ARG'), min: 0 } as const;

export const REWRITE_OPTIONS = directive('rewrite', {
  args: { rest: str('ARG'), min: 0 },
  options: [
    option('name', {
      ...RULE_ARGS,
      repeat: 'all',
      summary: '[exact|prefix|suffix|substring|regex] FROM TO [metadata] [answer …]',
    }),
    option('answer', {
      ...RULE_ARGS,
      repeat: 'all',
      summary: 'auto | name FROM TO | value FROM TO (after a name rule)',
    }),
    option('type', { ...RULE_ARGS, repeat: 'all', summary: 'FROM TO' }),
    option('class', { ...RULE_ARGS, repeat: 'all', summary: 'FROM TO' }),
    option('edns0', { ...RULE_ARGS, repeat: 'all', summary: 'local|nsid|subnet set|append|replace|unset …' }),
    option('ttl', { ...RULE_ARGS, repeat: 'all', summary: '[MATCH] NAME SECONDS|MIN-MAX' }),
    option('rcode', { ...RULE_ARGS, repeat: 'all', summary: '[MATCH] NAME FROM TO' }),
    option('cname', { ...RULE_ARGS, repeat: 'all', summary: '[MATCH] FROM TO' }),
  ],
});

/** Every rule of every `rewrite` occurrence of the block, in order (CoreDNS's rewriteParse). */
export function parseRewrite(d: Dispenser): Rule[] {
  const rules: Rule[] = [];
  while (d.next()) {
    const keyword = d.token()!;
    const tokens: Token[] = d.remainingArgTokens();
    const onLine = tokens.length;
    if (onLine < 2) {
      while (d.nextBlock()) tokens.push(d.token()!);
    }
    // Errors point at the rule's first line: the block's first line for a block rule.
    const at = tokens[onLine] ?? tokens[0] ?? keyword;
    try {
      rules.push(newRule(tokens.map((t) => t.text)));
    } catch (e) {
      if (e instanceof RuleError) throw new ConfigError(e.message, at.file, at.line, 'rewrite');
      throw e;
    }
  }
  return rules;
}

export const rewrite: PluginDef = {
  name: 'rewrite',
  repeat: 'all',
  options: REWRITE_OPTIONS,
  setup(d, ctx) {
    const rules = parseRewrite(d);
    return (next: Handler | null): Handler => new RewriteHandler(rules, next, ctx.selfLookup, ctx.log);
  },
};
