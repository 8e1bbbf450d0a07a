import { describe, expect, it } from 'vitest';
import { SelectorError, matchFields, parseFieldSelector, parseLabelSelector } from './selectors.js';

describe('label selectors', () => {
  const cases: [string, Record<string, string>, boolean][] = [
    ['app=web', { app: 'web' }, true],
    ['app=web', { app: 'db' }, false],
    ['app==web', { app: 'web' }, true],
    ['app!=web', {}, true],
    ['app!=web', { app: 'web' }, false],
    ['app in (web,db)', { app: 'db' }, true],
    ['app in (web,db)', {}, false],
    ['app notin (web,db)', {}, true],
    ['app notin (web, db)', { app: 'db' }, false],
    ['app', { app: '' }, true],
    ['!app', { app: '' }, false],
    ['!app', { other: 'x' }, true],
    ['app=web,tier', { app: 'web' }, false],
    ['app=web, tier', { app: 'web', tier: 'x' }, true],
    ['environment in (staging, qa),application=nginx', { environment: 'qa', application: 'nginx' }, true],
    ['example.com/team=a', { 'example.com/team': 'a' }, true],
    ['app=', { app: '' }, true],
    ['replicas>2', { replicas: '3' }, true],
    ['replicas>2', { replicas: '2' }, false],
    ['replicas<2', { replicas: '1' }, true],
    ['replicas<2', { replicas: 'x' }, false],
    ['', { anything: 'x' }, true],
  ];
  for (const [sel, labels, want] of cases) {
    it(`${JSON.stringify(sel)} on ${JSON.stringify(labels)} → ${want}`, () => {
      expect(parseLabelSelector(sel)(labels)).toBe(want);
    });
  }

  for (const bad of ['app in (', '=web', 'app=web,', 'app=-bad-', 'app notin web', 'a b', 'x>y', '!']) {
    it(`rejects ${JSON.stringify(bad)}`, () => {
      expect(() => parseLabelSelector(bad)).toThrow(SelectorError);
    });
  }
});

describe('field selectors', () => {
  const fields = (m: Record<string, string>) => (name: string) => m[name] ?? '';

  it('parses =, ==, != and escapes', () => {
    expect(parseFieldSelector('metadata.name=a,metadata.namespace!=b,status.phase==Running')).toEqual([
      { field: 'metadata.name', neg: false, value: 'a' },
      { field: 'metadata.namespace', neg: true, value: 'b' },
      { field: 'status.phase', neg: false, value: 'Running' },
    ]);
    expect(parseFieldSelector('metadata.name=a\\,b\\=c')).toEqual([
      { field: 'metadata.name', neg: false, value: 'a,b=c' },
    ]);
    expect(parseFieldSelector('')).toEqual([]);
    expect(() => parseFieldSelector('metadata.name')).toThrow(SelectorError);
    expect(() => parseFieldSelector('metadata.name=a\\b')).toThrow(SelectorError);
  });

  it('matches all requirements', () => {
    const reqs = parseFieldSelector('status.phase!=Succeeded,status.phase!=Failed');
    expect(matchFields(reqs, fields({ 'status.phase': 'Running' }))).toBe(true);
    expect(matchFields(reqs, fields({ 'status.phase': 'Failed' }))).toBe(false);
    expect(matchFields(reqs, fields({}))).toBe(true);
    expect(matchFields(parseFieldSelector('metadata.name=x'), fields({ 'metadata.name': 'y' }))).toBe(false);
  });
});
