/**
 * Node's bundled undici (its `fetch`/WebSocket client) stays out of the server. On Node 24 an ES
 * import of `node:http` reads the lazy `http.WebSocket` getter and loads undici: about 5 MiB of RSS
 * per process and per query thread for a client nothing here uses (src/util/require.ts,
 * docs/multicore.md §8). The check runs on the runtime running the suite: Node 20 in `npm test`,
 * Node 24 in `npm run test:node24`, where the control shows the trap is real.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';

const DIST = resolve(import.meta.dirname, '../../dist');

/** Run `body` as an ES module in a fresh process of this runtime; its output is one JSON value. */
function probe(body: string): { undici: boolean; httpHasWebSocketGetter: boolean } {
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', `${body}
const http = process.getBuiltinModule('node:http');
const d = Object.getOwnPropertyDescriptor(http, 'WebSocket');
console.log(JSON.stringify({ undici: process.moduleLoadList.some((m) => m.includes('undici')), httpHasWebSocketGetter: typeof d?.get === 'function' }));
`], { encoding: 'utf8', timeout: 60_000 });
  if (r.status !== 0) throw new Error(`probe failed (${r.status}): ${r.stderr}`);
  return JSON.parse(r.stdout.trim().split('\n').at(-1)!) as { undici: boolean; httpHasWebSocketGetter: boolean };
}

describe('built-in modules the server loads', () => {
  it('every plugin and the server core load without Node\'s bundled undici', () => {
    const files = ['plugins/index.js', 'src/serve.js', 'src/server/sidelistener.js', 'plugins/kubernetes/client.js'];
    for (const f of files) {
      if (!existsSync(join(DIST, f))) throw new Error(`dist/${f} is missing: run \`npm run build\` first (\`npm test\` does)`);
    }
    const imports = files.map((f) => `await import(${JSON.stringify(pathToFileURL(join(DIST, f)).href)});`).join('\n');
    expect(probe(imports).undici).toBe(false);
  });

  it('control: on a runtime whose http has a lazy WebSocket getter, an ES import of node:http loads undici', () => {
    const r = probe("await import('node:http');");
    expect(r.undici).toBe(r.httpHasWebSocketGetter);
  });
});
