/** Go values as templates see them, and Go's notion of a value's type name and truth. */

/**
 * A Go value as templates see it: string; integer (bigint); float (number); bool; `null` = nil;
 * `undefined` = Go's invalid value (a missing map key; printed `<no value>`); slices (arrays);
 * maps (`Map`, string keys); structs (`GoObject`).
 */
export type GoValue =
  | string
  | bigint
  | number
  | boolean
  | null
  | undefined
  | readonly GoValue[]
  | ReadonlyMap<string, GoValue>
  | GoObject;

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

export function typeOf(v: GoValue): string {
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

/** The empty `.Var` map (Go: a nil map[string]any; `index` of it yields nil). */
export const EMPTY_VAR: ReadonlyMap<string, GoValue> = new Map();

export function truth(v: GoValue): boolean {
  if (v === undefined || v === null) return false;
  if (typeof v === 'string') return v !== '';
  if (typeof v === 'bigint') return v !== 0n;
  if (typeof v === 'number') return v !== 0;
  if (typeof v === 'boolean') return v;
  if (Array.isArray(v)) return v.length > 0;
  if (v instanceof Map) return v.size > 0;
  return true;
}
