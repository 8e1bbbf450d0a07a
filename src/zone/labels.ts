/** Label arithmetic on absolute names in text form: label offsets, wildcards, zone membership and DNAME substitution. */
import { labelsText, nameLabels } from '../dns/zonefile/names.js';

/** Offsets where each label of an absolute name starts (escaped dots are not separators). */
export function labelStarts(name: string): number[] {
  if (name === '.') return [];
  const starts = [0];
  for (let i = 0; i < name.length - 1; i++) {
    if (name[i] === '\\') {
      i += /^\d{3}/.test(name.slice(i + 1, i + 4)) ? 3 : 1;
      continue;
    }
    if (name[i] === '.') starts.push(i + 1);
  }
  return starts;
}

/** Offset of the label after the first one, or -1 for the last label / root. */
export function nextLabel(name: string): number {
  const s = labelStarts(name);
  return s.length >= 2 ? s[1]! : -1;
}

export function asteriskLabel(name: string): string {
  const off = nextLabel(name);
  return off < 0 ? '' : `*.${name.slice(off)}`;
}

/** `name` is `zone` or below it (both lower-cased, absolute). */
export function isSub(zone: string, name: string): boolean {
  if (zone === '.') return true;
  if (name === zone) return true;
  return name.endsWith(`.${zone}`) && labelStarts(name).includes(name.length - zone.length);
}

/** RFC 6672 substitution: qname below owner → its labels under target; '' when no match. */
export function substituteDNAME(qname: string, owner: string, target: string): string {
  if (!isSub(owner, qname) || qname === owner) return '';
  const prefix = qname.slice(0, qname.length - owner.length);
  const joined = target === '.' ? prefix : `${prefix}${target}`;
  return nameLabels(joined) ? labelsText(nameLabels(joined)!) : '';
}
