/** The parse tree of a Go template, and its text as Go's `Tree.Root.String()` prints it. */
import type { GoValue } from './values.js';

export type Arg =
  | { t: 'field'; recv: Arg | null; path: string[] } // recv null = dot
  | { t: 'var'; name: string; path: string[] }
  | { t: 'ident'; name: string }
  | { t: 'const'; value: GoValue; raw: string }
  | { t: 'dot' }
  | { t: 'pipe'; pipe: Pipe; path: string[] };

export interface Cmd {
  args: Arg[];
}
export interface Pipe {
  decl: string[];
  assign: boolean;
  cmds: Cmd[];
  line: number;
}

export type Node =
  | { t: 'text'; text: string }
  | { t: 'action'; pipe: Pipe }
  | { t: 'if' | 'with'; pipe: Pipe; list: Node[]; elseList: Node[] | null }
  | { t: 'range'; pipe: Pipe; list: Node[]; elseList: Node[] | null }
  | { t: 'break' | 'continue' };

export function listString(nodes: Node[]): string {
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
