/** The records of one owner name, and the RFC 4034 canonical order of owner names. */
import { nameLabels } from '../dns/zonefile/names.js';
import type { RR } from './rr.js';

/** The records of one owner name. */
export class Elem {
  readonly m = new Map<number, RR[]>();
  /** Reversed lower-cased labels, for canonical ordering. */
  readonly key: Buffer[];
  constructor(readonly name: string) {
    this.key = canonicalKey(name);
  }

  type(t: number): readonly RR[] {
    return this.m.get(t) ?? NONE;
  }

  insert(rr: RR): void {
    const l = this.m.get(rr.type);
    if (l) l.push(rr);
    else this.m.set(rr.type, [rr]);
  }
}

const NONE: readonly RR[] = Object.freeze([]);

export function canonicalKey(lname: string): Buffer[] {
  return (nameLabels(lname) ?? []).reverse();
}

/** RFC 4034 §6.1 canonical order of two reversed label lists. */
export function compareKeys(a: readonly Buffer[], b: readonly Buffer[]): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const c = Buffer.compare(a[i]!, b[i]!);
    if (c !== 0) return c;
  }
  return a.length - b.length;
}
