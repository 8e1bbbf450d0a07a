/**
 * `view NAME { expr EXPRESSION ... }` (CoreDNS 1.15.0 plugin/view/setup.go): once per server
 * block (the core rejects a second, as plugin.ErrOnce), one name, any number of `expr` lines, each compiled when the Corefile is loaded in
 * CoreDNS's expression environment (no `group`: that is template's).
 */
import { directive, option, parseOccurrence, str } from '../../src/corefile/options.js';
import type { Dispenser } from '../../src/corefile/dispenser.js';
import { BareSetupError } from '../../src/corefile/types.js';
import { ExprCompileError } from '../../src/expr/errors.js';
import { Expression } from '../../src/expr/expression.js';

export const VIEW_OPTIONS = directive('view', {
  args: { args: [str('NAME')] },
  options: [
    option('expr', {
      rest: str('EXPRESSION'),
      min: 0,
      repeat: 'all',
      summary: 'the block takes a query only when every expression is true for it',
    }),
  ],
});

export interface ViewConfig {
  readonly name: string;
  readonly exprs: readonly Expression[];
}

const NO_VARS: ReadonlySet<string> = new Set();
/** CoreDNS's expression.DefaultEnv has no `group` (template adds it for its own expressions). */
const ABSENT: ReadonlySet<string> = new Set(['group']);

/** expr-lang's error text: the message, then the source with a caret under the column. */
function exprErrorText(source: string, e: ExprCompileError): string {
  const m = /\(1:(\d+)\)$/.exec(e.message);
  const col = m ? Number(m[1]) : 1;
  return `${e.message}\n | ${source}\n | ${'.'.repeat(col - 1)}^`;
}

export function parseView(d: Dispenser): ViewConfig {
  d.next();
  const occ = parseOccurrence(d, VIEW_OPTIONS);
  const name = occ.directive.raw[0]!;
  const exprs: Expression[] = [];
  for (const o of occ.options) {
    // `expr` with nothing after it: expr-lang's error for an empty program.
    const source = o.raw.join(' ');
    try {
      exprs.push(Expression.compile(source, NO_VARS, ABSENT));
    } catch (e) {
      if (!(e instanceof ExprCompileError)) throw e;
      throw new BareSetupError(exprErrorText(source, e), o.token.file, o.token.line, 'view');
    }
  }
  return { name, exprs };
}
