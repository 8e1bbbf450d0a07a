/** The names an expression may call: CoreDNS's environment, the built-ins implemented here, and expr-lang's reserved words. */

/** CoreDNS's expression environment (plugin/pkg/expression) plus the template's `group`. */
export const ENV_FUNCS: Readonly<Record<string, number>> = {
  incidr: 2, metadata: 1, type: 0, name: 0, class: 0, proto: 0, size: 0, client_ip: 0, port: 0, id: 0, opcode: 0, do: 0, bufsize: 0,
  server_ip: 0, server_port: 0, group: 1,
};

/** Built-ins implemented here: name → [min, max] arguments. */
export const BUILTINS: Readonly<Record<string, [number, number]>> = {
  len: [1, 1], upper: [1, 1], lower: [1, 1], trim: [1, 2], trimPrefix: [2, 2], trimSuffix: [2, 2], split: [2, 3], join: [1, 2], replace: [3, 3],
  repeat: [2, 2], indexOf: [2, 2], lastIndexOf: [2, 2], hasPrefix: [2, 2], hasSuffix: [2, 2], int: [1, 1], float: [1, 1], string: [1, 1],
  abs: [1, 1], max: [1, Infinity], min: [1, Infinity], first: [1, 1], last: [1, 1],
  all: [2, 2], any: [2, 2], none: [2, 2], one: [2, 2], filter: [2, 2], map: [2, 2], count: [1, 2],
};
export const PREDICATES = new Set(['all', 'any', 'none', 'one', 'filter', 'map', 'count']);

/** expr-lang's other built-ins and keywords: reserved as variable names, refused as not supported. */
export const EXPR_RESERVED = new Set([
  ...Object.keys(BUILTINS), 'find', 'findIndex', 'findLast', 'findLastIndex', 'sum', 'groupBy', 'sortBy', 'reduce', 'splitAfter', 'ceil', 'floor',
  'round', 'toJSON', 'fromJSON', 'toBase64', 'fromBase64', 'now', 'duration', 'date', 'timezone', 'get', 'take', 'keys', 'values', 'toPairs',
  'fromPairs', 'sort', 'bitand', 'bitor', 'bitxor', 'bitnand', 'bitnot', 'bitshl', 'bitshr', 'bitushr', 'concat', 'flatten', 'uniq', 'median',
  'mean', 'type', 'let', 'true', 'false', 'nil', 'in', 'not', 'and', 'or', 'matches', 'contains', 'startsWith', 'endsWith', 'if', 'else',
]);
