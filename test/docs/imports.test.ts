/**
 * No file under plugins/A/ imports from plugins/B/ (docs/ARCHITECTURE.md, "Capabilities"): a plugin
 * reaches another only through `ctx.provide`/`ctx.lookup`, shared code lives in src/, and tests that
 * exercise several plugins together live in test/. Static imports, re-exports and dynamic
 * `import()` of every .ts file (tests and benchmarks included) are checked.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { describe, expect, it } from 'vitest';
import { specifiers } from '../helpers/imports.js';

const ROOT = resolve(import.meta.dirname, '../..');
const PLUGINS = join(ROOT, 'plugins');

/** The plugin folder a path lies in (`cache` for plugins/cache/x.ts), or null outside plugins/<name>/. */
function pluginOf(path: string): string | null {
  const rel = relative(PLUGINS, path);
  if (rel.startsWith('..') || !rel.includes(sep)) return null;
  return rel.split(sep)[0]!;
}

/** `file: specifier` for every import of a file of plugins/A/ that resolves into plugins/B/. */
export function crossImports(file: string, source: string): string[] {
  const own = pluginOf(file);
  if (own === null) return [];
  const bad: string[] = [];
  for (const spec of specifiers(source)) {
    if (!spec.startsWith('.')) continue;
    const target = pluginOf(resolve(dirname(file), spec));
    if (target !== null && target !== own) bad.push(`${relative(ROOT, file)}: ${spec}`);
  }
  return bad;
}

function tsFiles(dir: string): string[] {
  const out: string[] = [];
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) out.push(...tsFiles(p));
    else if (e.name.endsWith('.ts')) out.push(p);
  }
  return out;
}

describe('plugin folders', () => {
  it('no file under plugins/A/ imports from plugins/B/', () => {
    const files = tsFiles(PLUGINS);
    expect(files.length).toBeGreaterThan(50);
    const bad = files.flatMap((f) => crossImports(f, readFileSync(f, 'utf8')));
    expect(bad).toEqual([]);
  });

  it('the check sees every form of import', () => {
    const file = join(PLUGINS, 'autopath', 'index.ts');
    const src = [
      "import { a } from '../kubernetes/index.js';",
      "import type { B } from '../kubernetes/types.js';",
      "export { c } from '../cache/handler.js';",
      "import '../loop/loop.js';",
      "const m = await import('../forward/proxy.js');",
      "import { own } from './handler.js';",
      "import { core } from '../../src/plugin.js';",
      "import { registry } from '../index.js';",
    ].join('\n');
    expect(crossImports(file, src)).toEqual([
      'plugins/autopath/index.ts: ../kubernetes/index.js',
      'plugins/autopath/index.ts: ../kubernetes/types.js',
      'plugins/autopath/index.ts: ../cache/handler.js',
      'plugins/autopath/index.ts: ../loop/loop.js',
      'plugins/autopath/index.ts: ../forward/proxy.js',
    ]);
    // A nested file reaching into another plugin through ../../plugins/ is caught too.
    expect(
      crossImports(
        join(PLUGINS, 'forward', 'testdata', 'x.ts'),
        "import { y } from '../../../plugins/cache/setup.js';",
      ),
    ).toHaveLength(1);
  });
});
