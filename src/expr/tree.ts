/** The parse tree of an expression. */
import type { ExprValue } from './values.js';

export type Node =
  | { k: 'lit'; v: ExprValue }
  | { k: 'var'; name: string }
  | { k: 'elem' }
  | { k: 'call'; fn: string; args: Node[] }
  | { k: 'un'; op: string; x: Node }
  | { k: 'bin'; op: string; l: Node; r: Node; re?: RegExp }
  | { k: 'cond'; c: Node; a: Node; b: Node }
  | { k: 'arr'; items: Node[] }
  | { k: 'index'; x: Node; i: Node };
