/**
 * The expression language of the template plugin's `var` and `expr` options (expr-lang, as CoreDNS
 * 1.15.0 uses it), the part Corefiles use: int, float, string, bool and nil literals, arrays;
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
 * query time). Values: ints are bigint, floats number (as in gotemplate/values.ts, so `.Var` renders as
 * Go prints them).
 */
import { isIP } from 'node:net';
import { compileRe2, Re2Error } from '../../src/util/re2.js';
import { fmtV } from './gotemplate/fmt.js';

export class ExprCompileError extends Error {}
export class ExprRunError extends Error {}

export type ExprValue = string | bigint | number | boolean | null | readonly ExprValue[];

/** What an expression can ask about the query. */
export interface ExprQuery {
  name(): string;
  type(): string;
  class(): string;
  proto(): string;
  size(): number;
  clientIP(): string;
  port(): string;
  id(): number;
  opcode(): number;
  do(): boolean;
  bufsize(): number;
  serverIP(): string;
  serverPort(): string;
  /** A metadata label's value ('' when absent or without the metadata plugin). */
  metadata(label: string): string;
  /** Capture group by name or number ('' when there is none). */
  group(key: string): string;
}

type Node =
  | { k: 'lit'; v: ExprValue }
  | { k: 'var'; name: string }
  | { k: 'elem' }
  | { k: 'call'; fn: string; args: Node[] }
  | { k: 'un'; op: string; x: Node }
  | { k: 'bin'; op: string; l: Node; r: Node; re?: RegExp }
  | { k: 'cond'; c: Node; a: Node; b: Node }
  | { k: 'arr'; items: Node[] }
  | { k: 'index'; x: Node; i: Node };

/** CoreDNS's expression environment (plugin/pkg/expression) plus the template's `group`. */
export const ENV_FUNCS: Readonly<Record<string, number>> = {
  incidr: 2, metadata: 1, type: 0, name: 0, class: 0, proto: 0, size: 0, client_ip: 0, port: 0, id: 0, opcode: 0, do: 0, bufsize: 0,
  server_ip: 0, server_port: 0, group: 1,
};

/** Built-ins implemented here: name → [min, max] arguments. */
const BUILTINS: Readonly<Record<string, [number, number]>> = {
  len: [1, 1], upper: [1, 1], lower: [1, 1], trim: [1, 2], trimPrefix: [2, 2], trimSuffix: [2, 2], split: [2, 3], join: [1, 2], replace: [3, 3],
  repeat: [2, 2], indexOf: [2, 2], lastIndexOf: [2, 2], hasPrefix: [2, 2], hasSuffix: [2, 2], int: [1, 1], float: [1, 1], string: [1, 1],
  abs: [1, 1], max: [1, Infinity], min: [1, Infinity], first: [1, 1], last: [1, 1],
  all: [2, 2], any: [2, 2], none: [2, 2], one: [2, 2], filter: [2, 2], map: [2, 2], count: [1, 2],
};
const PREDICATES = new Set(['all', 'any', 'none', 'one', 'filter', 'map', 'count']);

/** expr-lang's other built-ins and keywords: reserved as variable names, refused as not supported. */
export const EXPR_RESERVED = new Set([
  ...Object.keys(BUILTINS), 'find', 'findIndex', 'findLast', 'findLastIndex', 'sum', 'groupBy', 'sortBy', 'reduce', 'splitAfter', 'ceil', 'floor',
  'round', 'toJSON', 'fromJSON', 'toBase64', 'fromBase64', 'now', 'duration', 'date', 'timezone', 'get', 'take', 'keys', 'values', 'toPairs',
  'fromPairs', 'sort', 'bitand', 'bitor', 'bitxor', 'bitnand', 'bitnot', 'bitshl', 'bitshr', 'bitushr', 'concat', 'flatten', 'uniq', 'median',
  'mean', 'type', 'let', 'true', 'false', 'nil', 'in', 'not', 'and', 'or', 'matches', 'contains', 'startsWith', 'endsWith', 'if', 'else',
]);

// ---- Lexer -----------------------------------------------------------------------------------

interface Tok {
  t: 'num' | 'str' | 'id' | 'op' | 'eof';
  v: string;
  pos: number;
}

const OPS = ['**', '==', '!=', '<=', '>=', '&&', '||', '??', '..', '?.', '=', ';', '<', '>', '+', '-', '*', '/', '%', '!', '?', ':', '(', ')', '[', ']', '{', '}', ',', '.', '#', '|'];

function lex(src: string): Tok[] {
  const out: Tok[] = [];
  let i = 0;
  while (i < src.length) {
    const c = src[i]!;
    if (/\s/.test(c)) {
      i++;
      continue;
    }
    if (/[0-9]/.test(c)) {
      const m = /^(0[xX][0-9a-fA-F_]+|0[oO][0-7_]+|0[bB][01_]+|[0-9][0-9_]*(\.[0-9_]+)?([eE][+-]?[0-9]+)?)/.exec(src.slice(i))!;
      // `1..3` is a range, not a float.
      let text = m[0];
      if (text.includes('.') && src.startsWith('..', i + text.indexOf('.'))) text = text.slice(0, text.indexOf('.'));
      out.push({ t: 'num', v: text, pos: i });
      i += text.length;
      continue;
    }
    if (c === '"' || c === "'" || c === '`') {
      let j = i + 1;
      let s = '';
      while (j < src.length && src[j] !== c) {
        if (src[j] === '\\' && c !== '`') {
          const n = src[j + 1];
          const map: Record<string, string> = { n: '\n', t: '\t', r: '\r', '\\': '\\', "'": "'", '"': '"', '0': '\0' };
          if (n === undefined || map[n] === undefined) throw new ExprCompileError(`invalid escape in string literal (1:${j + 1})`);
          s += map[n];
          j += 2;
          continue;
        }
        s += src[j];
        j++;
      }
      if (j >= src.length) throw new ExprCompileError(`literal not terminated (1:${i + 1})`);
      out.push({ t: 'str', v: s, pos: i });
      i = j + 1;
      continue;
    }
    if (/[A-Za-z_$]/.test(c)) {
      const m = /^[A-Za-z_$][A-Za-z0-9_$]*/.exec(src.slice(i))!;
      out.push({ t: 'id', v: m[0], pos: i });
      i += m[0].length;
      continue;
    }
    const op = OPS.find((o) => src.startsWith(o, i));
    if (!op) throw new ExprCompileError(`unexpected token ${JSON.stringify(c)} (1:${i + 1})`);
    out.push({ t: 'op', v: op, pos: i });
    i += op.length;
  }
  out.push({ t: 'eof', v: '', pos: src.length });
  return out;
}

// ---- Parser (precedence climbing, expr-lang's table) -----------------------------------------

const BINARY: Readonly<Record<string, [number, 'l' | 'r']>> = {
  '??': [1, 'l'], or: [10, 'l'], '||': [10, 'l'], and: [15, 'l'], '&&': [15, 'l'],
  '==': [20, 'l'], '!=': [20, 'l'], '<': [20, 'l'], '>': [20, 'l'], '<=': [20, 'l'], '>=': [20, 'l'],
  in: [20, 'l'], matches: [20, 'l'], contains: [20, 'l'], startsWith: [20, 'l'], endsWith: [20, 'l'],
  '+': [30, 'l'], '-': [30, 'l'], '*': [60, 'l'], '/': [60, 'l'], '%': [60, 'l'], '**': [100, 'r'],
};

class Parser {
  private p = 0;
  constructor(
    private readonly toks: Tok[],
    private readonly vars: ReadonlySet<string>,
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
    if (t.t !== 'op' || t.v !== v) throw this.err(`unexpected token ${t.t === 'eof' ? 'EOF' : JSON.stringify(t.v)}, expected ${JSON.stringify(v)}`, t);
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
    if (t.t === 'id' && t.v === 'not' && this.toks[this.p + 1]?.t === 'id' && this.toks[this.p + 1]!.v === 'in') return 'not in';
    return null;
  }

  expr(minPrec: number, inPredicate: boolean): Node {
    let left = this.unary(inPredicate);
    for (;;) {
      const op = this.binOp();
      if (op === null) break;
      const [prec, assoc] = op === 'not in' ? [20, 'l'] as const : BINARY[op]!;
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
      left = op === 'not in' ? { k: 'un', op: '!', x: { k: 'bin', op: 'in', l: left, r: right } } : { k: 'bin', op, l: left, r: right };
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
        if (this.peek().t === 'op' && this.peek().v === ':') throw this.err('slices (a[i:j]) are not supported by clusterdns');
        const i = this.expr(0, inPredicate);
        if (this.peek().t === 'op' && this.peek().v === ':') throw this.err('slices (a[i:j]) are not supported by clusterdns');
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
        if (args.length < b[0] || args.length > b[1]) throw this.err(`invalid number of arguments for ${t.v} (expected ${b[0]}${b[1] !== b[0] ? `..${b[1]}` : ''}, got ${args.length})`, t);
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

// ---- Evaluation ------------------------------------------------------------------------------

export interface Scope {
  readonly q: ExprQuery;
  readonly vars: Map<string, ExprValue>;
}

function typeName(v: ExprValue): string {
  if (v === null) return 'nil';
  if (typeof v === 'bigint') return 'int';
  if (typeof v === 'number') return 'float64';
  if (typeof v === 'string') return 'string';
  if (typeof v === 'boolean') return 'bool';
  return 'array';
}

function isNum(v: ExprValue): v is bigint | number {
  return typeof v === 'bigint' || typeof v === 'number';
}

function equal(a: ExprValue, b: ExprValue): boolean {
  if (isNum(a) && isNum(b)) return typeof a === typeof b ? a === b : Number(a) === Number(b);
  if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((x, i) => equal(x, (b as ExprValue[])[i]!));
  return a === b;
}

function cmp(op: string, a: ExprValue, b: ExprValue): boolean {
  let c: number;
  if (isNum(a) && isNum(b)) {
    if (typeof a === 'bigint' && typeof b === 'bigint') c = a < b ? -1 : a > b ? 1 : 0;
    else c = Number(a) < Number(b) ? -1 : Number(a) > Number(b) ? 1 : 0;
  } else if (typeof a === 'string' && typeof b === 'string') c = a < b ? -1 : a > b ? 1 : 0;
  else throw new ExprRunError(`invalid operation: ${typeName(a)} ${op} ${typeName(b)}`);
  return op === '<' ? c < 0 : op === '>' ? c > 0 : op === '<=' ? c <= 0 : c >= 0;
}

function arith(op: string, a: ExprValue, b: ExprValue): ExprValue {
  if (op === '+' && typeof a === 'string' && typeof b === 'string') return a + b;
  if (!isNum(a) || !isNum(b)) throw new ExprRunError(`invalid operation: ${typeName(a)} ${op} ${typeName(b)}`);
  if (op === '/') {
    if (Number(b) === 0 && typeof a === 'bigint' && typeof b === 'bigint') throw new ExprRunError('integer divide by zero');
    return Number(a) / Number(b);
  }
  if (op === '**') return Number(a) ** Number(b);
  if (typeof a === 'bigint' && typeof b === 'bigint') {
    if (op === '%') {
      if (b === 0n) throw new ExprRunError('integer divide by zero');
      return a % b;
    }
    return BigInt.asIntN(64, op === '+' ? a + b : op === '-' ? a - b : a * b);
  }
  if (op === '%') throw new ExprRunError(`invalid operation: ${typeName(a)} % ${typeName(b)}`);
  const x = Number(a);
  const y = Number(b);
  return op === '+' ? x + y : op === '-' ? x - y : x * y;
}

function str(v: ExprValue, fn: string): string {
  if (typeof v !== 'string') throw new ExprRunError(`${fn}: expected string, got ${typeName(v)}`);
  return v;
}

function arr(v: ExprValue, fn: string): readonly ExprValue[] {
  if (!Array.isArray(v)) throw new ExprRunError(`${fn}: expected array, got ${typeName(v)}`);
  return v;
}

/** Go's fmt %v of an expression value (string()). */
export function exprString(v: ExprValue): string {
  if (v === null) return '<nil>';
  if (typeof v === 'string') return v;
  if (typeof v === 'bigint' || typeof v === 'boolean') return String(v);
  if (typeof v === 'number') return fmtV(v);
  return `[${v.map(exprString).join(' ')}]`;
}

function ipInCidr(ipText: string, cidrText: string): boolean {
  const fam = isIP(ipText);
  if (fam === 0) throw new ExprRunError('first argument is not an IP address');
  const m = /^(.+)\/(\d{1,3})$/.exec(cidrText);
  const cfam = m ? isIP(m[1]!) : 0;
  const bits = m ? Number(m[2]) : -1;
  if (!m || cfam === 0 || bits > (cfam === 4 ? 32 : 128)) throw new ExprRunError(`invalid CIDR address: ${cidrText}`);
  const bytes = (ip: string, f: number): number[] => {
    if (f === 4) return ip.split('.').map(Number);
    const [head, tail] = ip.includes('::') ? ip.split('::') as [string, string] : [ip, ''];
    const h = head ? head.split(':') : [];
    let t = tail ? tail.split(':') : [];
    const last = t.length ? t[t.length - 1]! : h[h.length - 1]!;
    const v4 = last?.includes('.') ? last.split('.').map(Number) : null;
    if (v4) {
      if (t.length) t = t.slice(0, -1);
      else h.pop();
    }
    const groups = [...h, ...Array(8 - h.length - t.length - (v4 ? 2 : 0)).fill('0'), ...t].map((g) => parseInt(g || '0', 16));
    const out: number[] = [];
    for (const g of groups) out.push(g >> 8, g & 0xff);
    if (v4) out.push(...v4);
    return out;
  };
  // Go: an IPv4 address matches an IPv4 CIDR also in its ::ffff: form, and vice versa.
  let ipb = bytes(ipText, fam);
  const net = bytes(m[1]!, cfam);
  if (ipb.length === 16 && net.length === 4 && ipb.slice(0, 12).join() === '0,0,0,0,0,0,0,0,0,0,255,255') ipb = ipb.slice(12);
  if (ipb.length !== net.length) return false;
  for (let i = 0; i < bits; i++) {
    const byte = i >> 3;
    const mask = 0x80 >> (i & 7);
    if ((ipb[byte]! & mask) !== (net[byte]! & mask)) return false;
  }
  return true;
}

function evalNode(n: Node, s: Scope, elem: ExprValue | undefined): ExprValue {
  switch (n.k) {
    case 'lit':
      return n.v;
    case 'var':
      return s.vars.get(n.name) ?? null;
    case 'elem':
      return elem ?? null;
    case 'arr':
      return n.items.map((x) => evalNode(x, s, elem));
    case 'index': {
      const x = evalNode(n.x, s, elem);
      const i = evalNode(n.i, s, elem);
      if (typeof i !== 'bigint') throw new ExprRunError(`cannot index with ${typeName(i)}`);
      if (Array.isArray(x) || typeof x === 'string') {
        const len = Array.isArray(x) ? x.length : x.length;
        let k = Number(i);
        if (k < 0) k += len;
        if (k < 0 || k >= len) throw new ExprRunError(`index out of range: ${i} (array length is ${len})`);
        return Array.isArray(x) ? (x as ExprValue[])[k]! : (x as string)[k]!;
      }
      throw new ExprRunError(`cannot index ${typeName(x)}`);
    }
    case 'un': {
      const x = evalNode(n.x, s, elem);
      if (n.op === '!') {
        if (typeof x !== 'boolean') throw new ExprRunError(`invalid operation: ! ${typeName(x)}`);
        return !x;
      }
      if (!isNum(x)) throw new ExprRunError(`invalid operation: ${n.op} ${typeName(x)}`);
      return n.op === '-' ? (typeof x === 'bigint' ? -x : -x) : x;
    }
    case 'cond': {
      const c = evalNode(n.c, s, elem);
      if (typeof c !== 'boolean') throw new ExprRunError(`non-bool ${typeName(c)} used as condition`);
      return evalNode(c ? n.a : n.b, s, elem);
    }
    case 'bin': {
      const op = n.op;
      if (op === '&&' || op === 'and' || op === '||' || op === 'or') {
        const l = evalNode(n.l, s, elem);
        if (typeof l !== 'boolean') throw new ExprRunError(`invalid operation: ${typeName(l)} ${op} bool`);
        if ((op === '&&' || op === 'and') && !l) return false;
        if ((op === '||' || op === 'or') && l) return true;
        const r = evalNode(n.r, s, elem);
        if (typeof r !== 'boolean') throw new ExprRunError(`invalid operation: bool ${op} ${typeName(r)}`);
        return r;
      }
      if (op === '??') {
        const l = evalNode(n.l, s, elem);
        return l !== null ? l : evalNode(n.r, s, elem);
      }
      const l = evalNode(n.l, s, elem);
      const r = evalNode(n.r, s, elem);
      switch (op) {
        case '==': return equal(l, r);
        case '!=': return !equal(l, r);
        case '<': case '>': case '<=': case '>=': return cmp(op, l, r);
        case '+': case '-': case '*': case '/': case '%': case '**': return arith(op, l, r);
        case 'in': return arr(r, 'in').some((x) => equal(x, l));
        case 'contains': return str(l, op).includes(str(r, op));
        case 'startsWith': return str(l, op).startsWith(str(r, op));
        case 'endsWith': return str(l, op).endsWith(str(r, op));
        case 'matches': {
          let re = n.re;
          if (!re) {
            try {
              re = compileRe2(str(r, op)).re;
            } catch (e) {
              throw new ExprRunError(e instanceof Re2Error ? e.message : String(e));
            }
          }
          return re.test(str(l, op));
        }
      }
      throw new ExprRunError(`unknown operator ${op}`);
    }
    case 'call':
      return call(n, s, elem);
  }
}

function call(n: Extract<Node, { k: 'call' }>, s: Scope, elem: ExprValue | undefined): ExprValue {
  const q = s.q;
  if (PREDICATES.has(n.fn)) {
    const list = arr(evalNode(n.args[0]!, s, elem), n.fn);
    const pred = n.args[1];
    const test = (x: ExprValue): boolean => {
      const v = evalNode(pred!, s, x);
      if (typeof v !== 'boolean') throw new ExprRunError(`predicate should return boolean (got ${typeName(v)})`);
      return v;
    };
    switch (n.fn) {
      case 'all': return list.every(test);
      case 'any': return list.some(test);
      case 'none': return !list.some(test);
      case 'one': return list.filter(test).length === 1;
      case 'filter': return list.filter(test);
      case 'map': return list.map((x) => evalNode(pred!, s, x));
      case 'count': return BigInt(pred ? list.filter(test).length : list.filter((x) => x === true).length);
    }
  }
  const a = n.args.map((x) => evalNode(x, s, elem));
  switch (n.fn) {
    case 'name': return q.name();
    case 'type': return q.type();
    case 'class': return q.class();
    case 'proto': return q.proto();
    case 'size': return BigInt(q.size());
    case 'client_ip': return q.clientIP();
    case 'port': return q.port();
    case 'id': return BigInt(q.id());
    case 'opcode': return BigInt(q.opcode());
    case 'do': return q.do();
    case 'bufsize': return BigInt(q.bufsize());
    case 'server_ip': return q.serverIP();
    case 'server_port': return q.serverPort();
    case 'metadata': return q.metadata(str(a[0]!, 'metadata'));
    case 'incidr': return ipInCidr(str(a[0]!, 'incidr'), str(a[1]!, 'incidr'));
    case 'group': {
      const k = a[0]!;
      if (typeof k === 'bigint') return q.group(k.toString());
      if (typeof k === 'string') return q.group(k);
      return '';
    }
    case 'len': {
      const v = a[0]!;
      if (typeof v === 'string') return BigInt([...v].length);
      return BigInt(arr(v, 'len').length);
    }
    case 'upper': return str(a[0]!, 'upper').toUpperCase();
    case 'lower': return str(a[0]!, 'lower').toLowerCase();
    case 'trim': {
      const v = str(a[0]!, 'trim');
      if (a.length === 1) return v.replace(/^[\s]+|[\s]+$/g, '');
      const cut = str(a[1]!, 'trim');
      let i = 0;
      let j = v.length;
      while (i < j && cut.includes(v[i]!)) i++;
      while (j > i && cut.includes(v[j - 1]!)) j--;
      return v.slice(i, j);
    }
    case 'trimPrefix': { const v = str(a[0]!, n.fn); const p = str(a[1]!, n.fn); return v.startsWith(p) ? v.slice(p.length) : v; }
    case 'trimSuffix': { const v = str(a[0]!, n.fn); const p = str(a[1]!, n.fn); return p !== '' && v.endsWith(p) ? v.slice(0, -p.length) : v; }
    case 'split': {
      const v = str(a[0]!, 'split');
      const sep = str(a[1]!, 'split');
      const parts = sep === '' ? [...v] : v.split(sep);
      if (a.length === 3) {
        const lim = Number(a[2]);
        if (lim === 0) return [];
        if (lim > 0 && parts.length > lim) return [...parts.slice(0, lim - 1), parts.slice(lim - 1).join(sep)];
      }
      return parts;
    }
    case 'join': return arr(a[0]!, 'join').map((x) => str(x, 'join')).join(a.length > 1 ? str(a[1]!, 'join') : '');
    case 'replace': return str(a[0]!, 'replace').split(str(a[1]!, 'replace')).join(str(a[2]!, 'replace'));
    case 'repeat': {
      const c = a[1]!;
      if (typeof c !== 'bigint' || c < 0n || c > 10000n) throw new ExprRunError('repeat: invalid count');
      return str(a[0]!, 'repeat').repeat(Number(c));
    }
    case 'indexOf': return BigInt(str(a[0]!, n.fn).indexOf(str(a[1]!, n.fn)));
    case 'lastIndexOf': return BigInt(str(a[0]!, n.fn).lastIndexOf(str(a[1]!, n.fn)));
    case 'hasPrefix': return str(a[0]!, n.fn).startsWith(str(a[1]!, n.fn));
    case 'hasSuffix': return str(a[0]!, n.fn).endsWith(str(a[1]!, n.fn));
    case 'int': {
      const v = a[0]!;
      if (typeof v === 'bigint') return v;
      if (typeof v === 'number') return BigInt(Math.trunc(v));
      if (typeof v === 'string') {
        if (!/^[+-]?[0-9]+$/.test(v)) throw new ExprRunError(`strconv.Atoi: parsing ${JSON.stringify(v)}: invalid syntax`);
        return BigInt(v);
      }
      throw new ExprRunError(`invalid operation: int(${typeName(v)})`);
    }
    case 'float': {
      const v = a[0]!;
      if (isNum(v)) return Number(v);
      if (typeof v === 'string') {
        const f = Number(v);
        if (v.trim() === '' || Number.isNaN(f)) throw new ExprRunError(`strconv.ParseFloat: parsing ${JSON.stringify(v)}: invalid syntax`);
        return f;
      }
      throw new ExprRunError(`invalid operation: float(${typeName(v)})`);
    }
    case 'string': return exprString(a[0]!);
    case 'abs': {
      const v = a[0]!;
      if (typeof v === 'bigint') return v < 0n ? -v : v;
      if (typeof v === 'number') return Math.abs(v);
      throw new ExprRunError(`invalid argument for abs (type ${typeName(v)})`);
    }
    case 'max':
    case 'min': {
      const vals = a.length === 1 && Array.isArray(a[0]) ? (a[0] as ExprValue[]) : a;
      if (vals.length === 0) return null;
      let best: ExprValue = vals[0] as ExprValue;
      for (const v of vals.slice(1)) if (n.fn === 'max' ? cmp('>', v, best) : cmp('<', v, best)) best = v;
      return best;
    }
    case 'first': { const l = arr(a[0]!, 'first'); return l.length ? l[0]! : null; }
    case 'last': { const l = arr(a[0]!, 'last'); return l.length ? l[l.length - 1]! : null; }
  }
  throw new ExprRunError(`unknown func ${n.fn}`);
}

/** A compiled expression. */
export class Expression {
  private constructor(
    readonly source: string,
    private readonly root: Node,
  ) {}

  /** Compile `source`; `vars` are the variables declared before it. Throws ExprCompileError. */
  static compile(source: string, vars: ReadonlySet<string>): Expression {
    return new Expression(source, new Parser(lex(source), vars).parseAll());
  }

  /** Evaluate; throws ExprRunError. */
  run(scope: Scope): ExprValue {
    return evalNode(this.root, scope, undefined);
  }
}
