/** The parser of Go `text/template`: tokens of each action into the parse tree, with Go's error wording. */
import { TemplateParseError } from './errors.js';
import type { ActionSrc, TextSrc, Tok } from './lexer.js';
import type { Arg, Cmd, Node, Pipe } from './tree.js';
import type { GoValue } from './values.js';

const FUNCS = new Set([
  'js',
  'and',
  'or',
  'not',
  'len',
  'index',
  'slice',
  'print',
  'printf',
  'println',
  'html',
  'urlquery',
  'eq',
  'ne',
  'lt',
  'le',
  'gt',
  'ge',
  'parseInt',
]);
const UNSUPPORTED_FUNCS = new Set(['call']);

export class Parser {
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
      if (
        rest.length > 0 &&
        rest[0]!.kind === 'ident' &&
        (rest[0]!.text === 'if' || rest[0]!.text === 'with') &&
        w !== 'range'
      ) {
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
    return w === 'range'
      ? { t: 'range', pipe, list: body.nodes, elseList }
      : { t: w, pipe, list: body.nodes, elseList };
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
          if (
            t.text === 'if' ||
            t.text === 'else' ||
            t.text === 'end' ||
            t.text === 'range' ||
            t.text === 'with' ||
            t.text === 'break' ||
            t.text === 'continue'
          ) {
            throw this.err(`unexpected <${t.text}> in command`, t.line);
          }
          if (t.text === 'define' || t.text === 'template' || t.text === 'block')
            throw this.err(`{{${t.text}}} (nested templates) is not supported by clusterdns`, t.line);
          if (UNSUPPORTED_FUNCS.has(t.text))
            throw this.err(`function "${t.text}" is not supported by clusterdns`, t.line);
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
      if (t.kind === 'declare' || t.kind === 'assign' || t.kind === 'comma')
        throw this.err(`unexpected ${JSON.stringify(t.text)} in operand`, t.line);
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
