/** The expr-lang parser: precedence climbing with expr-lang's operator table; names checked at compile time. */
import { compileRe2, Re2Error } from '../util/re2.js';
import { ExprCompileError } from './errors.js';
import type { Tok } from './lexer.js';
import { BUILTINS, ENV_FUNCS, EXPR_RESERVED, PREDICATES } from './names.js';
import type { Node } from './tree.js';
import type { ExprValue } from './values.js';

const BINARY: Readonly<Record<string, [number, 'l' | 'r']>> = {
  '??': [1, 'l'],
  or: [10, 'l'],
  '||': [10, 'l'],
  and: [15, 'l'],
  '&&': [15, 'l'],
  '==': [20, 'l'],
  '!=': [20, 'l'],
  '<': [20, 'l'],
  '>': [20, 'l'],
  '<=': [20, 'l'],
  '>=': [20, 'l'],
  in: [20, 'l'],
  matches: [20, 'l'],
  contains: [20, 'l'],
  startsWith: [20, 'l'],
  endsWith: [20, 'l'],
  '+': [30, 'l'],
  '-': [30, 'l'],
  '*': [60, 'l'],
  '/': [60, 'l'],
  '%': [60, 'l'],
  '**': [100, 'r'],
};

export class Parser {
  private p = 0;
  constructor(
    private readonly toks: Tok[],
    private readonly vars: ReadonlySet<string>,
    /** Functions of ENV_FUNCS this expression's environment lacks (view has no `group`). */
    private readonly absent: ReadonlySet<string> = new Set(),
  ) {}

  private peek(): Tok {
    return this.toks[this.p]!;
  }
  private next(): Tok {
    return this.toks[this.p++]!;
  }
  private err(msg: string, t: Tok = this.peek()): ExprCompileError {
    return new ExprCompileError(`${msg} (1:${t.pos + 1})`);
  }
  private expect(v: string): void {
    const t = this.next();
    if (t.t !== 'op' || t.v !== v)
      throw this.err(
        `unexpected token ${t.t === 'eof' ? 'EOF' : JSON.stringify(t.v)}, expected ${JSON.stringify(v)}`,
        t,
      );
  }

  parseAll(): Node {
    const n = this.expr(0, false);
    const t = this.peek();
    if (t.t !== 'eof') throw this.err(`unexpected token ${JSON.stringify(t.v)}`, t);
    return n;
  }

  private binOp(): string | null {
    const t = this.peek();
    if (t.t === 'op' && BINARY[t.v]) return t.v;
    if (t.t === 'id' && BINARY[t.v]) return t.v;
    if (t.t === 'id' && t.v === 'not' && this.toks[this.p + 1]?.t === 'id' && this.toks[this.p + 1]!.v === 'in')
      return 'not in';
    return null;
  }

  expr(minPrec: number, inPredicate: boolean): Node {
    let left = this.unary(inPredicate);
    for (;;) {
      const op = this.binOp();
      if (op === null) break;
      const [prec, assoc] = op === 'not in' ? ([20, 'l'] as const) : BINARY[op]!;
      if (prec < minPrec) break;
      this.p += op === 'not in' ? 2 : 1;
      const right = this.expr(assoc === 'l' ? prec + 1 : prec, inPredicate);
      if (op === 'matches' && right.k === 'lit' && typeof right.v === 'string') {
        try {
          left = { k: 'bin', op, l: left, r: right, re: compileRe2(right.v).re };
        } catch (e) {
          throw this.err(e instanceof Re2Error ? `error parsing regexp: ${e.message}` : String(e));
        }
        continue;
      }
      left =
        op === 'not in'
          ? { k: 'un', op: '!', x: { k: 'bin', op: 'in', l: left, r: right } }
          : { k: 'bin', op, l: left, r: right };
    }
    if (minPrec === 0 && this.peek().t === 'op' && this.peek().v === '?') {
      this.next();
      const a = this.expr(0, inPredicate);
      this.expect(':');
      const b = this.expr(0, inPredicate);
      return { k: 'cond', c: left, a, b };
    }
    return left;
  }

  private unary(inPredicate: boolean): Node {
    const t = this.peek();
    if ((t.t === 'op' && (t.v === '!' || t.v === '-' || t.v === '+')) || (t.t === 'id' && t.v === 'not')) {
      this.next();
      const x = this.unary(inPredicate);
      return { k: 'un', op: t.v === 'not' ? '!' : t.v, x };
    }
    return this.postfix(this.primary(inPredicate), inPredicate);
  }

  private postfix(n: Node, inPredicate: boolean): Node {
    for (;;) {
      const t = this.peek();
      if (t.t === 'op' && t.v === '[') {
        this.next();
        if (this.peek().t === 'op' && this.peek().v === ':')
          throw this.err('slices (a[i:j]) are not supported by clusterdns');
        const i = this.expr(0, inPredicate);
        if (this.peek().t === 'op' && this.peek().v === ':')
          throw this.err('slices (a[i:j]) are not supported by clusterdns');
        this.expect(']');
        n = { k: 'index', x: n, i };
        continue;
      }
      if (t.t === 'op' && (t.v === '.' || t.v === '?.')) throw this.err('member access is not supported by clusterdns');
      if (t.t === 'op' && t.v === '|') throw this.err('the pipe operator is not supported by clusterdns');
      if (t.t === 'op' && t.v === '..') throw this.err('ranges (a..b) are not supported by clusterdns');
      return n;
    }
  }

  private primary(inPredicate: boolean): Node {
    const t = this.next();
    if (t.t === 'num') return { k: 'lit', v: numberLiteral(t.v) };
    if (t.t === 'str') return { k: 'lit', v: t.v };
    if (t.t === 'op' && t.v === '(') {
      const n = this.expr(0, inPredicate);
      this.expect(')');
      return n;
    }
    if (t.t === 'op' && t.v === '[') {
      const items: Node[] = [];
      while (!(this.peek().t === 'op' && this.peek().v === ']')) {
        items.push(this.expr(0, inPredicate));
        if (this.peek().t === 'op' && this.peek().v === ',') this.next();
        else break;
      }
      this.expect(']');
      return { k: 'arr', items };
    }
    if (t.t === 'op' && t.v === '#') {
      if (!inPredicate) throw this.err('# outside of a predicate', t);
      return { k: 'elem' };
    }
    if (t.t === 'op' && t.v === '{') throw this.err('map literals are not supported by clusterdns', t);
    if (t.t === 'id') {
      if (t.v === 'true' || t.v === 'false') return { k: 'lit', v: t.v === 'true' };
      if (t.v === 'nil') return { k: 'lit', v: null };
      if (t.v === 'let') throw this.err('let is not supported by clusterdns', t);
      const isCall = this.peek().t === 'op' && this.peek().v === '(';
      if (!isCall) {
        if (this.vars.has(t.v)) return { k: 'var', name: t.v };
        throw this.err(`unknown name ${t.v}`, t);
      }
      if (this.absent.has(t.v)) throw this.err(`unknown name ${t.v}`, t);
      if (ENV_FUNCS[t.v] === undefined && !BUILTINS[t.v]) {
        if (EXPR_RESERVED.has(t.v)) throw this.err(`the built-in ${t.v}() is not supported by clusterdns`, t);
        throw this.err(`unknown func ${t.v}`, t);
      }
      this.next();
      const pred = PREDICATES.has(t.v);
      const args: Node[] = [];
      while (!(this.peek().t === 'op' && this.peek().v === ')')) {
        const predicateArg = pred && args.length === 1;
        if (predicateArg && this.peek().t === 'op' && this.peek().v === '{') {
          this.next();
          args.push(this.expr(0, true));
          this.expect('}');
        } else args.push(this.expr(0, predicateArg || inPredicate));
        if (this.peek().t === 'op' && this.peek().v === ',') this.next();
        else break;
      }
      this.expect(')');
      const envArity = ENV_FUNCS[t.v];
      if (envArity !== undefined) {
        if (args.length !== envArity) throw this.err(`not enough arguments to call ${t.v}`, t);
        return { k: 'call', fn: t.v, args };
      }
      const b = BUILTINS[t.v];
      if (b) {
        if (args.length < b[0] || args.length > b[1])
          throw this.err(
            `invalid number of arguments for ${t.v} (expected ${b[0]}${b[1] !== b[0] ? `..${b[1]}` : ''}, got ${args.length})`,
            t,
          );
        return { k: 'call', fn: t.v, args };
      }
      if (EXPR_RESERVED.has(t.v)) throw this.err(`the built-in ${t.v}() is not supported by clusterdns`, t);
      throw this.err(`unknown func ${t.v}`, t);
    }
    throw this.err(`unexpected token ${t.t === 'eof' ? 'EOF' : JSON.stringify(t.v)}`, t);
  }
}

function numberLiteral(text: string): ExprValue {
  const s = text.replace(/_/g, '');
  if (/^0[xXoObB]/.test(s)) return BigInt(s.toLowerCase());
  if (/^[0-9]+$/.test(s)) return BigInt(s);
  return Number(s);
}
