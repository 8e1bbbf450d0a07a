/**
 * What the server loads, checked on the built code (dist/).
 *
 * Node's bundled undici (its `fetch`/WebSocket client) stays out of the server. On Node 24 an ES
 * import of `node:http` reads the lazy `http.WebSocket` getter and loads undici: about 5 MiB of RSS
 * per process and per query thread for a client nothing here uses (src/util/require.ts,
 * docs/multicore.md §8). The check runs on the runtime running the suite (Node 24, where the
 * control shows the trap is real).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';

const DIST = resolve(import.meta.dirname, '../../dist');

/** Run `body` as an ES module in a fresh process of this runtime; its output is one JSON value. */
function probe(body: string): { undici: boolean; httpHasWebSocketGetter: boolean } {
  const r = spawnSync(
    process.execPath,
    [
      '--input-type=module',
      '-e',
      `${body}
const http = process.getBuiltinModule('node:http');
const d = Object.getOwnPropertyDescriptor(http, 'WebSocket');
console.log(JSON.stringify({ undici: process.moduleLoadList.some((m) => m.includes('undici')), httpHasWebSocketGetter: typeof d?.get === 'function' }));
`,
    ],
    { encoding: 'utf8', timeout: 60_000 },
  );
  if (r.status !== 0) throw new Error(`probe failed (${r.status}): ${r.stderr}`);
  return JSON.parse(r.stdout.trim().split('\n').at(-1)!) as { undici: boolean; httpHasWebSocketGetter: boolean };
}

describe('built-in modules the server loads', () => {
  it("every plugin and the server core load without Node's bundled undici", () => {
    const files = ['plugins/index.js', 'src/serve.js', 'src/server/sidelistener.js', 'plugins/kubernetes/client.js'];
    for (const f of files) {
      if (!existsSync(join(DIST, f)))
        throw new Error(`dist/${f} is missing: run \`npm run build\` first (\`npm test\` does)`);
    }
    const imports = files.map((f) => `await import(${JSON.stringify(pathToFileURL(join(DIST, f)).href)});`).join('\n');
    expect(probe(imports).undici).toBe(false);
  });

  it('control: on a runtime whose http has a lazy WebSocket getter, an ES import of node:http loads undici', () => {
    const r = probe("await import('node:http');");
    expect(r.undici).toBe(r.httpHasWebSocketGetter);
  });
});

/**
 * What a query thread loads (docs/multicore.md §2): a module in an isolate costs RSS in every
 * thread that loads it, so what only the main thread uses (TLS for the API client and the side
 * listeners, prom-client's Pushgateway and default collectors, the YAML parser of web configs)
 * is loaded where it is used. The probe imports, in a worker marked as a query thread, what a
 * thread imports, starts a server whose prometheus block has a TLS web config (naming cert files
 * that do not exist), and lists what got loaded; the same steps in the main thread are the
 * control, where reading that web config fails the start.
 */
interface Loaded {
  builtins: string[];
  files: string[];
  startError: string | null;
}

function loadedBy(asThread: boolean): Loaded {
  const url = (f: string): string => JSON.stringify(pathToFileURL(join(DIST, f)).href);
  const dir = mkdtempSync(join(tmpdir(), 'clusterdns-loaded-'));
  writeFileSync(join(dir, 'web.yml'), 'tls_server_config:\n  cert_file: missing.crt\n  key_file: missing.key\n');
  const corefile = `.:0 {\n    prometheus 127.0.0.1:0 {\n        tls ${join(dir, 'web.yml')}\n    }\n    whoami\n}\n`;
  const steps = `
    const { Server } = await import(${url('src/server/server.js')});
    await import(${url('src/server/replication.js')});
    const server = new Server({ dnsPort: 0, quiet: true, follower: ${asThread}, loadSource: async () => ({ path: ${JSON.stringify(join(dir, 'Corefile'))}, text: ${JSON.stringify(corefile)} }) });
    let startError = null;
    try {
      await server.start();
      await server.shutdown();
    } catch (e) {
      startError = String(e && e.message);
    }
    return { startError, builtins: process.moduleLoadList.filter((m) => m.startsWith('NativeModule ')).map((m) => m.slice(13)), files: Object.keys(CJS_CACHE) };`;
  const body = asThread
    ? `import { Worker } from 'node:worker_threads';
const code = \`const { parentPort } = require('node:worker_threads'); (async () => { \${${JSON.stringify(steps.replace('CJS_CACHE', 'require.cache'))}} })().then((r) => parentPort.postMessage(r));\`;
const w = new Worker(code, { eval: true, execArgv: [], workerData: { clusterdnsQueryThread: true } });
w.on('message', (r) => { console.log(JSON.stringify(r)); process.exit(0); });
w.on('error', (e) => { console.error(e); process.exit(1); });`
    : `import { createRequire } from 'node:module';
console.log(JSON.stringify(await (async () => { ${steps.replace('CJS_CACHE', 'createRequire(import.meta.url).cache')} })()));`;
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', body], { encoding: 'utf8', timeout: 60_000 });
  rmSync(dir, { recursive: true, force: true });
  if (r.status !== 0) throw new Error(`probe failed (${r.status}): ${r.stderr}`);
  return JSON.parse(r.stdout.trim().split('\n').at(-1)!) as Loaded;
}

const MAIN_THREAD_ONLY = {
  builtins: ['tls', 'https'],
  files: [
    /prom-client\/lib\/pushgateway\.js$/,
    /prom-client\/lib\/defaultMetrics\.js$/,
    /node_modules\/yaml\//,
    /node_modules\/@opentelemetry\//,
  ],
};

describe('what a query thread loads', () => {
  it('no TLS, no Pushgateway, no default collectors, no YAML parser', () => {
    const t = loadedBy(true);
    // The web config is the main thread's to read: the thread starts without touching it.
    expect(t.startError).toBeNull();
    expect(t.files.some((f) => f.includes('prom-client/lib/counter.js'))).toBe(true);
    for (const b of MAIN_THREAD_ONLY.builtins) expect(t.builtins, b).not.toContain(b);
    for (const re of MAIN_THREAD_ONLY.files)
      expect(
        t.files.filter((f) => re.test(f)),
        String(re),
      ).toEqual([]);
  });

  it('control: the main thread, running the same steps, loads the default collectors and reads the web config', () => {
    const m = loadedBy(false);
    expect(m.files.some((f) => /prom-client\/lib\/defaultMetrics\.js$/.test(f))).toBe(true);
    expect(m.files.some((f) => /node_modules\/yaml\//.test(f))).toBe(true);
    expect(m.startError).toMatch(/plugin\/prometheus: .*missing\.crt/);
  });
});
