import { describe, expect, it } from 'vitest';
import { Qtype } from '../dns/constants.js';
import type { Query } from '../query.js';
import type { ViewFilter } from '../view.js';
import { RouteTable } from './routes.js';

function table(zones: string[]): RouteTable {
  const t = new RouteTable();
  for (const zone of zones) t.add({ zone, chain: null });
  return t;
}

const ZONES = ['.', 'cluster.local.', 'svc.cluster.local.', 'in-addr.arpa.', '10.in-addr.arpa.', 'example.'];
const NAMES = [
  '.',
  'cluster.local.',
  'a.cluster.local.',
  'a.b.svc.cluster.local.',
  'xcluster.local.',
  'svc.cluster.local.',
  'local.',
  '4.3.2.10.in-addr.arpa.',
  '4.3.2.1.in-addr.arpa.',
  'in-addr.arpa.',
  'example.',
  'www.example.',
  'example.com.',
];

describe('route table (docs/corefile.md §7.3)', () => {
  it('picks the longest matching zone, the parent for DS, else the root block', () => {
    const t = table(ZONES);
    expect(t.lookup('a.b.svc.cluster.local.', Qtype.A)?.zone).toBe('svc.cluster.local.');
    expect(t.lookup('a.cluster.local.', Qtype.A)?.zone).toBe('cluster.local.');
    expect(t.lookup('xcluster.local.', Qtype.A)?.zone).toBe('.');
    expect(t.lookup('svc.cluster.local.', Qtype.DS)?.zone).toBe('cluster.local.');
    expect(t.lookup('4.3.2.10.in-addr.arpa.', Qtype.PTR)?.zone).toBe('10.in-addr.arpa.');
    expect(table(['cluster.local.']).lookup('example.com.', Qtype.A)).toBeUndefined();
  });

  it('the suffix scan (few zones) and the label walk (many zones) agree', () => {
    const few = table(ZONES);
    // Zones that match none of the names push the table past the scan's limit.
    const many = table([...ZONES, ...Array.from({ length: 20 }, (_, i) => `unused${i}.invalid.`)]);
    for (const name of NAMES) {
      for (const qtype of [Qtype.A, Qtype.DS])
        expect(many.lookup(name, qtype)?.zone, `${name} ${qtype}`).toBe(few.lookup(name, qtype)?.zone);
    }
  });
});

describe('route table with views (CoreDNS 1.15.0 ServeDNS)', () => {
  const chain = { name: 'x', serve: () => 0 };
  const query = {} as Query;
  const view = (name: string, ok: boolean): ViewFilter => ({ name, pass: () => ok });

  it('tries a zone’s blocks in order, then shorter zones, then the root; DS goes on to the parent', () => {
    const t = new RouteTable();
    const no = { zone: 'a.example.', chain, view: view('no', false) };
    const yes = { zone: 'a.example.', chain, view: view('yes', true) };
    const parent = { zone: 'example.', chain, view: view('parent', true) };
    const root = { zone: '.', chain, view: view('root-no', false) };
    const fallback = { zone: '.', chain };
    for (const r of [no, yes, parent, root, fallback]) t.add(r);
    expect(t.hasViews).toBe(true);
    expect(t.lookupViews('www.a.example.', Qtype.A, query)).toBe(yes);
    expect(t.lookupViews('www.a.example.', Qtype.DS, query)).toBe(parent);
    expect(t.lookupViews('b.example.', Qtype.A, query)).toBe(parent);
    expect(t.lookupViews('other.', Qtype.A, query)).toBe(fallback);
  });

  it('a zone’s block without plugins refuses at once; with no block taking the query, none', () => {
    const t = new RouteTable();
    t.add({ zone: 'example.', chain, view: view('no', false) });
    expect(t.lookupViews('www.example.', Qtype.A, query)).toBeUndefined();
    t.add({ zone: 'example.', chain: null });
    expect(t.lookupViews('www.example.', Qtype.A, query)?.chain).toBeNull();
  });
});
