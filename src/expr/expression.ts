/**
 * The expression language of the template plugin's `var` and `expr` options and of view's
 * expressions (expr-lang, as CoreDNS 1.15.0 uses it), the part Corefiles use: int, float, string, bool and nil literals, arrays;
 * `+ - * / % **`, comparisons, `&& || !` (and `and or not`), `in`/`not in`, `contains`,
 * `startsWith`, `endsWith`, `matches` (Go regexp), `?:` and `??`; indexing `a[i]`; the query
 * functions of CoreDNS's expression environment (`name()`, `type()`, `class()`, `proto()`,
 * `size()`, `client_ip()`, `port()`, `id()`, `opcode()`, `do()`, `bufsize()`, `server_ip()`,
 * `server_port()`, `incidr(ip, cidr)`, `metadata(label)`) and the template's `group(name|index)`;
 * the built-ins `len upper lower trim trimPrefix trimSuffix split join replace repeat indexOf
 * lastIndexOf hasPrefix hasSuffix int float string abs max min first last` and the predicate
 * built-ins `all any none one filter map count` whose second argument uses `#` for the element.
 *
 * Every name is resolved when the Corefile is loaded: an unknown name is an error, and an expr-lang
 * construct or built-in outside this list is an error that names it (never a different result at
 * query time). Values: ints are bigint, floats number (as in the template plugin's Go templates, so `.Var`
 * renders as Go prints them).
 */
import { evalNode } from './evaluate.js';
import { lex } from './lexer.js';
import { Parser } from './parser.js';
import type { Node } from './tree.js';
import type { ExprValue, Scope } from './values.js';

/** A compiled expression. */
export class Expression {
  private constructor(
    readonly source: string,
    private readonly root: Node,
  ) {}

  /**
   * Compile `source`; `vars` are the variables declared before it, `absent` the environment
   * functions the caller does not offer. Throws ExprCompileError.
   */
  static compile(source: string, vars: ReadonlySet<string>, absent?: ReadonlySet<string>): Expression {
    return new Expression(source, new Parser(lex(source), vars, absent).parseAll());
  }

  /** Evaluate; throws ExprRunError. */
  run(scope: Scope): ExprValue {
    return evalNode(this.root, scope, undefined);
  }
}
