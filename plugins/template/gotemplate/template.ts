/**
 * Go `text/template`, the part the template plugin's records are written in (docs/plugins.md,
 * template): text and actions with `{{-`/`-}}` trim markers and comments; pipelines with `|`;
 * fields and chained fields (`.Group.a`, `$.Name`, `(index .Match 1)`), methods with arguments
 * (`.Meta "x"`); variables (`$`, `$x := …`, `$x = …`); string, raw string, character, number,
 * boolean and `nil` constants; `if`/`else if`/`else`, `with`/`else with`, `range` (slices, maps in
 * key order, integers) with `else`, `break` and `continue`; and the functions `and`, `or`, `not`,
 * `len`, `index`, `slice`, `print`, `printf`, `println`, `html`, `urlquery`, `eq`, `ne`, `lt`,
 * `le`, `gt`, `ge`, plus the plugin's `parseInt` (Go strconv.ParseUint).
 *
 * Everything else of the language — `define`, `template`, `block`, `call`, `js` and functions
 * that do not exist — is rejected when the template is compiled, with an error that names it, so
 * a Corefile never silently renders something other than what CoreDNS would. Errors while
 * executing (a field that does not exist, an index out of range, parseInt of a non-number) throw
 * `TemplateExecError` as Go's Execute returns an error.
 */
import { TemplateParseError } from './errors.js';
import { Executor } from './execute.js';
import { lex } from './lexer.js';
import { Parser } from './parser.js';
import { listString, type Arg, type Node, type Pipe } from './tree.js';
import type { GoValue } from './values.js';

/** A compiled template. */
export class GoTemplate {
  /** Runs the tree; made once here, not per execution. */
  private readonly executor: Executor;

  private constructor(
    readonly name: string,
    readonly source: string,
    private readonly nodes: Node[],
  ) {
    this.executor = new Executor(name);
  }

  /** Compile `source`; throws TemplateParseError naming the problem. */
  static parse(name: string, source: string): GoTemplate {
    const items = lex(name, source);
    const p = new Parser(name, items);
    const { nodes } = p.list([], false);
    const t = new GoTemplate(name, source, nodes);
    t.checkVars(nodes, ['$']);
    return t;
  }

  /** Every `$var` must be declared before use (a parse error in Go). */
  private checkVars(nodes: Node[], known: string[]): void {
    const checkPipe = (p: Pipe, scope: string[]): void => {
      line = p.line;
      for (const c of p.cmds) for (const a of c.args) checkArg(a, scope);
      if (p.assign)
        for (const d of p.decl)
          if (!scope.includes(d))
            throw new TemplateParseError(`template: ${this.name}:${p.line}: undefined variable "${d}"`);
    };
    const checkArg = (a: Arg, scope: string[]): void => {
      if (a.t === 'var' && !scope.includes(a.name))
        throw new TemplateParseError(`template: ${this.name}:${line}: undefined variable "${a.name}"`);
      if (a.t === 'pipe') checkPipe(a.pipe, scope);
    };
    let line = 1;
    const walk = (list: Node[], scope: string[]): void => {
      for (const n of list) {
        if (n.t === 'action') {
          checkPipe(n.pipe, scope);
          if (!n.pipe.assign) scope.push(...n.pipe.decl);
        } else if (n.t === 'if' || n.t === 'with' || n.t === 'range') {
          checkPipe(n.pipe, scope);
          const inner = [...scope, ...(n.pipe.assign ? [] : n.pipe.decl)];
          walk(n.list, inner);
          if (n.elseList) walk(n.elseList, [...scope, ...(n.t === 'range' ? [] : n.pipe.assign ? [] : n.pipe.decl)]);
        }
      }
    };
    walk(nodes, [...known]);
  }

  /** The field paths rooted at the data (`.A.B` at top level, `$.A.B`), for static checks. */
  rootFieldPaths(): string[][] {
    const out: string[][] = [];
    const fromArg = (a: Arg, dotIsRoot: boolean): void => {
      if (a.t === 'field' && dotIsRoot) out.push(a.path);
      if (a.t === 'var' && a.name === '$' && a.path.length > 0) out.push(a.path);
      if (a.t === 'pipe') fromPipe(a.pipe, dotIsRoot);
    };
    const fromPipe = (p: Pipe, dotIsRoot: boolean): void => {
      for (const c of p.cmds) for (const a of c.args) fromArg(a, dotIsRoot);
    };
    const walk = (list: Node[], dotIsRoot: boolean): void => {
      for (const n of list) {
        if (n.t === 'action') fromPipe(n.pipe, dotIsRoot);
        else if (n.t === 'if') {
          fromPipe(n.pipe, dotIsRoot);
          walk(n.list, dotIsRoot);
          if (n.elseList) walk(n.elseList, dotIsRoot);
        } else if (n.t === 'with' || n.t === 'range') {
          fromPipe(n.pipe, dotIsRoot);
          walk(n.list, false);
          if (n.elseList) walk(n.elseList, n.t === 'range' ? dotIsRoot : false);
        }
      }
    };
    walk(this.nodes, true);
    return out;
  }

  /**
   * The parse tree printed back as Go's `Tree.Root.String()` does (CoreDNS uses it as the
   * `template` label of its failure metrics): actions without inner blanks, trim markers and
   * comments gone, `else if` as a nested `{{if}}`.
   */
  treeString(): string {
    return listString(this.nodes);
  }

  /** Render with `data` as dot and `$`. Throws TemplateExecError. */
  execute(data: GoValue): string {
    return this.executor.execute(this.nodes, data);
  }
}
