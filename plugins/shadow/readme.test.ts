/** The README's Syntax block, examples and metric list must not drift from the code. */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { DIFF_KINDS, TOLERANCE_RULES } from '../../src/dnscompare/index.js';
import { registry } from '../../src/metrics/registry.js';
import { dispenserFor } from '../../test/helpers/setup.js';
import { shadowMetrics } from './metrics.js';
import { parseShadow } from './setup.js';

const readme = readFileSync(new URL('./README.md', import.meta.url), 'utf8');

const SAMPLES: Record<string, string> = {
  fraction: 'fraction 0.5',
  timeout: 'timeout 1s',
  ignore: 'ignore ttl flags:AA loadbalance-shuffle',
  max_outstanding: 'max_outstanding 10',
  log_rate: 'log_rate 5 1m',
};

describe('shadow README', () => {
  it('every documented option parses', () => {
    const block = readme.split('~~~').find((b) => /shadow REFERENCE\.\.\. \{/.test(b))!;
    const words = block
      .split('\n')
      .slice(1)
      .filter((l) => !l.trim().endsWith('{'))
      .map((l) => l.trim().split(/\s+/)[0]!)
      .filter((w) => /^[a-z_]+$/.test(w));
    expect(words.sort()).toEqual(Object.keys(SAMPLES).sort());
    const body = words.map((w) => SAMPLES[w]).join('\n ');
    expect(() => parseShadow(dispenserFor(`shadow 127.0.0.1 {\n ${body}\n}`, 'shadow'))).not.toThrow();
  });

  it('the shadow stanzas of the examples parse', () => {
    const stanzas = [...readme.matchAll(/^ {4}shadow [^\n]*\{\n(?: {8}[^\n]*\n)* {4}\}$/gm)].map((m) => m[0]);
    expect(stanzas.length).toBe(2);
    for (const s of stanzas) expect(() => parseShadow(dispenserFor(s, 'shadow')), s).not.toThrow();
  });

  it('names only real difference kinds and tolerance rules, and every metric', () => {
    const kindsLine = /\* a \*\*KIND\*\* of difference: ([^;]+);/.exec(readme.replace(/\n\s+/g, ' '))![1]!;
    const kinds = [...kindsLine.matchAll(/`([a-z]+)`/g)].map((m) => m[1]!);
    expect(kinds.length).toBeGreaterThan(10);
    for (const k of kinds) expect(DIFF_KINDS, k).toContain(k);
    const rulesLine = /\* a tolerance \*\*RULE\*\* id [^(]*\(([^)]+)\)/.exec(readme.replace(/\n\s+/g, ' '))![1]!;
    const ids = [...rulesLine.matchAll(/`([a-z-]+)`/g)].map((m) => m[1]!);
    expect(ids.length).toBeGreaterThan(1);
    for (const id of ids)
      expect(
        TOLERANCE_RULES.map((r) => r.id),
        id,
      ).toContain(id);
    shadowMetrics();
    const names = registry
      .getMetricsAsArray()
      .map((m) => m.name)
      .filter((n) => n.startsWith('clusterdns_shadow_'));
    expect(names.length).toBe(9);
    for (const n of names) expect(readme).toContain(`\`${n}`);
  });
});
