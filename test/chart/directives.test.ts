/**
 * charts/clusterdns/files/directives.txt lists the directives the binary knows, so that
 * `helm template` refuses a Corefile naming any other (the pods would exit at startup). It is
 * generated from the plugin registry by `npm run chart:directives`; this test keeps it equal to
 * the registry, in the registry's order, so it cannot go stale.
 */
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { PLUGINS } from '../../plugins/index.js';
import { CHART_DIR } from './helm.js';

describe('charts/clusterdns/files/directives.txt', () => {
  const text = readFileSync(path.join(CHART_DIR, 'files/directives.txt'), 'utf8');
  const listed = text
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#'));

  it('equals the plugin registry (regenerate with `npm run chart:directives`)', () => {
    expect(listed).toEqual(PLUGINS.map((p) => p.name));
  });

  it('says how it is generated', () => {
    expect(text).toContain('npm run chart:directives');
  });
});
