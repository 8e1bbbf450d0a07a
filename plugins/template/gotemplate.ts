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

export class TemplateParseError extends Error {}
export class TemplateExecError extends Error {}

// ---- Values ----------------------------------------------------------------------------------

/**
 * A Go value as templates see it: string; integer (bigint); float (number); bool; `null` = nil;
 * `undefined` = Go's invalid value (a missing map key; printed `<no value>`); slices (arrays);
 * maps (`Map`, string keys); structs (`GoObject`).
 */
export type GoValue = string | bigint | number | boolean | null | undefined | readonly GoValue[] | ReadonlyMap<string, GoValue> | GoObject;

/** A Go struct (or pointer to one): fields, methods, and how fmt prints it. */
export class GoObject {
  constructor(
    readonly typeName: string,
    readonly fields: Readonly<Record<string, GoValue | (() => GoValue)>>,
    readonly methods: Readonly<Record<string, (args: GoValue[]) => GoValue>> = {},
    /** fmt's String() method; without it printing the value is an execution error. */
    readonly str?: () => string,
  ) {}

  field(name: string): { found: boolean; value: GoValue } {
    if (!Object.prototype.hasOwnProperty.call(this.fields, name)) return { found: false, value: undefined };
    const v = this.fields[name];
    return { found: true, value: typeof v === 'function' ? v() : v };
  }
}

function typeOf(v: GoValue): string {
  if (v === undefined) return '<nil>';
  if (v === null) return 'nil';
  if (typeof v === 'string') return 'string';
  if (typeof v === 'bigint') return 'int';
  if (typeof v === 'number') return 'float64';
  if (typeof v === 'boolean') return 'bool';
  if (Array.isArray(v)) return '[]string';
  if (v instanceof Map) return 'map[string]string';
  if (v instanceof GoObject) return v.typeName;
  return 'unknown';
}

// ---- Lexer -----------------------------------------------------------------------------------

type TokKind = 'field' | 'var' | 'ident' | 'string' | 'number' | 'char' | 'bool' | 'nil' | 'dot' | 'lparen' | 'rparen' | 'pipe' | 'declare' | 'assign' | 'comma';

interface Tok {
  kind: TokKind;
  text: string;
  line: number;
  /** Constants: the text as written (Go's parse tree prints it back). */
  raw?: string;
  /** Directly after the previous token (`.A.B`, `$x.A`, `(…).A` chain; `.A .B` does not). */
  adjacent?: boolean;
}

interface ActionSrc {
  kind: 'action';
  toks: Tok[];
  line: number;
}
interface TextSrc {
  kind: 'text';
  text: string;
}

function isSpace(c: string | undefined): boolean {
  return c === ' ' || c === '\t' || c === '\r' || c === '\n';
}

function isAlnum(c: string | undefined): boolean {
  return c !== undefined && /[A-Za-z0-9_]/.test(c);
}

function lex(name: string, src: string): (ActionSrc | TextSrc)[] {
  const out: (ActionSrc | TextSrc)[] = [];
  let i = 0;
  let line = 1;
  let trimNext = false;
  const err = (msg: string, l = line): TemplateParseError => new TemplateParseError(`template: ${name}:${l}: ${msg}`);
  while (i <= src.length) {
    let j = src.indexOf('{{', i);
    if (j < 0) j = src.length;
    let text = src.slice(i, j);
    if (trimNext) text = text.replace(/^[ \t\r\n]+/, '');
    trimNext = false;
    let start = j + 2;
    const leftTrim = j < src.length && src[j + 2] === '-' && isSpace(src[j + 3]);
    if (leftTrim) {
      text = text.replace(/[ \t\r\n]+$/, '');
      start = j + 3;
    }
    if (text !== '') out.push({ kind: 'text', text });
    line += (src.slice(i, j).match(/\n/g) ?? []).length;
    if (j >= src.length) break;
    const actionLine = line;
    // Comment: {{/* ... */}}
    let k = start;
    while (isSpace(src[k]) && leftTrim) k++;
    if (src.startsWith('/*', k)) {
      const end = src.indexOf('*/', k + 2);
      if (end < 0) throw err('unclosed comment');
      let after = end + 2;
      if (src[after] === ' ' && src.startsWith(' -}}', after)) {
        trimNext = true;
        after += 4;
      } else if (src.startsWith('}}', after)) after += 2;
      else throw err('comment ends before closing delimiter');
      line += (src.slice(j, after).match(/\n/g) ?? []).length;
      i = after;
      continue;
    }
    const toks: Tok[] = [];
    let p = start;
    let closed = false;
    while (p < src.length) {
      const c = src[p]!;
      if (isSpace(c)) {
        if (src.startsWith('-}}', p + 1) && (c === ' ' || c === '\t' || c === '\r' || c === '\n')) {
          trimNext = true;
          if (c === '\n') line++;
          p += 4;
          closed = true;
          break;
        }
        if (c === '\n') line++;
        p++;
        continue;
      }
      if (src.startsWith('}}', p)) {
        p += 2;
        closed = true;
        break;
      }
      const tl = line;
      if (c === '"') {
        let q = p + 1;
        while (q < src.length && src[q] !== '"') {
          if (src[q] === '\\') q++;
          if (src[q] === '\n') throw err('unterminated quoted string');
          q++;
        }
        if (q >= src.length) throw err('unterminated quoted string');
        toks.push({ kind: 'string', text: unquoteGo(src.slice(p, q + 1), err), line: tl, raw: src.slice(p, q + 1) });
        p = q + 1;
        continue;
      }
      if (c === '`') {
        const q = src.indexOf('`', p + 1);
        if (q < 0) throw err('unterminated raw quoted string');
        line += (src.slice(p, q).match(/\n/g) ?? []).length;
        toks.push({ kind: 'string', text: src.slice(p + 1, q), line: tl, raw: src.slice(p, q + 1) });
        p = q + 1;
        continue;
      }
      if (c === "'") {
        let q = p + 1;
        while (q < src.length && src[q] !== "'") {
          if (src[q] === '\\') q++;
          q++;
        }
        if (q >= src.length) throw err('unterminated character constant');
        const s = unquoteGo(`"${src.slice(p + 1, q)}"`, err);
        const cps = [...s];
        if (cps.length !== 1) throw err(`malformed character constant: ${src.slice(p, q + 1)}`);
        toks.push({ kind: 'char', text: String(cps[0]!.codePointAt(0)), line: tl, raw: src.slice(p, q + 1) });
        p = q + 1;
        continue;
      }
      if (c === '(') { toks.push({ kind: 'lparen', text: c, line: tl }); p++; continue; }
      if (c === ')') { toks.push({ kind: 'rparen', text: c, line: tl }); p++; continue; }
      if (c === '|') { toks.push({ kind: 'pipe', text: c, line: tl }); p++; continue; }
      if (c === ',') { toks.push({ kind: 'comma', text: c, line: tl }); p++; continue; }
      if (c === ':' && src[p + 1] === '=') { toks.push({ kind: 'declare', text: ':=', line: tl }); p += 2; continue; }
      if (c === '=') { toks.push({ kind: 'assign', text: '=', line: tl }); p++; continue; }
      if (c === '$') {
        let q = p + 1;
        while (isAlnum(src[q])) q++;
        toks.push({ kind: 'var', text: src.slice(p, q), line: tl });
        p = q;
        continue;
      }
      if (c === '.') {
        if (/[0-9]/.test(src[p + 1] ?? '')) {
          const m = /^\.[0-9_]+([eE][+-]?[0-9_]+)?/.exec(src.slice(p))!;
          toks.push({ kind: 'number', text: m[0], line: tl });
          p += m[0].length;
          continue;
        }
        let q = p + 1;
        while (isAlnum(src[q])) q++;
        const adjacent = p > start && !isSpace(src[p - 1]) && src[p - 1] !== '(' && src[p - 1] !== '|';
        if (q === p + 1) toks.push({ kind: 'dot', text: '.', line: tl });
        else toks.push({ kind: 'field', text: src.slice(p + 1, q), line: tl, adjacent });
        p = q;
        continue;
      }
      if (/[0-9+-]/.test(c)) {
        const m = /^[+-]?(0[xX][0-9a-fA-F_]+|0[oO][0-7_]+|0[bB][01_]+|[0-9_]*\.?[0-9_]+([eE][+-]?[0-9_]+)?|[0-9_]+\.?)/.exec(src.slice(p));
        if (!m || m[0] === '' || m[0] === '+' || m[0] === '-') throw err(`bad number syntax: ${JSON.stringify(src.slice(p, p + 8))}`);
        if (isAlnum(src[p + m[0].length])) throw err(`bad number syntax: ${JSON.stringify(src.slice(p, p + m[0].length + 1))}`);
        toks.push({ kind: 'number', text: m[0], line: tl });
        p += m[0].length;
        continue;
      }
      if (/[A-Za-z_]/.test(c)) {
        let q = p;
        while (isAlnum(src[q])) q++;
        const w = src.slice(p, q);
        toks.push({ kind: w === 'true' || w === 'false' ? 'bool' : w === 'nil' ? 'nil' : 'ident', text: w, line: tl });
        p = q;
        continue;
      }
      throw err(`unexpected ${JSON.stringify(c)} in command`);
    }
    if (!closed) throw err('unclosed action', actionLine);
    out.push({ kind: 'action', toks, line: actionLine });
    i = p;
  }
  return out;
}

function unquoteGo(q: string, err: (m: string) => Error): string {
  const body = q.slice(1, -1);
  let out = '';
  for (let i = 0; i < body.length; i++) {
    const c = body[i]!;
    if (c !== '\\') {
      out += c;
      continue;
    }
    const n = body[++i];
    switch (n) {
      case 'n': out += '\n'; break;
      case 't': out += '\t'; break;
      case 'r': out += '\r'; break;
      case 'a': out += '\x07'; break;
      case 'b': out += '\b'; break;
      case 'f': out += '\f'; break;
      case 'v': out += '\v'; break;
      case '\\': out += '\\'; break;
      case '"': out += '"'; break;
      case "'": out += "'"; break;
      case 'x': out += String.fromCharCode(parseInt(body.slice(i + 1, i + 3), 16)); i += 2; break;
      case 'u': out += String.fromCodePoint(parseInt(body.slice(i + 1, i + 5), 16)); i += 4; break;
      case 'U': out += String.fromCodePoint(parseInt(body.slice(i + 1, i + 9), 16)); i += 8; break;
      default:
        if (n !== undefined && /[0-7]/.test(n)) {
          out += String.fromCharCode(parseInt(body.slice(i, i + 3), 8));
          i += 2;
          break;
        }
        throw err(`invalid syntax in quoted string ${q}`);
    }
  }
  return out;
}

// ---- AST -------------------------------------------------------------------------------------

type Arg =
  | { t: 'field'; recv: Arg | null; path: string[] } // recv null = dot
  | { t: 'var'; name: string; path: string[] }
  | { t: 'ident'; name: string }
  | { t: 'const'; value: GoValue; raw: string }
  | { t: 'dot' }
  | { t: 'pipe'; pipe: Pipe; path: string[] };

interface Cmd {
  args: Arg[];
}
interface Pipe {
  decl: string[];
  assign: boolean;
  cmds: Cmd[];
  line: number;
}

type Node =
  | { t: 'text'; text: string }
  | { t: 'action'; pipe: Pipe }
  | { t: 'if' | 'with'; pipe: Pipe; list: Node[]; elseList: Node[] | null }
  | { t: 'range'; pipe: Pipe; list: Node[]; elseList: Node[] | null }
  | { t: 'break' | 'continue' };

const FUNCS = new Set(['js', 'and', 'or', 'not', 'len', 'index', 'slice', 'print', 'printf', 'println', 'html', 'urlquery', 'eq', 'ne', 'lt', 'le', 'gt', 'ge', 'parseInt']);
const UNSUPPORTED_FUNCS = new Set(['call']);

class Parser {
  private pos = 0;
  constructor(
    private readonly name: string,
    private readonly items: (ActionSrc | TextSrc)[],
  ) {}

  err(msg: string, line: number): TemplateParseError {
    return new TemplateParseError(`template: ${this.name}:${line}: ${msg}`);
  }

  /** Parse a list until one of `stops` (an action whose first word is it); returns the stop word. */
  list(stops: readonly string[], inRange: boolean): { nodes: Node[]; stop: string | null; stopItem: ActionSrc | null } {
    const nodes: Node[] = [];
    while (this.pos < this.items.length) {
      const it = this.items[this.pos++]!;
      if (it.kind === 'text') {
        nodes.push({ t: 'text', text: it.text });
        continue;
      }
      const first = it.toks[0];
      if (!first) throw this.err('missing value for command', it.line);
      if (first.kind === 'ident') {
        const w = first.text;
        if (w === 'end' || w === 'else') {
          if (!stops.includes(w)) throw this.err(`unexpected {{${w}}}`, it.line);
          return { nodes, stop: w, stopItem: it };
        }
        if (w === 'if' || w === 'with' || w === 'range') {
          nodes.push(this.control(w, it, it.toks.slice(1), inRange));
          continue;
        }
        if (w === 'break' || w === 'continue') {
          if (!inRange) throw this.err(`{{${w}}} outside {{range}}`, it.line);
          if (it.toks.length > 1) throw this.err(`unexpected ${it.toks[1]!.text} in {{${w}}}`, it.line);
          nodes.push({ t: w });
          continue;
        }
        if (w === 'define' || w === 'template' || w === 'block') {
          throw this.err(`{{${w}}} (nested templates) is not supported by clusterdns`, it.line);
        }
      }
      nodes.push({ t: 'action', pipe: this.pipeline(it.toks, it.line, true) });
    }
    if (stops.length > 0) throw this.err('unexpected EOF', this.items.length > 0 ? lastLine(this.items) : 1);
    return { nodes, stop: null, stopItem: null };
  }

  private control(w: 'if' | 'with' | 'range', it: ActionSrc, toks: Tok[], inRange: boolean): Node {
    if (toks.length === 0) throw this.err(`missing value for ${w}`, it.line);
    const pipe = this.pipeline(toks, it.line, w !== 'if');
    if (w === 'range' && pipe.decl.length > 2) throw this.err('too many declarations in range', it.line);
    if (w !== 'range' && pipe.decl.length > 1) throw this.err(`too many declarations in ${w}`, it.line);
    const body = this.list(['end', 'else'], inRange || w === 'range');
    let elseList: Node[] | null = null;
    if (body.stop === 'else') {
      const rest = body.stopItem!.toks.slice(1);
      if (rest.length > 0 && rest[0]!.kind === 'ident' && (rest[0]!.text === 'if' || rest[0]!.text === 'with') && w !== 'range') {
        // {{else if …}} / {{else with …}}: a nested control that shares our {{end}}.
        elseList = [this.control(rest[0]!.text as 'if' | 'with', body.stopItem!, rest.slice(1), inRange)];
        return { t: w, pipe, list: body.nodes, elseList };
      }
      if (rest.length > 0) throw this.err(`unexpected ${rest[0]!.text} in else`, body.stopItem!.line);
      const e = this.list(['end'], inRange);
      elseList = e.nodes;
    } else if (body.stopItem!.toks.length > 1) {
      throw this.err(`unexpected ${body.stopItem!.toks[1]!.text} in end`, body.stopItem!.line);
    }
    return w === 'range' ? { t: 'range', pipe, list: body.nodes, elseList } : { t: w, pipe, list: body.nodes, elseList };
  }

  pipeline(toks: Tok[], line: number, allowDecl: boolean): Pipe {
    let i = 0;
    const decl: string[] = [];
    let assign = false;
    // $x := / $x = / $i, $e :=
    const declEnd = toks.findIndex((t) => t.kind === 'declare' || t.kind === 'assign');
    if (declEnd > 0 && toks.slice(0, declEnd).every((t, k) => (k % 2 === 0 ? t.kind === 'var' : t.kind === 'comma'))) {
      for (let k = 0; k < declEnd; k += 2) decl.push(toks[k]!.text);
      assign = toks[declEnd]!.kind === 'assign';
      if (!allowDecl && decl.length > 1) throw this.err('too many declarations', line);
      i = declEnd + 1;
    }
    const cmds: Cmd[] = [];
    let cur: Arg[] = [];
    const stack: Tok[] = toks.slice(i);
    let k = 0;
    const parseOperand = (): Arg => {
      const t = stack[k++]!;
      let a: Arg;
      switch (t.kind) {
        case 'field':
          a = { t: 'field', recv: null, path: [t.text] };
          break;
        case 'var':
          a = { t: 'var', name: t.text, path: [] };
          break;
        case 'dot':
          a = { t: 'dot' };
          break;
        case 'string':
          a = { t: 'const', value: t.text, raw: t.raw ?? JSON.stringify(t.text) };
          break;
        case 'char':
          a = { t: 'const', value: BigInt(t.text), raw: t.raw ?? t.text };
          break;
        case 'number':
          a = { t: 'const', value: parseNumber(t.text, (m) => this.err(m, t.line)), raw: t.text };
          break;
        case 'bool':
          a = { t: 'const', value: t.text === 'true', raw: t.text };
          break;
        case 'nil':
          a = { t: 'const', value: null, raw: 'nil' };
          break;
        case 'ident': {
          if (t.text === 'if' || t.text === 'else' || t.text === 'end' || t.text === 'range' || t.text === 'with' || t.text === 'break' || t.text === 'continue') {
            throw this.err(`unexpected <${t.text}> in command`, t.line);
          }
          if (t.text === 'define' || t.text === 'template' || t.text === 'block') throw this.err(`{{${t.text}}} (nested templates) is not supported by clusterdns`, t.line);
          if (UNSUPPORTED_FUNCS.has(t.text)) throw this.err(`function "${t.text}" is not supported by clusterdns`, t.line);
          if (!FUNCS.has(t.text)) throw this.err(`function "${t.text}" not defined`, t.line);
          a = { t: 'ident', name: t.text };
          break;
        }
        case 'lparen': {
          let depth = 1;
          const startK = k;
          while (k < stack.length && depth > 0) {
            if (stack[k]!.kind === 'lparen') depth++;
            else if (stack[k]!.kind === 'rparen') depth--;
            k++;
          }
          if (depth !== 0) throw this.err('unclosed left paren', t.line);
          const inner = stack.slice(startK, k - 1);
          if (inner.length === 0) throw this.err('missing value for parenthesized pipeline', t.line);
          a = { t: 'pipe', pipe: this.pipeline(inner, t.line, true), path: [] };
          break;
        }
        case 'rparen':
          throw this.err('unexpected right paren', t.line);
        default:
          throw this.err(`unexpected ${JSON.stringify(t.text)} in operand`, t.line);
      }
      // Chained fields directly after the operand: (x).A.B, $x.A
      while (k < stack.length && stack[k]!.kind === 'field' && stack[k]!.adjacent === true && adjacentField(a)) {
        const f = stack[k]!.text;
        if (a.t === 'var' || a.t === 'pipe') a.path.push(f);
        else if (a.t === 'field' && a.recv === null) a.path.push(f);
        else break;
        k++;
      }
      return a;
    };
    while (k < stack.length) {
      const t = stack[k]!;
      if (t.kind === 'pipe') {
        if (cur.length === 0) throw this.err('missing command', t.line);
        cmds.push({ args: cur });
        cur = [];
        k++;
        continue;
      }
      if (t.kind === 'declare' || t.kind === 'assign' || t.kind === 'comma') throw this.err(`unexpected ${JSON.stringify(t.text)} in operand`, t.line);
      cur.push(parseOperand());
    }
    if (cur.length === 0) throw this.err(cmds.length === 0 ? 'missing value for command' : 'missing command', line);
    cmds.push({ args: cur });
    return { decl, assign, cmds, line };
  }
}

function adjacentField(a: Arg): boolean {
  return a.t === 'var' || a.t === 'pipe' || (a.t === 'field' && a.recv === null);
}

function describe(a: Arg): string {
  switch (a.t) {
    case 'const': return typeof a.value === 'string' ? JSON.stringify(a.value) : String(a.value);
    case 'dot': return '.';
    default: return a.t;
  }
}

function lastLine(items: (ActionSrc | TextSrc)[]): number {
  for (let i = items.length - 1; i >= 0; i--) {
    const it = items[i]!;
    if (it.kind === 'action') return it.line;
  }
  return 1;
}

function parseNumber(text: string, err: (m: string) => Error): GoValue {
  const clean = text.replace(/_/g, '');
  if (/^[+-]?0[xX][0-9a-fA-F]+$/.test(clean) || /^[+-]?0[oO][0-7]+$/.test(clean) || /^[+-]?0[bB][01]+$/.test(clean)) {
    const neg = clean.startsWith('-');
    const body = clean.replace(/^[+-]/, '');
    const v = BigInt(body.toLowerCase().replace(/^0o/, '0o'));
    return neg ? -v : v;
  }
  if (/^[+-]?\d+$/.test(clean)) {
    // Go: a leading 0 means octal
    const neg = clean.startsWith('-');
    const body = clean.replace(/^[+-]/, '');
    const v = body.length > 1 && body.startsWith('0') ? BigInt(`0o${body.slice(1)}`) : BigInt(body);
    return neg ? -v : v;
  }
  const f = Number(clean);
  if (!Number.isFinite(f)) throw err(`bad number syntax: "${text}"`);
  return f;
}

// ---- Execution -------------------------------------------------------------------------------

class BreakSignal {}
class ContinueSignal {}

interface Scope {
  vars: { name: string; value: GoValue }[];
}

/** A compiled template. */
export class GoTemplate {
  private constructor(
    readonly name: string,
    readonly source: string,
    private readonly nodes: Node[],
  ) {}

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
      if (p.assign) for (const d of p.decl) if (!scope.includes(d)) throw new TemplateParseError(`template: ${this.name}:${p.line}: undefined variable "${d}"`);
    };
    const checkArg = (a: Arg, scope: string[]): void => {
      if (a.t === 'var' && !scope.includes(a.name)) throw new TemplateParseError(`template: ${this.name}:${line}: undefined variable "${a.name}"`);
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
    const out: string[] = [];
    const scope: Scope = { vars: [{ name: '$', value: data }] };
    this.walk(this.nodes, data, scope, out);
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
    else if (v === null || v === undefined) { /* nothing */ } else throw this.err(`range can't iterate over ${fmtV(v)}`, n.pipe.line);
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
        return this.callFunc(head.name, head.name === 'and' || head.name === 'or' ? null : argVals(), rest, dot, scope, final, line);
      case 'field': {
        return this.fieldChain(dot, head.path, argVals(), line);
      }
      case 'var':
        if (head.path.length > 0) return this.fieldChain(this.getVar(scope, head.name), head.path, argVals(), line);
        break;
      case 'pipe':
        if (head.path.length > 0) return this.fieldChain(this.evalPipe(head.pipe, dot, scope), head.path, argVals(), line);
        break;
      default:
        break;
    }
    if (rest.length > 0 || final !== NOFINAL) throw this.err(`can't give argument to non-function ${describe(head)}`, line);
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
        if (!f.found) throw this.err(`executing "${this.name}" at <.${path.slice(0, i + 1).join('.')}>: can't evaluate field ${name} in type ${v.typeName}`, line);
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
        if (v === null) throw this.err(`executing "${this.name}" at <.${path.slice(0, i + 1).join('.')}>: nil pointer evaluating ${name}`, line);
        continue;
      }
      throw this.err(`executing "${this.name}" at <.${path.slice(0, i + 1).join('.')}>: can't evaluate field ${name} in type ${typeOf(v)}`, line);
    }
    if (path.length === 0 && args.length > 0) throw this.err(`can't give argument to non-function`, line);
    return v;
  }

  private callFunc(name: string, vals: GoValue[] | null, rest: Arg[], dot: GoValue, scope: Scope, final: GoValue | typeof NOFINAL, line: number): GoValue {
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
        return encodeURIComponent(sprint(vals!, this.printer(line))).replace(/%20/g, '+').replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
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

function listString(nodes: Node[]): string {
  let out = '';
  for (const n of nodes) {
    switch (n.t) {
      case 'text':
        out += n.text;
        break;
      case 'action':
        out += `{{${pipeString(n.pipe)}}}`;
        break;
      case 'if':
      case 'with':
      case 'range':
        out += `{{${n.t} ${pipeString(n.pipe)}}}${listString(n.list)}`;
        if (n.elseList) out += `{{else}}${listString(n.elseList)}`;
        out += '{{end}}';
        break;
      case 'break':
      case 'continue':
        out += `{{${n.t}}}`;
        break;
    }
  }
  return out;
}

function pipeString(p: Pipe): string {
  let out = '';
  if (p.decl.length > 0) out += p.decl.join(', ') + (p.assign ? ' = ' : ' := ');
  return out + p.cmds.map((c) => c.args.map(argString).join(' ')).join(' | ');
}

function argString(a: Arg): string {
  switch (a.t) {
    case 'field':
      return `.${a.path.join('.')}`;
    case 'var':
      return [a.name, ...a.path].join('.');
    case 'ident':
      return a.name;
    case 'const':
      return a.raw;
    case 'dot':
      return '.';
    case 'pipe':
      return `(${pipeString(a.pipe)})${a.path.map((f) => `.${f}`).join('')}`;
  }
}

const NOFINAL: unique symbol = Symbol('nofinal');

/** The empty `.Var` map (Go: a nil map[string]any; `index` of it yields nil). */
export const EMPTY_VAR: ReadonlyMap<string, GoValue> = new Map();

function truth(v: GoValue): boolean {
  if (v === undefined || v === null) return false;
  if (typeof v === 'string') return v !== '';
  if (typeof v === 'bigint') return v !== 0n;
  if (typeof v === 'number') return v !== 0;
  if (typeof v === 'boolean') return v;
  if (Array.isArray(v)) return v.length > 0;
  if (v instanceof Map) return v.size > 0;
  return true;
}

function toInt(v: GoValue, fail: (m: string) => Error): number {
  if (typeof v === 'bigint') return Number(v);
  if (typeof v === 'number' && Number.isInteger(v)) return v;
  throw fail(`cannot index slice/array with type ${typeOf(v)}`);
}

function compare(a: GoValue, b: GoValue, fail: (m: string) => Error, eqOnly: boolean): number {
  const num = (x: GoValue): boolean => typeof x === 'bigint' || typeof x === 'number';
  if (num(a) && num(b)) {
    if (typeof a === 'bigint' && typeof b === 'bigint') return a < b ? -1 : a > b ? 1 : 0;
    if (typeof a !== typeof b) throw fail('incompatible types for comparison');
    return (a as number) < (b as number) ? -1 : (a as number) > (b as number) ? 1 : 0;
  }
  if (typeof a === 'string' && typeof b === 'string') return a < b ? -1 : a > b ? 1 : 0;
  if (typeof a === 'boolean' && typeof b === 'boolean' && eqOnly) return a === b ? 0 : 1;
  if (a === undefined || b === undefined) throw fail('invalid type for comparison');
  if (a === null && b === null && eqOnly) return 0;
  throw fail(eqOnly ? 'incompatible types for comparison' : 'invalid type for comparison');
}

function parseUint(s: string, base: number, bitSize: number, fail: (m: string) => Error): GoValue {
  const syntax = (): Error => fail(`strconv.ParseUint: parsing ${JSON.stringify(s)}: invalid syntax`);
  if (s === '') throw syntax();
  let str = s;
  let b = base;
  if (b === 0) {
    b = 10;
    if (str[0] === '0') {
      if (str.length >= 3 && /[bB]/.test(str[1]!)) { b = 2; str = str.slice(2); }
      else if (str.length >= 3 && /[oO]/.test(str[1]!)) { b = 8; str = str.slice(2); }
      else if (str.length >= 3 && /[xX]/.test(str[1]!)) { b = 16; str = str.slice(2); }
      else { b = 8; str = str.slice(1) || '0'; }
    }
    str = str.replace(/_/g, '');
  } else if (b < 2 || b > 36) throw fail(`strconv.ParseUint: parsing ${JSON.stringify(s)}: invalid base ${base}`);
  const bits = bitSize === 0 ? 64 : bitSize;
  if (bits < 0 || bits > 64) throw fail(`strconv.ParseUint: parsing ${JSON.stringify(s)}: invalid bit size ${bitSize}`);
  let v = 0n;
  const max = (1n << BigInt(bits)) - 1n;
  for (const c of str.toLowerCase()) {
    const d = c >= '0' && c <= '9' ? c.charCodeAt(0) - 48 : c >= 'a' && c <= 'z' ? c.charCodeAt(0) - 87 : 99;
    if (d >= b) throw syntax();
    v = v * BigInt(b) + BigInt(d);
  }
  if (v > max) throw fail(`strconv.ParseUint: parsing ${JSON.stringify(s)}: value out of range`);
  return v;
}

// ---- fmt -------------------------------------------------------------------------------------

/** fmt.Sprint of one value (`%v`). */
export function fmtV(v: GoValue): string {
  if (v === undefined) return '<no value>';
  if (v === null) return '<nil>';
  if (typeof v === 'string') return v;
  if (typeof v === 'bigint') return v.toString();
  if (typeof v === 'number') return fmtFloatG(v);
  if (typeof v === 'boolean') return v ? 'true' : 'false';
  if (Array.isArray(v)) return `[${(v as GoValue[]).map(fmtInner).join(' ')}]`;
  if (v instanceof Map) return `map[${[...v.keys()].sort().map((k) => `${k}:${fmtInner(v.get(k))}`).join(' ')}]`;
  if (v instanceof GoObject) {
    if (v.str) return v.str();
    throw new Error(`printing a value of type ${v.typeName} is not supported by clusterdns`);
  }
  return String(v);
}

function fmtInner(v: GoValue): string {
  return v === undefined || v === null ? '<nil>' : fmtV(v);
}

/** Go's `%v` of a float64: shortest digits, exponent form below 1e-4 and from 1e6 (strconv 'g', -1). */
function fmtFloatG(f: number): string {
  if (Number.isNaN(f)) return 'NaN';
  if (!Number.isFinite(f)) return f > 0 ? '+Inf' : '-Inf';
  if (f === 0) return Object.is(f, -0) ? '-0' : '0';
  const [mant, expText] = f.toExponential().split('e') as [string, string];
  const exp = Number(expText);
  if (exp < -4 || exp >= 6) return `${mant}e${exp < 0 ? '-' : '+'}${String(Math.abs(exp)).padStart(2, '0')}`;
  return String(f);
}

function sprint(vals: GoValue[], p: (v: GoValue) => string): string {
  let out = '';
  for (let i = 0; i < vals.length; i++) {
    const isStr = typeof vals[i] === 'string';
    if (i > 0 && !isStr && typeof vals[i - 1] !== 'string') out += ' ';
    out += p(vals[i]);
  }
  return out;
}

function htmlEscape(s: string): string {
  return s.replace(/[<>&'"\0]/g, (c) => ({ '<': '&lt;', '>': '&gt;', '&': '&amp;', "'": '&#39;', '"': '&#34;', '\0': '\uFFFD' })[c]!);
}

/** Go's template.JSEscapeString. */
function jsEscape(s: string): string {
  let out = '';
  for (const ch of s) {
    const cp = ch.codePointAt(0)!;
    switch (ch) {
      case '\\': out += '\\\\'; break;
      case "'": out += "\\'"; break;
      case '"': out += '\\"'; break;
      case '<': out += '\\u003C'; break;
      case '>': out += '\\u003E'; break;
      case '&': out += '\\u0026'; break;
      case '=': out += '\\u003D'; break;
      case '\n': out += '\\n'; break;
      case '\r': out += '\\r'; break;
      case '\t': out += '\\t'; break;
      default:
        if (cp < 0x20) out += `\\u${cp.toString(16).toUpperCase().padStart(4, '0')}`;
        else out += ch;
    }
  }
  return out;
}

function pad(s: string, width: number | undefined, minus: boolean, zero: boolean): string {
  if (width === undefined || s.length >= width) return s;
  if (minus) return s + ' '.repeat(width - s.length);
  if (zero) {
    const sign = /^[+-]/.test(s) ? s[0]! : '';
    return sign + '0'.repeat(width - s.length) + s.slice(sign.length);
  }
  return ' '.repeat(width - s.length) + s;
}

function badVerb(verb: string, v: GoValue): string {
  return `%!${verb}(${v === undefined || v === null ? '<nil>' : `${typeOf(v)}=${fmtInner(v)}`})`;
}

/** fmt.Sprintf for the verbs templates use: v s q d x X o b c t e f g and %%, with flags/width/precision. */
export function sprintf(format: string, args: GoValue[], p: (v: GoValue) => string): string {
  let out = '';
  let ai = 0;
  for (let i = 0; i < format.length; i++) {
    const c = format[i]!;
    if (c !== '%') {
      out += c;
      continue;
    }
    let j = i + 1;
    let minus = false;
    let plus = false;
    let zero = false;
    let sharp = false;
    let space = false;
    for (; j < format.length && '+-# 0'.includes(format[j]!); j++) {
      const f = format[j]!;
      if (f === '-') minus = true;
      else if (f === '+') plus = true;
      else if (f === '0') zero = true;
      else if (f === '#') sharp = true;
      else space = true;
    }
    let width: number | undefined;
    let prec: number | undefined;
    const wm = /^\d+/.exec(format.slice(j));
    if (wm) { width = Number(wm[0]); j += wm[0].length; }
    if (format[j] === '.') {
      j++;
      const pm = /^\d*/.exec(format.slice(j))!;
      prec = pm[0] === '' ? 0 : Number(pm[0]);
      j += pm[0].length;
    }
    const verb = format[j];
    i = j;
    if (verb === undefined) {
      out += '%!(NOVERB)';
      break;
    }
    if (verb === '%') {
      out += '%';
      continue;
    }
    if (ai >= args.length) {
      out += `%!${verb}(MISSING)`;
      continue;
    }
    const v = args[ai++];
    let s: string;
    switch (verb) {
      case 'v':
        if (typeof v === 'bigint' || typeof v === 'number') s = numSign(p(v), plus, space);
        else s = p(v);
        if (sharp && typeof v === 'string') s = JSON.stringify(v);
        break;
      case 's':
        if (typeof v === 'string') s = prec !== undefined ? [...v].slice(0, prec).join('') : v;
        else if (Array.isArray(v) || v instanceof Map || v instanceof GoObject || typeof v === 'boolean' || v === undefined || v === null) s = typeof v === 'boolean' ? badVerb(verb, v) : p(v);
        else s = badVerb(verb, v);
        break;
      case 'q':
        if (typeof v === 'string') s = sharp && !v.includes('`') ? `\`${v}\`` : goQuote(v);
        else if (typeof v === 'bigint') s = `'${String.fromCodePoint(Number(v))}'`;
        else s = badVerb(verb, v);
        break;
      case 'd':
        s = typeof v === 'bigint' ? numSign(v.toString(), plus, space) : badVerb(verb, v);
        break;
      case 'x':
      case 'X':
      case 'o':
      case 'O':
      case 'b': {
        const radix = verb === 'o' || verb === 'O' ? 8 : verb === 'b' ? 2 : 16;
        if (typeof v === 'bigint') {
          let body = (v < 0n ? -v : v).toString(radix);
          if (verb === 'X') body = body.toUpperCase();
          if (sharp && radix === 16) body = (verb === 'X' ? '0X' : '0x') + body;
          if (sharp && radix === 8 && body[0] !== '0') body = '0' + body;
          if (verb === 'O') body = '0o' + body;
          s = numSign((v < 0n ? '-' : '') + body, plus, space);
        } else if (typeof v === 'string' && radix === 16) {
          s = Buffer.from(v, 'utf8').toString('hex');
          if (verb === 'X') s = s.toUpperCase();
        } else s = badVerb(verb, v);
        break;
      }
      case 'c':
        s = typeof v === 'bigint' ? String.fromCodePoint(Number(v)) : badVerb(verb, v);
        break;
      case 't':
        s = typeof v === 'boolean' ? String(v) : badVerb(verb, v);
        break;
      case 'f':
      case 'F':
      case 'e':
      case 'g': {
        const f = typeof v === 'number' ? v : undefined;
        if (f === undefined) {
          s = badVerb(verb, v);
          break;
        }
        if (verb === 'e') s = f.toExponential(prec ?? 6).replace(/e([+-])(\d)$/, 'e$10$2');
        else if (verb === 'g') s = prec === undefined ? fmtFloatG(f) : String(Number(f.toPrecision(prec)));
        else s = f.toFixed(prec ?? 6);
        s = numSign(s, plus, space);
        break;
      }
      default:
        s = badVerb(verb, v);
    }
    out += pad(s, width, minus, zero && !minus && (typeof v === 'bigint' || typeof v === 'number'));
  }
  if (ai < args.length) out += `%!(EXTRA ${args.slice(ai).map((v) => `${typeOf(v)}=${fmtInner(v)}`).join(', ')})`;
  return out;
}

function numSign(s: string, plus: boolean, space: boolean): string {
  if (s.startsWith('-')) return s;
  if (plus) return '+' + s;
  if (space) return ' ' + s;
  return s;
}

function goQuote(s: string): string {
  let out = '"';
  for (const ch of s) {
    const cp = ch.codePointAt(0)!;
    if (ch === '"') out += '\\"';
    else if (ch === '\\') out += '\\\\';
    else if (ch === '\n') out += '\\n';
    else if (ch === '\t') out += '\\t';
    else if (ch === '\r') out += '\\r';
    else if (cp < 0x20 || cp === 0x7f) out += `\\x${cp.toString(16).padStart(2, '0')}`;
    else out += ch;
  }
  return out + '"';
}
