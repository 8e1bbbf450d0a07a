import { describe, expect, it } from 'vitest';
import { resolvConfSearch } from './resolvconf.js';

describe('resolvConfSearch', () => {
  it('reads the search words, lower-cased and absolute', () => {
    expect(resolvConfSearch('nameserver 1.1.1.1\nsearch a.example B.example.\noptions ndots:5\n')).toEqual([
      'a.example.',
      'b.example.',
    ]);
    expect(resolvConfSearch('nameserver 1.1.1.1\n')).toEqual([]);
  });

  it('domain takes its first word only (glibc, miekg/dns): `domain a b` is [a]', () => {
    expect(resolvConfSearch('domain a.example b.example\n')).toEqual(['a.example.']);
    expect(resolvConfSearch('domain\n')).toEqual([]);
  });

  it('whichever of search and domain comes last wins', () => {
    expect(resolvConfSearch('search a b\ndomain c.example\n')).toEqual(['c.example.']);
    expect(resolvConfSearch('domain c\nsearch A.b. d\n')).toEqual(['a.b.', 'd.']);
    expect(resolvConfSearch('search a\nsearch b c\n')).toEqual(['b.', 'c.']);
  });
});
