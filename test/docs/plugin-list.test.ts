/**
 * The plugin list in the docs is the binary's: docs/corefile.md §8.2's table names every plugin of
 * the registry in chain order, `bin/clusterdns -plugins` prints the same set, docs/plugins.md
 * gives the same count and a section for each plugin, and docs/corefile.md's compatibility table
 * counts them alike. A plugin added without its docs fails here.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { PLUGINS } from '../../plugins/index.js';

const ROOT = resolve(import.meta.dirname, '../..');
const doc = (path: string): string => readFileSync(resolve(ROOT, path), 'utf8');

/** The plugin names of docs/corefile.md §8.2's order table, top to bottom. */
function orderTable(): string[] {
  const text = doc('docs/corefile.md');
  const start = text.indexOf('### 8.2 ');
  const section = text.slice(start, text.indexOf('\n### ', start + 1));
  return [...section.matchAll(/^\| (\d+) \| ([a-z0-9_]+) \|/gm)].map((m) => m[2]!);
}

describe('the documented plugin list', () => {
  const registry = PLUGINS.map((p) => p.name);

  it('docs/corefile.md §8.2 lists the registry in chain order, numbered 1..N', () => {
    expect(orderTable()).toEqual(registry);
  });

  it('equals what `bin/clusterdns -plugins` prints', () => {
    const out = execFileSync(process.execPath, [resolve(ROOT, 'bin/clusterdns'), '-plugins'], { encoding: 'utf8' });
    // Sorted, with Caddy's generic `on` last, as CoreDNS lists it.
    const names = orderTable();
    const sorted = [...names.filter((n) => n !== 'on')].sort();
    if (names.includes('on')) sorted.push('on');
    expect(out.split('\n').filter((l) => l !== '')).toEqual(sorted);
  });

  it('docs/plugins.md counts them and has a section for each', () => {
    const text = doc('docs/plugins.md');
    expect(text).toMatch(new RegExp(`clusterdns has ${registry.length} plugins`));
    const headings = new Set([...text.matchAll(/^#{2,3} ([a-z0-9_]+)$/gm)].map((m) => m[1]!));
    expect(registry.filter((n) => !headings.has(n))).toEqual([]);
  });

  it('docs/corefile.md counts them where it compares the plugin set with CoreDNS', () => {
    expect(doc('docs/corefile.md')).toMatch(new RegExp(`\\| Plugin set \\|[^|]*\\| the ${registry.length} of §8\\.2 `));
  });
});
