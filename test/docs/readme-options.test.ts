/**
 * Every plugin declares its block options as data (src/corefile/options.ts), and its README's Syntax
 * section documents exactly those options: a documented option the parser rejects, or an accepted
 * option nobody documented, fails here (docs/corefile.md, "Declared options").
 */
import { existsSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { PLUGINS } from '../../plugins/index.js';
import { readmeOptionNames } from '../../src/corefile/options.js';

describe('README Syntax blocks match the declared options', () => {
  for (const entry of PLUGINS) {
    it(entry.name, async () => {
      const def = await entry.load();
      const path = new URL(`../../plugins/${def.name}/README.md`, import.meta.url);
      expect(existsSync(path), `plugins/${def.name}/README.md`).toBe(true);
      expect(def.options, `${def.name} declares its options`).toBeDefined();
      const documented = readmeOptionNames(readFileSync(path, 'utf8')).sort();
      const declared = (def.options?.options ?? []).map((o) => o.name).sort();
      expect(documented, 'documented in the README vs declared').toEqual(declared);
      expect(def.options?.name).toBe(def.name);
    });
  }
});
