/**
 * Credential resolution in the helper process (credentials.ts, run from dist/ — `npm test` builds
 * first), the parent's token rotation and re-resolution (client.ts), and the guarantee that the
 * server process itself never loads @kubernetes/client-node.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { ApiClient, credentialHelperPath, resolveCredentials } from './client.js';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  vi.useRealTimers();
  while (cleanups.length) await cleanups.pop()!();
});

const base = { endpoint: null, tls: null, qps: 0, burst: 0, maxInflight: 0 };
const DIST = fileURLToPath(new URL('../../dist/', import.meta.url));

beforeAll(() => {
  if (!existsSync(credentialHelperPath())) throw new Error('dist/ is missing: run `npm run build` before these tests');
});

function tmp(): string {
  return mkdtempSync(join(tmpdir(), 'k8s-cred-'));
}

const b64 = (s: string): string => Buffer.from(s).toString('base64');

/** An API server stand-in that records the Authorization header of each request. */
interface AuthServer {
  url: string;
  seen: (string | undefined)[];
  /** Answer the next N requests with 401. */
  reject: number;
}

async function authServer(): Promise<AuthServer> {
  const st: AuthServer = { url: '', seen: [], reject: 0 };
  const srv = http.createServer((req, res) => {
    st.seen.push(req.headers.authorization);
    if (st.reject > 0) {
      st.reject--;
      res.writeHead(401, { 'content-type': 'application/json' }).end('{"kind":"Status","code":401}');
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' }).end('{"items":[]}');
  });
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  st.url = `http://127.0.0.1:${(srv.address() as AddressInfo).port}`;
  cleanups.push(() => new Promise<void>((r) => srv.close(() => r())));
  return st;
}

/** GET once and return the status (the body is drained). */
async function get(c: ApiClient): Promise<number> {
  const res = await c.get('/api/v1/services?limit=500', new AbortController().signal, 10_000);
  res.resume();
  return res.statusCode ?? 0;
}

function kubeconfigFile(
  dir: string,
  server: string,
  user: string,
  clusterExtra = '    insecure-skip-tls-verify: true',
): string {
  const path = join(dir, 'config');
  writeFileSync(
    path,
    `apiVersion: v1
kind: Config
clusters:
- name: c
  cluster:
    server: ${server}
${clusterExtra}
users:
- name: u
  user:
${user}
contexts:
- name: ctx
  context: { cluster: c, user: u }
current-context: ctx
`,
  );
  return path;
}

/**
 * A kubeconfig whose user runs `script` as an exec credential plugin (node, with the path of a
 * file the script may use to count its runs as its argument).
 */
function execKubeconfig(server: string, script: string): { path: string; counter: string } {
  const dir = tmp();
  const counter = join(dir, 'count');
  const plugin = join(dir, 'plugin.mjs');
  writeFileSync(plugin, script);
  const path = kubeconfigFile(
    dir,
    server,
    `    exec:
      apiVersion: client.authentication.k8s.io/v1
      command: ${JSON.stringify(process.execPath)}
      args: [${JSON.stringify(plugin)}, ${JSON.stringify(counter)}]
      interactiveMode: Never`,
  );
  return { path, counter };
}

describe('credential helper (client-node KubeConfig in a child process)', () => {
  it('kubeconfig with token, CA, client certificate, server name and impersonation', async () => {
    const dir = tmp();
    const path = kubeconfigFile(
      dir,
      'https://10.0.0.1:6443',
      `    token: abc
    client-certificate-data: ${b64('CERT PEM\n')}
    client-key-data: ${b64('KEY PEM\n')}
    as: bob`,
      `    certificate-authority-data: ${b64('CA PEM\n')}
    tls-server-name: api.example`,
    );
    const c = await resolveCredentials({ mode: 'kubeconfig', path, context: null });
    expect(c).toEqual({
      server: 'https://10.0.0.1:6443',
      ca: 'CA PEM\n',
      cert: 'CERT PEM\n',
      key: 'KEY PEM\n',
      servername: 'api.example',
      headers: { Authorization: 'Bearer abc', 'Impersonate-User': 'bob' },
    });
  });

  it('kubeconfig with client certificate files (relative to the kubeconfig) and basic auth', async () => {
    const dir = tmp();
    writeFileSync(join(dir, 'client.crt'), 'CERT FILE\n');
    writeFileSync(join(dir, 'client.key'), 'KEY FILE\n');
    writeFileSync(join(dir, 'ca.crt'), 'CA FILE\n');
    const path = kubeconfigFile(
      dir,
      'https://10.0.0.1:6443',
      `    client-certificate: client.crt
    client-key: client.key
    username: admin
    password: secret`,
      '    certificate-authority: ca.crt',
    );
    const c = await resolveCredentials({ mode: 'kubeconfig', path, context: null });
    expect(c.ca).toBe('CA FILE\n');
    expect(c.cert).toBe('CERT FILE\n');
    expect(c.key).toBe('KEY FILE\n');
    expect(c.headers).toEqual({ Authorization: `Basic ${b64('admin:secret')}` });
    expect(c.tokenFile).toBeUndefined();
  });

  it('kubeconfig token-file is reported for rotation', async () => {
    const dir = tmp();
    writeFileSync(join(dir, 'token'), 'file-token');
    const path = kubeconfigFile(dir, 'http://127.0.0.1:2', `    token-file: ${join(dir, 'token')}`);
    const c = await resolveCredentials({ mode: 'kubeconfig', path, context: null });
    expect(c.tokenFile).toBe(join(dir, 'token'));
    expect(c.headers['Authorization']).toBe('Bearer file-token');
    expect(c.rejectUnauthorized).toBe(false);
  });

  it('in-cluster service account (token file and CA under the service-account directory)', async () => {
    const prefix = tmp();
    const sa = join(prefix, 'var/run/secrets/kubernetes.io/serviceaccount');
    mkdirSync(sa, { recursive: true });
    writeFileSync(join(sa, 'token'), 'sa-token');
    writeFileSync(join(sa, 'ca.crt'), 'SA CA\n');
    const saved = [process.env['KUBERNETES_SERVICE_HOST'], process.env['KUBERNETES_SERVICE_PORT']];
    process.env['KUBERNETES_SERVICE_HOST'] = 'fd00::1';
    process.env['KUBERNETES_SERVICE_PORT'] = '443';
    cleanups.push(() => {
      if (saved[0] === undefined) delete process.env['KUBERNETES_SERVICE_HOST'];
      else process.env['KUBERNETES_SERVICE_HOST'] = saved[0];
      if (saved[1] === undefined) delete process.env['KUBERNETES_SERVICE_PORT'];
      else process.env['KUBERNETES_SERVICE_PORT'] = saved[1];
    });
    const c = await resolveCredentials({ mode: 'cluster', pathPrefix: prefix });
    expect(c).toEqual({
      server: 'https://[fd00::1]:443',
      ca: 'SA CA\n',
      rejectUnauthorized: undefined,
      headers: { Authorization: 'Bearer sa-token' },
      tokenFile: join(sa, 'token'),
    });
  });

  it("reports the helper's error (missing kubeconfig file)", async () => {
    await expect(resolveCredentials({ mode: 'kubeconfig', path: join(tmp(), 'nope'), context: null })).rejects.toThrow(
      /ENOENT.*nope/,
    );
  });
});

describe('credential rotation in the server process', () => {
  it('re-reads a token file after a minute and right after a 401', async () => {
    const srv = await authServer();
    const dir = tmp();
    const tokenPath = join(dir, 'token');
    writeFileSync(tokenPath, 'one\n');
    vi.useFakeTimers({ toFake: ['Date'] });
    const c = await ApiClient.create({
      ...base,
      kubeconfig: { path: kubeconfigFile(dir, srv.url, `    token-file: ${tokenPath}`), context: null },
    });
    expect(await get(c)).toBe(200);
    writeFileSync(tokenPath, 'two\n');
    expect(await get(c)).toBe(200);
    vi.setSystemTime(Date.now() + 61_000);
    expect(await get(c)).toBe(200);
    writeFileSync(tokenPath, 'three');
    srv.reject = 1;
    expect(await get(c)).toBe(401);
    expect(await get(c)).toBe(200);
    expect(srv.seen).toEqual(['Bearer one', 'Bearer one', 'Bearer two', 'Bearer two', 'Bearer three']);
  });

  it('resolves exec credentials again after a 401 and when they expire, with backoff on failure', async () => {
    const srv = await authServer();
    // An exec credential plugin: token exec-N (N counts the runs), valid for an hour; fails when N is 4.
    const { path, counter } = execKubeconfig(
      srv.url,
      `import fs from 'node:fs';
const f = process.argv[2];
const n = (fs.existsSync(f) ? Number(fs.readFileSync(f, 'utf8')) : 0) + 1;
fs.writeFileSync(f, String(n));
if (n === 4) { process.stderr.write('plugin broke'); process.exit(1); }
process.stdout.write(JSON.stringify({ apiVersion: 'client.authentication.k8s.io/v1', kind: 'ExecCredential',
  status: { token: 'exec-' + n, expirationTimestamp: new Date(Date.now() + 3600e3).toISOString() } }));
`,
    );
    const resolved = await resolveCredentials({ mode: 'kubeconfig', path, context: null });
    expect(resolved.headers['Authorization']).toBe('Bearer exec-1');
    expect(resolved.expiry).toBeGreaterThan(Date.now());
    expect(resolved.tokenFile).toBeUndefined();

    vi.useFakeTimers({ toFake: ['Date'] });
    const c = await ApiClient.create({ ...base, kubeconfig: { path, context: null } });
    expect(await get(c)).toBe(200); // exec-2
    srv.reject = 1;
    expect(await get(c)).toBe(401); // exec-2 rejected
    expect(await get(c)).toBe(200); // exec-3
    vi.setSystemTime(Date.now() + 2 * 3600e3);
    expect(await get(c)).toBe(200); // expired: run 4 fails, exec-3 is kept
    expect(c.credentialError).toMatch(/plugin broke/);
    srv.reject = 1;
    expect(await get(c)).toBe(401);
    expect(await get(c)).toBe(200); // still within the backoff: no new run
    expect(readFileSync(counter, 'utf8')).toBe('4');
    vi.setSystemTime(Date.now() + 2_000);
    expect(await get(c)).toBe(200); // exec-5
    expect(c.credentialError).toBeNull();
    expect(srv.seen).toEqual([
      'Bearer exec-2',
      'Bearer exec-2',
      'Bearer exec-3',
      'Bearer exec-3',
      'Bearer exec-3',
      'Bearer exec-3',
      'Bearer exec-5',
    ]);
  });

  it('does not run the helper again for every 401 when the credentials do not change', async () => {
    const srv = await authServer();
    // The same token on every run, no expiry; counts its runs.
    const { path, counter } = execKubeconfig(
      srv.url,
      `import fs from 'node:fs';
const f = process.argv[2];
fs.writeFileSync(f, String((fs.existsSync(f) ? Number(fs.readFileSync(f, 'utf8')) : 0) + 1));
process.stdout.write(JSON.stringify({ apiVersion: 'client.authentication.k8s.io/v1', kind: 'ExecCredential', status: { token: 'same' } }));
`,
    );
    vi.useFakeTimers({ toFake: ['Date'] });
    const c = await ApiClient.create({ ...base, kubeconfig: { path, context: null } });
    srv.reject = 3;
    expect(await get(c)).toBe(401);
    expect(await get(c)).toBe(401); // run 2: unchanged, so back off
    expect(await get(c)).toBe(401); // within the backoff: no run
    expect(await get(c)).toBe(200);
    expect(readFileSync(counter, 'utf8')).toBe('2');
    vi.setSystemTime(Date.now() + 1_500);
    srv.reject = 1;
    expect(await get(c)).toBe(401);
    expect(await get(c)).toBe(200); // run 3
    expect(readFileSync(counter, 'utf8')).toBe('3');
    expect(srv.seen).toEqual(Array(6).fill('Bearer same'));
  });
});

/**
 * Which modules a child `node` loads, recorded by a module resolve hook registered with `--import`
 * (every ESM import, static or dynamic, goes through it, so an explicit list beats guessing from
 * memory use). Returns the resolved URLs and the script's stdout.
 */
async function loadedModules(script: string): Promise<{ urls: string[]; stdout: string }> {
  const dir = tmp();
  const log = join(dir, 'resolved.log');
  writeFileSync(
    join(dir, 'hooks.mjs'),
    `import fs from 'node:fs';
let log;
export function initialize(data) { log = data.log; }
export async function resolve(specifier, context, next) {
  const r = await next(specifier, context);
  fs.appendFileSync(log, r.url + '\\n');
  return r;
}
`,
  );
  writeFileSync(
    join(dir, 'register.mjs'),
    `import { register } from 'node:module';
register(${JSON.stringify(pathToFileURL(join(dir, 'hooks.mjs')).href)}, { data: { log: ${JSON.stringify(log)} } });
`,
  );
  writeFileSync(join(dir, 'main.mjs'), script);
  const stdout = await new Promise<string>((resolve, reject) => {
    execFile(
      process.execPath,
      ['--import', pathToFileURL(join(dir, 'register.mjs')).href, join(dir, 'main.mjs')],
      { timeout: 30_000 },
      (err, out, errOut) => {
        if (err) reject(new Error(`${err.message}\n${String(errOut)}`));
        else resolve(String(out));
      },
    );
  });
  return { urls: readFileSync(log, 'utf8').split('\n').filter(Boolean), stdout };
}

describe('@kubernetes/client-node stays out of the server process', () => {
  it('the resolve hook sees client-node when it is imported (control)', async () => {
    const { urls } = await loadedModules(
      `await import(${JSON.stringify(pathToFileURL(join(DIST, 'plugins/kubernetes/credentials.js')).href)});\n`,
    );
    expect(urls.some((u) => u.includes('/@kubernetes/client-node/'))).toBe(true);
  });

  it('plugins/index.js and clients for endpoint, endpoint+tls and kubeconfig do not load it', async () => {
    const dir = tmp();
    for (const f of ['cert', 'key', 'ca']) writeFileSync(join(dir, f), `${f}\n`);
    const srv = await authServer();
    const kc = kubeconfigFile(dir, srv.url, '    token: abc');
    const u = (p: string): string => JSON.stringify(pathToFileURL(join(DIST, p)).href);
    const { urls, stdout } = await loadedModules(`
const { PLUGINS } = await import(${u('plugins/index.js')});
// The registry loads a plugin's module when a Corefile names it (plugins/index.ts): load this one.
await PLUGINS.find((p) => p.name === 'kubernetes').load();
const { ApiClient } = await import(${u('plugins/kubernetes/client.js')});
const base = { endpoint: null, tls: null, kubeconfig: null, qps: 0, burst: 0, maxInflight: 0 };
const plain = await ApiClient.create({ ...base, endpoint: 'http://127.0.0.1:8001' });
const tls = await ApiClient.create({ ...base, endpoint: 'https://127.0.0.1:6443', tls: { cert: ${JSON.stringify(join(dir, 'cert'))}, key: ${JSON.stringify(join(dir, 'key'))}, ca: ${JSON.stringify(join(dir, 'ca'))} } });
const kube = await ApiClient.create({ ...base, kubeconfig: { path: ${JSON.stringify(kc)}, context: null } });
const res = await kube.get('/api/v1/services', new AbortController().signal, 10000);
res.resume();
console.log(JSON.stringify([PLUGINS.some((p) => p.name === 'kubernetes'), plain.host, tls.host, kube.host, res.statusCode]));
`);
    expect(JSON.parse(stdout)).toEqual([
      true,
      '127.0.0.1:8001',
      '127.0.0.1:6443',
      srv.url.slice('http://'.length),
      200,
    ]);
    expect(srv.seen).toEqual(['Bearer abc']);
    expect(urls.some((x) => x.endsWith('/dist/plugins/kubernetes/index.js'))).toBe(true);
    expect(urls.filter((x) => x.includes('@kubernetes/client-node'))).toEqual([]);
  });
});
