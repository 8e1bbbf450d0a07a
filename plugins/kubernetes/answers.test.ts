import { describe, expect, it } from 'vitest';
import { AnswerCache, negativeEntry } from './answers.js';
import { changeKey } from './changekeys.js';

const entry = (lname: string) => negativeEntry(lname, 1, 'cluster.local.', 5, 5, true);

describe('AnswerCache', () => {
  it('drops exactly the replies computed from a changed object and reports those in use', () => {
    const c = new AnswerCache();
    c.set(
      1,
      'a.cluster.local.',
      entry('a.cluster.local.'),
      new Set([changeKey.service('a'), changeKey.namespace('ns')]),
    );
    c.set(
      1,
      'b.cluster.local.',
      entry('b.cluster.local.'),
      new Set([changeKey.service('b'), changeKey.namespace('ns')]),
    );
    c.set(28, 'a.cluster.local.', entry('a.cluster.local.'), new Set([changeKey.service('a')]));
    expect(c.lookup(1, 'a.cluster.local.')).toBeDefined(); // in use
    expect(c.size).toBe(3);
    expect(c.invalidate(new Set([changeKey.service('a')]))).toEqual([{ qtype: 1, lname: 'a.cluster.local.' }]);
    expect(c.size).toBe(1);
    expect(c.get(28, 'a.cluster.local.')).toBeUndefined();
    expect(c.get(1, 'b.cluster.local.')).toBeDefined();
    // The dropped reply is gone from n:ns too: invalidating it touches b only.
    expect(c.invalidate(new Set([changeKey.namespace('ns')]))).toEqual([]);
    expect(c.size).toBe(0);
  });

  it('a rebuilt reply replaces the old one and keeps no link to the old dependencies', () => {
    const c = new AnswerCache();
    c.set(1, 'a.cluster.local.', entry('a.cluster.local.'), new Set([changeKey.service('a'), changeKey.slices('a')]));
    const fresh = entry('a.cluster.local.');
    c.set(1, 'a.cluster.local.', fresh, new Set([changeKey.service('a')]));
    expect(c.size).toBe(1);
    c.invalidate(new Set([changeKey.slices('a')])); // a dependency of the replaced reply only
    expect(c.get(1, 'a.cluster.local.')).toBe(fresh);
    c.invalidate(new Set([changeKey.service('a')]));
    expect(c.size).toBe(0);
  });

  it('starts over when full', () => {
    const c = new AnswerCache(2);
    c.set(1, 'a.', entry('a.'), new Set([changeKey.service('x')]));
    c.set(1, 'b.', entry('b.'), new Set([changeKey.service('x')]));
    c.set(1, 'c.', entry('c.'), new Set([changeKey.service('x')]));
    expect(c.size).toBe(1);
    expect(c.get(1, 'c.')).toBeDefined();
  });
});

describe('AnswerCache replacing', () => {
  it('a full cache replacing an existing reply keeps the others, and the in-use mark', () => {
    const c = new AnswerCache(2);
    c.set(1, 'a.', entry('a.'), new Set([changeKey.service('x')]));
    c.set(1, 'b.', entry('b.'), new Set([changeKey.service('y')]));
    c.lookup(1, 'a.');
    c.set(1, 'a.', entry('a.'), new Set([changeKey.service('x')]));
    expect(c.size).toBe(2);
    expect(c.get(1, 'b.')).toBeDefined();
    expect(c.invalidate(new Set([changeKey.service('x')]))).toEqual([{ qtype: 1, lname: 'a.' }]);
  });
});
