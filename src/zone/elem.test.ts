import { describe, expect, it } from 'vitest';
import { nameLabels } from '../dns/zonefile/names.js';
import { canonicalKey, compareKeys, Elem, labelCount } from './elem.js';
import type { RR } from './rr.js';

/** RFC 4034 §6.1 on label buffers, the definition the string keys must agree with. */
function compareByLabels(a: string, b: string): number {
  const x = (nameLabels(a) ?? []).reverse();
  const y = (nameLabels(b) ?? []).reverse();
  for (let i = 0; i < Math.min(x.length, y.length); i++) {
    const c = Buffer.compare(x[i]!, y[i]!);
    if (c !== 0) return c;
  }
  return x.length - y.length;
}

describe('canonical order of owner names', () => {
  it("sorts RFC 4034 §6.1's example as the RFC lists it", () => {
    const rfc = [
      'example.',
      'a.example.',
      'yljkjljk.a.example.',
      'z.a.example.',
      'zabc.a.example.',
      'z.example.',
      '\\001.z.example.',
      '*.z.example.',
      '\\200.z.example.',
    ];
    const shuffled = [...rfc].reverse();
    expect(shuffled.sort((a, b) => compareKeys(canonicalKey(a), canonicalKey(b)))).toEqual(rfc);
  });

  it('orders any two names as the label-by-label comparison does, escapes and bad names included', () => {
    const names = [
      '.',
      '',
      'a.',
      'a',
      'a..b.',
      '.a.',
      `${'x'.repeat(63)}.`,
      `${'x'.repeat(64)}.`,
      `${'a'.repeat(63)}.`.repeat(4),
      `${'a'.repeat(62)}.`.repeat(4),
      'a\\.b.example.',
      'a\\000b.c.',
      'ab.c.',
      'a.c.',
      'b.c.',
      'a-b.c.',
      '\\255.c.',
    ];
    // A deterministic spread of short names over the characters that matter.
    const alphabet = 'ab.-*\\09';
    for (let i = 0; i < 3000; i++) {
      let s = '';
      for (let k = i, n = 1 + (i % 9); n > 0; n--, k = Math.floor(k / alphabet.length) + n * 7)
        s += alphabet[k % alphabet.length];
      names.push(s);
    }
    const wrong: string[] = [];
    for (let i = 1; i < names.length; i++) {
      const [a, b] = [names[i - 1]!, names[i]!];
      if (Math.sign(compareKeys(canonicalKey(a), canonicalKey(b))) !== Math.sign(compareByLabels(a, b)))
        wrong.push(`${JSON.stringify(a)} vs ${JSON.stringify(b)}`);
    }
    expect(wrong).toEqual([]);
  });

  it('counts labels', () => {
    expect([labelCount('.'), labelCount('example.org.'), labelCount('a\\.b.org.')]).toEqual([0, 2, 2]);
  });
});

describe('Elem', () => {
  it('keeps each type’s records in insertion order, and the types in first-seen order', () => {
    const rr = (type: number, data: string): RR => ({
      lname: 'a.example.',
      type,
      answer: { name: 'a.example.', type: 'A', ttl: 1, data },
    });
    const e = new Elem('a.example.');
    expect(e.type(1)).toEqual([]);
    e.insert(rr(1, '192.0.2.1'));
    e.insert(rr(16, 'x'));
    e.insert(rr(1, '192.0.2.2'));
    const data = (r: RR): unknown => ('data' in r.answer ? r.answer.data : undefined);
    expect(e.type(1).map(data)).toEqual(['192.0.2.1', '192.0.2.2']);
    expect(e.rrsets().map((s) => s.map(data))).toEqual([['192.0.2.1', '192.0.2.2'], ['x']]);
    expect(e.type(28)).toEqual([]);
  });
});
