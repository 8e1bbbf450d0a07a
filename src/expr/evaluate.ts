/** Evaluation of an expression's tree: expr-lang's operators, comparisons and built-ins, with its error wording. */
import { isIP } from 'node:net';
import { fmtFloatG } from '../util/gofloat.js';
import { compileRe2, Re2Error } from '../util/re2.js';
import { ExprRunError } from './errors.js';
import { PREDICATES } from './names.js';
import type { Node } from './tree.js';
import type { ExprValue, Scope } from './values.js';

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
  if (Array.isArray(a) && Array.isArray(b))
    return a.length === b.length && a.every((x, i) => equal(x, (b as ExprValue[])[i]!));
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
    if (Number(b) === 0 && typeof a === 'bigint' && typeof b === 'bigint')
      throw new ExprRunError('integer divide by zero');
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
  if (typeof v === 'number') return fmtFloatG(v);
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
    const [head, tail] = ip.includes('::') ? (ip.split('::') as [string, string]) : [ip, ''];
    const h = head ? head.split(':') : [];
    let t = tail ? tail.split(':') : [];
    const last = t.length ? t[t.length - 1]! : h[h.length - 1]!;
    const v4 = last?.includes('.') ? last.split('.').map(Number) : null;
    if (v4) {
      if (t.length) t = t.slice(0, -1);
      else h.pop();
    }
    const groups = [...h, ...Array(8 - h.length - t.length - (v4 ? 2 : 0)).fill('0'), ...t].map((g) =>
      parseInt(g || '0', 16),
    );
    const out: number[] = [];
    for (const g of groups) out.push(g >> 8, g & 0xff);
    if (v4) out.push(...v4);
    return out;
  };
  // Go: an IPv4 address matches an IPv4 CIDR also in its ::ffff: form, and vice versa.
  let ipb = bytes(ipText, fam);
  const net = bytes(m[1]!, cfam);
  if (ipb.length === 16 && net.length === 4 && ipb.slice(0, 12).join() === '0,0,0,0,0,0,0,0,0,0,255,255')
    ipb = ipb.slice(12);
  if (ipb.length !== net.length) return false;
  for (let i = 0; i < bits; i++) {
    const byte = i >> 3;
    const mask = 0x80 >> (i & 7);
    if ((ipb[byte]! & mask) !== (net[byte]! & mask)) return false;
  }
  return true;
}

export function evalNode(n: Node, s: Scope, elem: ExprValue | undefined): ExprValue {
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
        case '==':
          return equal(l, r);
        case '!=':
          return !equal(l, r);
        case '<':
        case '>':
        case '<=':
        case '>=':
          return cmp(op, l, r);
        case '+':
        case '-':
        case '*':
        case '/':
        case '%':
        case '**':
          return arith(op, l, r);
        case 'in':
          return arr(r, 'in').some((x) => equal(x, l));
        case 'contains':
          return str(l, op).includes(str(r, op));
        case 'startsWith':
          return str(l, op).startsWith(str(r, op));
        case 'endsWith':
          return str(l, op).endsWith(str(r, op));
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
      case 'all':
        return list.every(test);
      case 'any':
        return list.some(test);
      case 'none':
        return !list.some(test);
      case 'one':
        return list.filter(test).length === 1;
      case 'filter':
        return list.filter(test);
      case 'map':
        return list.map((x) => evalNode(pred!, s, x));
      case 'count':
        return BigInt(pred ? list.filter(test).length : list.filter((x) => x === true).length);
    }
  }
  const a = n.args.map((x) => evalNode(x, s, elem));
  switch (n.fn) {
    case 'name':
      return q.name();
    case 'type':
      return q.type();
    case 'class':
      return q.class();
    case 'proto':
      return q.proto();
    case 'size':
      return BigInt(q.size());
    case 'client_ip':
      return q.clientIP();
    case 'port':
      return q.port();
    case 'id':
      return BigInt(q.id());
    case 'opcode':
      return BigInt(q.opcode());
    case 'do':
      return q.do();
    case 'bufsize':
      return BigInt(q.bufsize());
    case 'server_ip':
      return q.serverIP();
    case 'server_port':
      return q.serverPort();
    case 'metadata':
      return q.metadata(str(a[0]!, 'metadata'));
    case 'incidr':
      return ipInCidr(str(a[0]!, 'incidr'), str(a[1]!, 'incidr'));
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
    case 'upper':
      return str(a[0]!, 'upper').toUpperCase();
    case 'lower':
      return str(a[0]!, 'lower').toLowerCase();
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
    case 'trimPrefix': {
      const v = str(a[0]!, n.fn);
      const p = str(a[1]!, n.fn);
      return v.startsWith(p) ? v.slice(p.length) : v;
    }
    case 'trimSuffix': {
      const v = str(a[0]!, n.fn);
      const p = str(a[1]!, n.fn);
      return p !== '' && v.endsWith(p) ? v.slice(0, -p.length) : v;
    }
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
    case 'join':
      return arr(a[0]!, 'join')
        .map((x) => str(x, 'join'))
        .join(a.length > 1 ? str(a[1]!, 'join') : '');
    case 'replace':
      return str(a[0]!, 'replace').split(str(a[1]!, 'replace')).join(str(a[2]!, 'replace'));
    case 'repeat': {
      const c = a[1]!;
      if (typeof c !== 'bigint' || c < 0n || c > 10000n) throw new ExprRunError('repeat: invalid count');
      return str(a[0]!, 'repeat').repeat(Number(c));
    }
    case 'indexOf':
      return BigInt(str(a[0]!, n.fn).indexOf(str(a[1]!, n.fn)));
    case 'lastIndexOf':
      return BigInt(str(a[0]!, n.fn).lastIndexOf(str(a[1]!, n.fn)));
    case 'hasPrefix':
      return str(a[0]!, n.fn).startsWith(str(a[1]!, n.fn));
    case 'hasSuffix':
      return str(a[0]!, n.fn).endsWith(str(a[1]!, n.fn));
    case 'int': {
      const v = a[0]!;
      if (typeof v === 'bigint') return v;
      if (typeof v === 'number') return BigInt(Math.trunc(v));
      if (typeof v === 'string') {
        if (!/^[+-]?[0-9]+$/.test(v))
          throw new ExprRunError(`strconv.Atoi: parsing ${JSON.stringify(v)}: invalid syntax`);
        return BigInt(v);
      }
      throw new ExprRunError(`invalid operation: int(${typeName(v)})`);
    }
    case 'float': {
      const v = a[0]!;
      if (isNum(v)) return Number(v);
      if (typeof v === 'string') {
        const f = Number(v);
        if (v.trim() === '' || Number.isNaN(f))
          throw new ExprRunError(`strconv.ParseFloat: parsing ${JSON.stringify(v)}: invalid syntax`);
        return f;
      }
      throw new ExprRunError(`invalid operation: float(${typeName(v)})`);
    }
    case 'string':
      return exprString(a[0]!);
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
    case 'first': {
      const l = arr(a[0]!, 'first');
      return l.length ? l[0]! : null;
    }
    case 'last': {
      const l = arr(a[0]!, 'last');
      return l.length ? l[l.length - 1]! : null;
    }
  }
  throw new ExprRunError(`unknown func ${n.fn}`);
}
