/** The execution of a parsed Go template: Go's text/template exec, with its error wording. */
import { compare, parseUint, toInt } from './builtins.js';
import { TemplateExecError } from './errors.js';
import { fmtV, htmlEscape, jsEscape, sprint, sprintf } from './fmt.js';
import type { Arg, Cmd, Node, Pipe } from './tree.js';
import { EMPTY_VAR, GoObject, truth, typeOf, type GoValue } from './values.js';

class BreakSignal {}
class ContinueSignal {}

interface Scope {
  vars: { name: string; value: GoValue }[];
}

const NOFINAL: unique symbol = Symbol('nofinal');

/** Runs the parse trees of one template (named in its errors). */
export class Executor {
  constructor(private readonly name: string) {}

  /** Render `nodes` with `data` as dot and `$`. Throws TemplateExecError. */
  execute(nodes: Node[], data: GoValue): string {
    const out: string[] = [];
    const scope: Scope = { vars: [{ name: '$', value: data }] };
    this.walk(nodes, data, scope, out);
    return out.join('');
  }

  private err(msg: string, line?: number): TemplateExecError {
    return new TemplateExecError(`template: ${this.name}${line !== undefined ? `:${line}` : ''}: ${msg}`);
  }

  private walk(nodes: Node[], dot: GoValue, scope: Scope, out: string[]): void {
    for (const n of nodes) {
      switch (n.t) {
        case 'text':
          out.push(n.text);
          break;
        case 'action': {
          const v = this.evalPipe(n.pipe, dot, scope);
          if (n.pipe.decl.length === 0) out.push(this.printValue(v, n.pipe.line));
          break;
        }
        case 'if':
        case 'with': {
          const mark = scope.vars.length;
          const v = this.evalPipe(n.pipe, dot, scope);
          if (truth(v)) this.walk(n.list, n.t === 'with' ? v : dot, scope, out);
          else if (n.elseList) {
            scope.vars.length = n.t === 'with' ? mark : scope.vars.length;
            this.walk(n.elseList, dot, scope, out);
          }
          scope.vars.length = mark;
          break;
        }
        case 'range':
          this.range(n, dot, scope, out);
          break;
        case 'break':
          throw new BreakSignal();
        case 'continue':
          throw new ContinueSignal();
      }
    }
  }

  private range(n: Extract<Node, { t: 'range' }>, dot: GoValue, scope: Scope, out: string[]): void {
    const mark = scope.vars.length;
    const p: Pipe = { ...n.pipe, decl: [] };
    const v = this.evalPipe(p, dot, scope);
    const items: [GoValue, GoValue][] = [];
    if (Array.isArray(v)) (v as GoValue[]).forEach((e, i) => items.push([BigInt(i), e]));
    else if (v instanceof Map) for (const k of [...v.keys()].sort()) items.push([k, v.get(k)]);
    else if (typeof v === 'bigint') for (let i = 0n; i < v; i++) items.push([i, i]);
    else if (v === null || v === undefined) {
      /* nothing */
    } else throw this.err(`range can't iterate over ${fmtV(v)}`, n.pipe.line);
    if (items.length === 0) {
      if (n.elseList) this.walk(n.elseList, dot, scope, out);
      scope.vars.length = mark;
      return;
    }
    for (const [k, e] of items) {
      const d = n.pipe.decl;
      if (n.pipe.assign) {
        if (d.length === 1) this.setVar(scope, d[0]!, e);
        else if (d.length === 2) {
          this.setVar(scope, d[0]!, k);
          this.setVar(scope, d[1]!, e);
        }
      } else if (d.length === 1) scope.vars.push({ name: d[0]!, value: e });
      else if (d.length === 2) scope.vars.push({ name: d[0]!, value: k }, { name: d[1]!, value: e });
      const inner = scope.vars.length;
      try {
        this.walk(n.list, e, scope, out);
      } catch (sig) {
        if (sig instanceof BreakSignal) {
          scope.vars.length = mark;
          return;
        }
        if (!(sig instanceof ContinueSignal)) throw sig;
      }
      scope.vars.length = inner;
      scope.vars.length = mark;
    }
    scope.vars.length = mark;
  }

  private setVar(scope: Scope, name: string, value: GoValue): void {
    for (let i = scope.vars.length - 1; i >= 0; i--) {
      if (scope.vars[i]!.name === name) {
        scope.vars[i]!.value = value;
        return;
      }
    }
    throw this.err(`undefined variable: ${name}`);
  }

  private getVar(scope: Scope, name: string): GoValue {
    for (let i = scope.vars.length - 1; i >= 0; i--) if (scope.vars[i]!.name === name) return scope.vars[i]!.value;
    throw this.err(`undefined variable: ${name}`);
  }

  private evalPipe(p: Pipe, dot: GoValue, scope: Scope): GoValue {
    let v: GoValue | typeof NOFINAL = NOFINAL;
    for (const c of p.cmds) v = this.evalCmd(c, dot, scope, v, p.line);
    const value = v === NOFINAL ? undefined : v;
    if (p.decl.length > 0) {
      if (p.assign) this.setVar(scope, p.decl[0]!, value);
      else scope.vars.push({ name: p.decl[0]!, value });
    }
    return value;
  }

  private evalCmd(c: Cmd, dot: GoValue, scope: Scope, final: GoValue | typeof NOFINAL, line: number): GoValue {
    const head = c.args[0]!;
    const rest = c.args.slice(1);
    const argVals = (): GoValue[] => {
      const vals = rest.map((a) => this.evalArg(a, dot, scope, line));
      if (final !== NOFINAL) vals.push(final);
      return vals;
    };
    switch (head.t) {
      case 'ident':
        return this.callFunc(
          head.name,
          head.name === 'and' || head.name === 'or' ? null : argVals(),
          rest,
          dot,
          scope,
          final,
          line,
        );
      case 'field': {
        return this.fieldChain(dot, head.path, argVals(), line);
      }
      case 'var':
        if (head.path.length > 0) return this.fieldChain(this.getVar(scope, head.name), head.path, argVals(), line);
        break;
      case 'pipe':
        if (head.path.length > 0)
          return this.fieldChain(this.evalPipe(head.pipe, dot, scope), head.path, argVals(), line);
        break;
      default:
        break;
    }
    if (rest.length > 0 || final !== NOFINAL)
      throw this.err(`can't give argument to non-function ${describe(head)}`, line);
    return this.evalArg(head, dot, scope, line);
  }

  private evalArg(a: Arg, dot: GoValue, scope: Scope, line: number): GoValue {
    switch (a.t) {
      case 'const':
        return a.value;
      case 'dot':
        return dot;
      case 'field':
        return this.fieldChain(dot, a.path, [], line);
      case 'var': {
        const v = this.getVar(scope, a.name);
        return a.path.length > 0 ? this.fieldChain(v, a.path, [], line) : v;
      }
      case 'pipe': {
        const mark = scope.vars.length;
        const v = this.evalPipe(a.pipe, dot, scope);
        scope.vars.length = mark;
        return a.path.length > 0 ? this.fieldChain(v, a.path, [], line) : v;
      }
      case 'ident':
        // A function used as an argument is called with no arguments.
        return this.callFunc(a.name, [], [], dot, scope, NOFINAL, line);
    }
  }

  /** Evaluate `.A.B.C` on `recv`; `args` go to the last element (a method). */
  private fieldChain(recv: GoValue, path: readonly string[], args: GoValue[], line: number): GoValue {
    let v = recv;
    for (let i = 0; i < path.length; i++) {
      const name = path[i]!;
      const last = i === path.length - 1;
      const a = last ? args : [];
      if (v instanceof GoObject) {
        const m = v.methods[name];
        if (m) {
          v = m(a);
          continue;
        }
        const f = v.field(name);
        if (!f.found)
          throw this.err(
            `executing "${this.name}" at <.${path.slice(0, i + 1).join('.')}>: can't evaluate field ${name} in type ${v.typeName}`,
            line,
          );
        if (a.length > 0) throw this.err(`${name} has arguments but cannot be invoked as function`, line);
        v = f.value;
        continue;
      }
      if (v instanceof Map) {
        if (a.length > 0) throw this.err(`${name} is not a method but has arguments`, line);
        v = v.get(name);
        continue;
      }
      if (v === undefined || v === null) {
        if (v === null)
          throw this.err(
            `executing "${this.name}" at <.${path.slice(0, i + 1).join('.')}>: nil pointer evaluating ${name}`,
            line,
          );
        continue;
      }
      throw this.err(
        `executing "${this.name}" at <.${path.slice(0, i + 1).join('.')}>: can't evaluate field ${name} in type ${typeOf(v)}`,
        line,
      );
    }
    if (path.length === 0 && args.length > 0) throw this.err(`can't give argument to non-function`, line);
    return v;
  }

  private callFunc(
    name: string,
    vals: GoValue[] | null,
    rest: Arg[],
    dot: GoValue,
    scope: Scope,
    final: GoValue | typeof NOFINAL,
    line: number,
  ): GoValue {
    const fail = (m: string): TemplateExecError => this.err(`error calling ${name}: ${m}`, line);
    const want = (n: number): GoValue[] => {
      if (vals!.length !== n) throw this.err(`wrong number of args for ${name}: want ${n} got ${vals!.length}`, line);
      return vals!;
    };
    switch (name) {
      case 'and':
      case 'or': {
        // Short-circuit: evaluate arguments one by one.
        const n = rest.length + (final !== NOFINAL ? 1 : 0);
        if (n < 1) throw this.err(`wrong number of args for ${name}: want at least 1 got 0`, line);
        let v: GoValue = undefined;
        for (let i = 0; i < n; i++) {
          v = i < rest.length ? this.evalArg(rest[i]!, dot, scope, line) : (final as GoValue);
          if (name === 'and' ? !truth(v) : truth(v)) return v;
        }
        return v;
      }
      case 'not':
        return !truth(want(1)[0]);
      case 'len': {
        const [v] = want(1);
        if (typeof v === 'string') return BigInt(Buffer.byteLength(v));
        if (Array.isArray(v)) return BigInt(v.length);
        if (v instanceof Map) return BigInt(v.size);
        throw fail(`len of type ${typeOf(v)}`);
      }
      case 'index': {
        if (vals!.length < 1) throw this.err('wrong number of args for index: want at least 1 got 0', line);
        let v = vals![0];
        for (const ix of vals!.slice(1)) {
          if (Array.isArray(v)) {
            const i = toInt(ix, fail);
            if (i < 0 || i >= v.length) throw fail(`index out of range: ${i}`);
            v = (v as GoValue[])[i];
          } else if (typeof v === 'string') {
            const b = Buffer.from(v, 'utf8');
            const i = toInt(ix, fail);
            if (i < 0 || i >= b.length) throw fail(`index out of range: ${i}`);
            v = BigInt(b[i]!);
          } else if (v instanceof Map) {
            if (typeof ix !== 'string') throw fail(`value has type ${typeOf(ix)}; should be string`);
            v = v.has(ix) ? v.get(ix) : v === EMPTY_VAR ? null : '';
          } else if (v === null || v === undefined) {
            throw fail('index of untyped nil');
          } else throw fail(`can't index item of type ${typeOf(v)}`);
        }
        return v;
      }
      case 'slice': {
        if (vals!.length < 1) throw this.err('wrong number of args for slice: want at least 1 got 0', line);
        const [v, ...ix] = vals!;
        if (ix.length > 2) throw fail('too many slice indexes: ' + ix.length);
        if (typeof v === 'string') {
          const b = Buffer.from(v, 'utf8');
          const lo = ix.length > 0 ? toInt(ix[0], fail) : 0;
          const hi = ix.length > 1 ? toInt(ix[1], fail) : b.length;
          if (lo < 0 || hi < lo || hi > b.length) throw fail(`index out of range: ${hi > b.length ? hi : lo}`);
          return b.subarray(lo, hi).toString('utf8');
        }
        if (Array.isArray(v)) {
          const lo = ix.length > 0 ? toInt(ix[0], fail) : 0;
          const hi = ix.length > 1 ? toInt(ix[1], fail) : v.length;
          if (lo < 0 || hi < lo || hi > v.length) throw fail(`index out of range: ${hi > v.length ? hi : lo}`);
          return v.slice(lo, hi);
        }
        throw fail(`can't slice item of type ${typeOf(v)}`);
      }
      case 'print':
        return sprint(vals!, this.printer(line));
      case 'println':
        return vals!.map(this.printer(line)).join(' ') + '\n';
      case 'printf': {
        if (vals!.length < 1) throw this.err('wrong number of args for printf: want at least 1 got 0', line);
        const [f, ...a] = vals!;
        if (typeof f !== 'string') throw this.err(`wrong type for value; expected string; got ${typeOf(f)}`, line);
        return sprintf(f, a, this.printer(line));
      }
      case 'js':
        return jsEscape(sprint(vals!, this.printer(line)));
      case 'html':
        return htmlEscape(sprint(vals!, this.printer(line)));
      case 'urlquery':
        return encodeURIComponent(sprint(vals!, this.printer(line)))
          .replace(/%20/g, '+')
          .replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
      case 'eq': {
        if (vals!.length < 2) throw this.err(`wrong number of args for eq: want at least 2 got ${vals!.length}`, line);
        const [a, ...bs] = vals!;
        for (const b of bs) if (compare(a, b, fail, true) === 0) return true;
        return false;
      }
      case 'ne': {
        const [a, b] = want(2);
        return compare(a, b, fail, true) !== 0;
      }
      case 'lt':
      case 'le':
      case 'gt':
      case 'ge': {
        const [a, b] = want(2);
        const c = compare(a, b, fail, false);
        return name === 'lt' ? c < 0 : name === 'le' ? c <= 0 : name === 'gt' ? c > 0 : c >= 0;
      }
      case 'parseInt': {
        const [s, base, bits] = want(3);
        if (typeof s !== 'string') throw this.err(`wrong type for value; expected string; got ${typeOf(s)}`, line);
        const b = toInt(base, (m) => this.err(m, line));
        const bs = toInt(bits, (m) => this.err(m, line));
        return parseUint(s, b, bs, fail);
      }
    }
    throw this.err(`function "${name}" not defined`, line);
  }

  private printer(line: number): (v: GoValue) => string {
    return (v) => this.printValue(v, line);
  }

  private printValue(v: GoValue, line: number): string {
    try {
      return fmtV(v);
    } catch (e) {
      throw this.err((e as Error).message, line);
    }
  }
}

/** An argument as Go names it in an error (`"x"`, `.`, `field`). */
function describe(a: Arg): string {
  switch (a.t) {
    case 'const':
      return typeof a.value === 'string' ? JSON.stringify(a.value) : String(a.value);
    case 'dot':
      return '.';
    default:
      return a.t;
  }
}
