/**
 * What `npm run build` compiles into dist/ (and so into the image) is the product: every file
 * tsconfig.build.json lists is reachable by imports from an entry point. Test support — fixtures,
 * record vectors, the sandbox's test kit, the fault proxy — stays out, as do tests themselves.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { specifiers } from '../helpers/imports.js';

const ROOT = resolve(import.meta.dirname, '../..');

/**
 * Where the product starts: the server, a query thread (started by URL), the sandbox API server
 * and `npm start`'s dev runner; src/util/heap.ts and src/util/nodecache-v8.ts are loaded by
 * bin/clusterdns before dist/ is (the heap sizing and node-cache's V8 flags of the process it starts).
 */
const ENTRY_POINTS = [
  'src/main.ts',
  'src/server/thread-entry.ts',
  'sandbox/main.ts',
  'tools/dev.ts',
  'src/util/heap.ts',
  'src/util/nodecache-v8.ts',
];

function buildFiles(): string[] {
  const tsc = resolve(ROOT, 'node_modules/typescript/bin/tsc');
  const out = execFileSync(process.execPath, [tsc, '-p', 'tsconfig.build.json', '--listFilesOnly'], {
    cwd: ROOT,
    encoding: 'utf8',
  });
  return out
    .split('\n')
    .filter((f) => f.startsWith(ROOT) && !f.includes('/node_modules/'))
    .map((f) => relative(ROOT, f));
}

/** Files reachable from the entry points through relative imports (static and dynamic). */
function reachable(): Set<string> {
  const seen = new Set<string>();
  const todo = [...ENTRY_POINTS];
  for (let f = todo.pop(); f !== undefined; f = todo.pop()) {
    if (seen.has(f)) continue;
    seen.add(f);
    for (const spec of specifiers(readFileSync(resolve(ROOT, f), 'utf8'))) {
      if (!spec.startsWith('.')) continue;
      const target = relative(ROOT, resolve(ROOT, dirname(f), spec)).replace(/\.js$/, '.ts');
      if (existsSync(resolve(ROOT, target))) todo.push(target);
    }
  }
  return seen;
}

describe('the build', () => {
  const files = buildFiles();
  it('compiles only files the product reaches from its entry points', () => {
    expect(files).toContain('src/main.ts');
    const product = reachable();
    expect(files.filter((f) => !product.has(f))).toEqual([]);
  });

  it('leaves out tests and their support files', () => {
    expect(files.filter((f) => /\.test\.ts$|testdata|testutil|testkit|vectors\.ts$|faultproxy/.test(f))).toEqual([]);
  });
});
