import { describe, expect, it } from 'vitest';
import { normalizeLabelSelector, parseLabelSelector, SelectorError } from './labelselector.js';

describe('label selectors: one parser for the sandbox API server and the kubernetes plugin', () => {
  it('normalises to the API query form', () => {
    expect(normalizeLabelSelector('a=b, c notin (d),!e, f, g notin (x, y)')).toBe('a=b,c notin (d),!e,f,g notin (x,y)');
    expect(normalizeLabelSelector('a==b')).toBe('a=b');
    expect(normalizeLabelSelector('environment in (staging, qa),application=nginx')).toBe(
      'environment in (staging,qa),application=nginx',
    );
  });

  it('rejects what meta.ParseToLabelSelector rejects', () => {
    for (const bad of ['', 'a=b,', 'a in (', '-bad=x', 'a in (', 'x>y', 'a!=b'])
      expect(() => normalizeLabelSelector(bad), bad).toThrow(SelectorError);
    // CoreDNS 1.15.0's reasons, word for word (the API server itself accepts both in a query).
    expect(() => normalizeLabelSelector('replicas>2')).toThrow(`"gt" isn't supported in label selectors`);
    expect(() => normalizeLabelSelector('a=b,tier!=cache')).toThrow(`"!=" is not a valid label selector operator`);
  });

  it('reads `()` as the set of the empty value, as apimachinery does (CoreDNS 1.15.0 accepts it)', () => {
    expect(normalizeLabelSelector('a in ()')).toBe('a in ()');
    expect(normalizeLabelSelector('a notin ( )')).toBe('a notin ()');
    const labels: Record<string, string>[] = [{ a: '' }, { a: 'x' }, {}];
    expect(labels.map((l) => parseLabelSelector('a in ()')(l))).toEqual([true, false, false]);
    expect(labels.map((l) => parseLabelSelector(normalizeLabelSelector('a notin ()'))(l))).toEqual([false, true, true]);
  });

  it('the text it produces selects the same objects as the text it was given', () => {
    const text = 'app in (web, db), !legacy, tier notin (cache)';
    const labels: Record<string, string>[] = [
      { app: 'web' },
      { app: 'db', legacy: '' },
      { app: 'db', tier: 'cache' },
      { app: 'x' },
      { app: 'web', tier: 'front' },
    ];
    const a = parseLabelSelector(text);
    const b = parseLabelSelector(normalizeLabelSelector(text));
    expect(labels.map((l) => b(l))).toEqual(labels.map((l) => a(l)));
    expect(labels.map((l) => a(l))).toEqual([true, false, false, false, true]);
  });
});
