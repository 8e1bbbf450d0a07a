/** The README's Syntax block and the parser must not drift apart (docs/plugins.md, "Plugin READMEs"). */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { dispenserFor } from '../../test/helpers/setup.js';
import { parseCache } from './setup.js';

function syntaxKeywords(readme: string, opener: RegExp): string[] {
  const blocks = readme.split('~~~');
  const block = blocks.find((b) => opener.test(b) && b.includes('{'));
  if (!block) throw new Error('syntax block not found');
  return block
    .split('\n')
    .slice(1)
    .filter((l) => !l.trim().endsWith('{'))
    .map((l) => l.trim().split(/\s+/)[0]!)
    .filter((w) => /^[a-z_]+$/.test(w));
}

const CACHE_SAMPLES: Record<string, string> = {
  success: 'success 100 60 1',
  denial: 'denial 100 60 1',
  prefetch: 'prefetch 2 1m 20%',
  serve_stale: 'serve_stale 1h immediate 0s 1m',
  serve_stale_policy: 'serve_stale_policy prefer_positive',
  servfail: 'servfail 1s',
  disable: 'disable success example.org',
  keepttl: 'keepttl',
};

describe('README syntax block', () => {
  it('cache: every documented option parses', () => {
    const words = syntaxKeywords(
      readFileSync(new URL('./README.md', import.meta.url), 'utf8'),
      /cache \[TTL\] \[ZONES\.\.\.\] \{/,
    );
    expect(words.sort()).toEqual(Object.keys(CACHE_SAMPLES).sort());
    const body = words.map((w) => CACHE_SAMPLES[w]).join('\n ');
    expect(() => parseCache(dispenserFor(`cache {\n ${body}\n}`, 'cache'))).not.toThrow();
  });
});
