/** The registry: CoreDNS's plugin order, and directives CoreDNS has but clusterdns lacks named as such. */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../src/corefile/types.js';
import { buildInstance } from '../src/server/instance.js';
import { SharedResources } from '../src/server/shared.js';
import { FakeCore } from '../test/helpers/setup.js';
import { DIRECTIVE_ORDER, PLUGINS, isForeignDirective } from './index.js';

/**
 * A directive of CoreDNS's plugin.cfg the registry lacks, if any is left (issue #29 adds the last
 * ones; when every one is there, the two cases below check that none is called foreign instead).
 */
const LACKING = DIRECTIVE_ORDER.find((n) => !PLUGINS.some((p) => p.name === n));

describe('plugin registry', () => {
  it('runs plugins in DIRECTIVE_ORDER', () => {
    const idx = PLUGINS.map((p) => DIRECTIVE_ORDER.indexOf(p.name));
    expect(idx.every((i) => i >= 0)).toBe(true);
    expect([...idx].sort((a, b) => a - b)).toEqual(idx);
  });

  it('docs/corefile.md §8.2 lists every plugin in chain order', () => {
    const doc = readFileSync(new URL('../docs/corefile.md', import.meta.url), 'utf8');
    const section = doc.slice(doc.indexOf('### 8.2'), doc.indexOf('### 8.3'));
    const rows = [...section.matchAll(/^\| \d+ \| ([a-z0-9_]+) \|/gm)].map((m) => m[1]);
    expect(rows).toEqual(PLUGINS.map((p) => p.name));
  });

  it('knows a CoreDNS directive it lacks from a typo', () => {
    if (LACKING === undefined) expect(DIRECTIVE_ORDER.filter(isForeignDirective)).toEqual([]);
    else expect(isForeignDirective(LACKING)).toBe(true);
    expect(isForeignDirective('nomadd')).toBe(false);
    expect(isForeignDirective('forward')).toBe(false);
  });

  it('rejects a CoreDNS plugin it lacks with the reason', async () => {
    const shared = new SharedResources();
    const opts = {
      dnsPort: 1053,
      shared,
      env: {},
      process: { corefilePath: 'Corefile', dnsPort: 1053, version: 'test', queryThread: false },
      services: new FakeCore(),
    };
    const failure = async (text: string): Promise<string> => {
      try {
        await buildInstance({ path: 'Corefile', text }, opts);
      } catch (e) {
        return e instanceof ConfigError ? e.describe() : String(e);
      }
      return 'no error';
    };
    if (LACKING !== undefined) {
      expect(await failure(`.:1053 {\n ${LACKING}\n whoami\n}\n`)).toBe(
        `Corefile:2 - Error during parsing: Unknown directive '${LACKING}' (a CoreDNS plugin clusterdns does not implement)`,
      );
    }
    expect(await failure('.:1053 {\n nomadd\n whoami\n}\n')).toBe(
      "Corefile:2 - Error during parsing: Unknown directive 'nomadd'",
    );
  });
});
