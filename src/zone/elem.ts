/** The records of one owner name, and the RFC 4034 canonical order of owner names. */
import { nameLabels } from '../dns/zonefile/names.js';
import type { RR } from './rr.js';

const NONE: readonly RR[] = Object.freeze([]);
const EMPTY_TYPES: number[] = [];
const EMPTY_SETS: RR[][] = [];

/**
 * The records of one owner name: its types and, at the same index, each type's records. Two
 * arrays rather than a Map: a name holds one to three types, which a scan finds as fast, and a
 * Map cost about 200 bytes more per name.
 */
export class Elem {
  // Made by the first insert with room for exactly one (an empty array's first push reserves 17).
  private types: number[] = EMPTY_TYPES;
  private sets: RR[][] = EMPTY_SETS;
  /** The name's canonical-order key (`canonicalKey`). */
  readonly key: string;
  constructor(readonly name: string) {
    this.key = canonicalKey(name);
  }

  type(t: number): readonly RR[] {
    const i = this.types.indexOf(t);
    return i < 0 ? NONE : this.sets[i]!;
  }

  /** Every type's records, in the order the types were first inserted. */
  rrsets(): readonly (readonly RR[])[] {
    return this.sets;
  }

  insert(rr: RR): void {
    const i = this.types.indexOf(rr.type);
    if (i >= 0) this.sets[i]!.push(rr);
    else if (this.types === EMPTY_TYPES) {
      this.types = [rr.type];
      this.sets = [[rr]];
    } else {
      this.types.push(rr.type);
      this.sets.push([rr]);
    }
  }
}

/**
 * A string whose code-unit order is the RFC 4034 §6.1 canonical order of the names: the labels
 * from the root down, each label's octets as code units 1–256 (the octet plus one) followed by a
 * 0. A label that is a prefix of another sorts first (its 0 is below any octet), and a name that
 * is an ancestor of another sorts first (its key is a prefix). One short string per name: the
 * array of label buffers it replaces cost about 500 bytes of heap per name, half of what a
 * 60,000-name zone held.
 */
export function canonicalKey(lname: string): string {
  if (lname.indexOf('\\') >= 0) return keyOfLabels(nameLabels(lname));
  // No escapes (every name of an ordinary zone): the labels are the text between the dots.
  if (lname === '') return '';
  const end = lname.charCodeAt(lname.length - 1) === 0x2e ? lname.length - 1 : lname.length;
  if (end > 253) return ''; // longer than 255 octets on the wire
  let n = 0;
  let stop = end;
  for (let i = end - 1; i >= -1; i--) {
    if (i >= 0 && lname.charCodeAt(i) !== 0x2e) continue;
    const len = stop - i - 1;
    if (len === 0 || len > 63) return ''; // the root, or no valid name
    for (let j = i + 1; j < stop; j++) scratch[n++] = (lname.charCodeAt(j) & 0xff) + 1;
    scratch[n++] = 0;
    stop = i;
  }
  // apply takes any array-like; the cast only satisfies the number[] of its declared type.
  return String.fromCharCode.apply(null, scratch.subarray(0, n) as unknown as number[]);
}

/** Room for the longest name's key: 255 octets of wire name, fewer units than that. */
const scratch = new Uint16Array(256);

function keyOfLabels(labels: Buffer[] | undefined): string {
  if (!labels) return '';
  const units: number[] = [];
  for (let i = labels.length - 1; i >= 0; i--) {
    for (const octet of labels[i]!) units.push(octet + 1);
    units.push(0);
  }
  return String.fromCharCode(...units);
}

/** Canonical order of two `canonicalKey`s. */
export function compareKeys(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** The number of labels of a name (0 for the root or a name that does not parse). */
export function labelCount(lname: string): number {
  return nameLabels(lname)?.length ?? 0;
}
