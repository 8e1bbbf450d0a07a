/**
 * RFC 9432 catalog zones as CoreDNS 1.15.0 reads them (plugin/pkg/catalog/catalog.go): the
 * transferred records of a catalog zone turned into its member zones. A catalog must have an SOA
 * and an NS at its apex and exactly one `version` TXT "2"; every `<id>.zones.<catalog>` PTR names a
 * member (one PTR per id, one id per member zone); `coo.<id>.zones.<catalog>` PTR is the member's
 * change of ownership and `group.<id>.zones.<catalog>` TXT its groups. Anything else is ignored.
 * The errors are CoreDNS's: a catalog that fails them is not taken (the transfer fails).
 */
import { Qtype } from '../../src/dns/constants.js';
import { fqdn, labels, lowerName } from '../../src/dns/name.js';
import type { ZoneRecord } from '../../src/dns/zonefile/record.js';

/** The only schema version CoreDNS reads. */
export const CATALOG_VERSION = '2';
const CLASS_IN = 1;

export interface CatalogMember {
  /** The member node label (`<id>` in `<id>.zones.<catalog>`). */
  readonly id: string;
  /** The member zone, lower-case and absolute. */
  readonly zone: string;
  /** `group` property values, sorted. */
  readonly groups: readonly string[];
  /** `coo` property: the catalog the member moves to, or '' without one. */
  readonly changeOfOwnership: string;
}

export interface Catalog {
  readonly origin: string;
  /** Sorted by member id, as CoreDNS's. */
  readonly members: readonly CatalogMember[];
}

function normalizeName(name: string): string {
  return lowerName(fqdn(name));
}

/** A TXT record's character-strings joined (CoreDNS's txtValue). */
function txtValue(rdata: Buffer): string {
  let out = '';
  for (let i = 0; i < rdata.length; ) {
    const n = rdata[i]!;
    out += rdata.subarray(i + 1, i + 1 + n).toString('latin1');
    i += 1 + n;
  }
  return out;
}

function hasLabelSuffix(ls: readonly string[], suffix: readonly string[]): boolean {
  if (ls.length < suffix.length) return false;
  const off = ls.length - suffix.length;
  return suffix.every((l, i) => ls[off + i] === l);
}

function push(m: Map<string, string[]>, k: string, v: string): void {
  const a = m.get(k);
  if (a === undefined) m.set(k, [v]);
  else a.push(v);
}

/** Go's %q of a plain string. */
function quote(s: string): string {
  return JSON.stringify(s);
}

/** The catalog of `origin` from its records; throws CoreDNS's error when it is not a valid one. */
export function parseCatalog(originArg: string, records: Iterable<ZoneRecord>): Catalog {
  const origin = normalizeName(originArg);
  const zonesLabels = ['zones', ...labels(origin)];
  const versionOwner = `version.${origin}`;
  let hasSOA = false;
  let hasNS = false;
  const versionText: string[] = [];
  const memberPTR = new Map<string, string[]>();
  const groups = new Map<string, string[]>();
  const coo = new Map<string, string[]>();

  for (const r of records) {
    if (r.class !== CLASS_IN) throw new Error(`catalog zone ${origin} contains non-IN record ${r.name}`);
    const owner = normalizeName(r.name);
    const ls = labels(owner);
    const member = ls.length === zonesLabels.length + 1 && hasLabelSuffix(ls, zonesLabels);
    const property = ls.length === zonesLabels.length + 2 && hasLabelSuffix(ls, zonesLabels);
    switch (r.type) {
      case Qtype.SOA:
        if (owner === origin) hasSOA = true;
        break;
      case Qtype.NS:
        if (owner === origin) hasNS = true;
        break;
      case Qtype.TXT:
        if (owner === versionOwner) versionText.push(txtValue(r.rdata));
        else if (property && ls[0] === 'group') push(groups, ls[1]!, txtValue(r.rdata));
        break;
      case Qtype.PTR:
        if (member) push(memberPTR, ls[0]!, normalizeName(r.target ?? ''));
        else if (property && ls[0] === 'coo') push(coo, ls[1]!, normalizeName(r.target ?? ''));
        break;
    }
  }

  if (!hasSOA) throw new Error(`catalog zone ${origin} has no SOA record`);
  if (!hasNS) throw new Error(`catalog zone ${origin} has no NS record`);
  if (versionText.length !== 1) throw new Error(`catalog zone ${origin} must have exactly one version TXT record`);
  if (versionText[0] !== CATALOG_VERSION)
    throw new Error(`catalog zone ${origin} has unsupported version ${quote(versionText[0]!)}`);

  const seen = new Map<string, string>();
  const members: CatalogMember[] = [];
  for (const [id, zones] of memberPTR) {
    if (zones.length !== 1) throw new Error(`catalog member ${id}.zones.${origin} must have exactly one PTR record`);
    const zone = zones[0]!;
    const prev = seen.get(zone);
    if (prev !== undefined) throw new Error(`catalog member zone ${zone} is listed by both ${prev} and ${id}`);
    seen.set(zone, id);
    const c = coo.get(id) ?? [];
    if (c.length > 1) throw new Error(`catalog member ${id} has more than one coo PTR record`);
    members.push({ id, zone, groups: [...(groups.get(id) ?? [])].sort(), changeOfOwnership: c[0] ?? '' });
  }
  members.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  return { origin, members };
}
