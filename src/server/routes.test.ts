import { describe, expect, it } from 'vitest';
import { Qtype } from '../dns/constants.js';
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
