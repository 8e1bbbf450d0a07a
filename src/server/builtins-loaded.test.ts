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
    // The registry loads a plugin's code on first use (plugins/index.ts): load every one.
    const everyPlugin = `for (const p of (await import(${JSON.stringify(pathToFileURL(join(DIST, files[0]!)).href)})).PLUGINS) await p.load();`;
    expect(probe(`${imports}\n${everyPlugin}`).undici).toBe(false);
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
  /** The ES modules of dist/ the steps imported, relative to dist/ (`plugins/whoami/index.js`). */
  modules: string[];
  startError: string | null;
}

/**
 * Installs a module resolve hook in the thread that runs it (Node's in-thread `registerHooks`) that
 * records every URL an import resolves to, into `SEEN`.
 */
const RECORD_IMPORTS = `const SEEN = []; process.getBuiltinModule('node:module').registerHooks({ resolve(s, c, next) { const r = next(s, c); SEEN.push(r.url); return r; } });`;

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
    const dist = ${url('')} + '/';
    return { startError, modules: [...new Set(SEEN.filter((u) => u.startsWith(dist)).map((u) => u.slice(dist.length)))], builtins: process.moduleLoadList.filter((m) => m.startsWith('NativeModule ')).map((m) => m.slice(13)), files: Object.keys(CJS_CACHE) };`;
  const body = asThread
    ? `import { Worker } from 'node:worker_threads';
const code = \`const { parentPort } = require('node:worker_threads'); \${${JSON.stringify(RECORD_IMPORTS)}} (async () => { \${${JSON.stringify(steps.replace('CJS_CACHE', 'require.cache'))}} })().then((r) => parentPort.postMessage(r));\`;
const w = new Worker(code, { eval: true, execArgv: [], workerData: { clusterdnsQueryThread: true } });
w.on('message', (r) => { console.log(JSON.stringify(r)); process.exit(0); });
w.on('error', (e) => { console.error(e); process.exit(1); });`
    : `import { createRequire } from 'node:module';
${RECORD_IMPORTS}
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

/** Each probe runs once (it starts a process) and serves several checks. */
const runs = new Map<boolean, Loaded>();
function loaded(asThread: boolean): Loaded {
  let r = runs.get(asThread);
  if (!r) runs.set(asThread, (r = loadedBy(asThread)));
  return r;
}

/** The plugin folders whose code (anything but the metric families, `metrics.js`) was imported. */
function pluginCode(modules: readonly string[]): string[] {
  const folders = new Set<string>();
  for (const m of modules) {
    const match = /^plugins\/([^/]+)\/(.+)$/.exec(m);
    if (match && match[2] !== 'metrics.js') folders.add(match[1]!);
  }
  return [...folders].sort();
}

describe('what a query thread loads', () => {
  it('no TLS, no Pushgateway, no default collectors, no YAML parser', () => {
    const t = loaded(true);
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
    const m = loaded(false);
    expect(m.files.some((f) => /prom-client\/lib\/defaultMetrics\.js$/.test(f))).toBe(true);
    expect(m.files.some((f) => /node_modules\/yaml\//.test(f))).toBe(true);
    expect(m.startError).toMatch(/plugin\/prometheus: .*missing\.crt/);
  });

  it('only the plugins the Corefile names load their code, in a query thread and in the main thread; every family is registered', () => {
    // plugins/index.ts loads a plugin's module when a Corefile first names it; plugins/metrics.ts
    // registers every plugin's metric families all the same (CoreDNS lists them all).
    for (const r of [loaded(true), loaded(false)]) {
      expect(pluginCode(r.modules)).toEqual(['prometheus', 'whoami']);
      for (const p of ['cache', 'forward', 'kubernetes', 'reload'])
        expect(r.modules, `${p}'s metric families`).toContain(`plugins/${p}/metrics.js`);
    }
  });
});
