/**
 * Image smoke test without Docker: repeat the Dockerfile's install steps in a temporary folder
 * (package.json + package-lock.json, `npm ci --omit=dev --ignore-scripts`, dist/, bin/), start
 * the result the way the image's ENTRYPOINT does (`node bin/clusterdns -conf FILE`) with a whoami
 * Corefile on a free port, and query it over UDP and TCP.
 *
 * `npm ci` runs offline from the local npm cache. When the cache cannot satisfy it (no network in
 * CI), the same production tree is assembled from package-lock.json: every package not marked
 * `dev` is copied from the repository's node_modules, which is what `npm ci --omit=dev` installs.
 * Needs `npm run build` (dist/).
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decode, type Message } from '../../src/dns/message.js';
import { encodeQuery, rcode, rrStrings, tcpQuery } from '../helpers/dns.js';
import { freePort } from '../helpers/net.js';
import { REPO_ROOT, isObject } from './helm.js';
import * as dgram from 'node:dgram';

interface LockPackage {
  dev?: boolean;
  link?: boolean;
}

const app = mkdtempSync(path.join(tmpdir(), 'clusterdns-image-'));
let installMode = '';
let child: ChildProcess | undefined;
let output = '';
let exitCode: number | null | undefined;
let port = 0;

function readJson(file: string): unknown {
  return JSON.parse(readFileSync(file, 'utf8'));
}

/** Differences between package.json's dependency lists and the lockfile's root entry (npm ci refuses them). */
function lockDrift(): string[] {
  const pkg = readJson(path.join(REPO_ROOT, 'package.json'));
  const lock = readJson(path.join(REPO_ROOT, 'package-lock.json'));
  if (!isObject(pkg) || !isObject(lock) || !isObject(lock.packages)) throw new Error('bad package.json or package-lock.json');
  const root = lock.packages[''];
  if (!isObject(root)) throw new Error('package-lock.json has no root package entry');
  const drift: string[] = [];
  for (const field of ['dependencies', 'devDependencies', 'optionalDependencies', 'peerDependencies']) {
    const want = isObject(pkg[field]) ? pkg[field] : {};
    const have = isObject(root[field]) ? root[field] : {};
    for (const k of new Set([...Object.keys(want), ...Object.keys(have)])) {
      if (want[k] !== have[k]) drift.push(`${field}.${k}: package.json ${JSON.stringify(want[k])}, package-lock.json ${JSON.stringify(have[k])}`);
    }
  }
  return drift;
}

function lockPackages(): Map<string, LockPackage> {
  const lock = readJson(path.join(app, 'package-lock.json'));
  if (!isObject(lock) || !isObject(lock.packages)) throw new Error('package-lock.json has no "packages" (lockfileVersion >= 2 needed)');
  const out = new Map<string, LockPackage>();
  for (const [k, v] of Object.entries(lock.packages)) if (k !== '' && isObject(v)) out.set(k, v as LockPackage);
  return out;
}

/** `npm ci --omit=dev` from the lockfile, copying the packages from the repository's node_modules. */
function installFromLock(): void {
  for (const [rel, pkg] of lockPackages()) {
    if (pkg.dev === true || !rel.startsWith('node_modules/')) continue;
    const from = path.join(REPO_ROOT, rel);
    if (!existsSync(from)) throw new Error(`${rel} is in package-lock.json but not installed in the repository`);
    mkdirSync(path.dirname(path.join(app, rel)), { recursive: true });
    cpSync(from, path.join(app, rel), { recursive: true, verbatimSymlinks: true, filter: (src) => !src.startsWith(path.join(from, 'node_modules')) });
  }
}

function install(): void {
  cpSync(path.join(REPO_ROOT, 'package.json'), path.join(app, 'package.json'));
  cpSync(path.join(REPO_ROOT, 'package-lock.json'), path.join(app, 'package-lock.json'));
  const npm = spawnSync('npm', ['ci', '--omit=dev', '--ignore-scripts', '--offline', '--no-audit', '--no-fund'], {
    cwd: app,
    encoding: 'utf8',
    timeout: 120_000,
  });
  if (npm.status === 0) {
    installMode = 'npm ci --offline';
  } else {
    rmSync(path.join(app, 'node_modules'), { recursive: true, force: true });
    installFromLock();
    installMode = 'lockfile copy (npm cache incomplete)';
  }
  cpSync(path.join(REPO_ROOT, 'dist'), path.join(app, 'dist'), { recursive: true });
  cpSync(path.join(REPO_ROOT, 'bin'), path.join(app, 'bin'), { recursive: true });
}

function udpQueryOnce(name: string, type: string, timeoutMs: number): Promise<Message> {
  return new Promise((resolve, reject) => {
    const sock = dgram.createSocket('udp4');
    const timer = setTimeout(() => {
      sock.close();
      reject(new Error('timeout'));
    }, timeoutMs);
    sock.on('message', (msg) => {
      clearTimeout(timer);
      sock.close();
      resolve(decode(msg));
    });
    sock.on('error', (e) => {
      clearTimeout(timer);
      sock.close();
      reject(e);
    });
    sock.send(encodeQuery(name, type), port, '127.0.0.1');
  });
}

/** Query until the server answers (it needs a moment to start) or the process exits. */
async function firstAnswer(): Promise<Message> {
  let last: unknown;
  for (let attempt = 0; attempt < 100; attempt++) {
    if (exitCode !== undefined) throw new Error(`clusterdns exited with ${String(exitCode)} before answering:\n${output}`);
    try {
      return await udpQueryOnce('example.org', 'A', 300);
    } catch (e) {
      last = e;
    }
  }
  throw new Error(`no answer from clusterdns on 127.0.0.1:${port} (${String(last)}):\n${output}`);
}

beforeAll(async () => {
  if (!existsSync(path.join(REPO_ROOT, 'dist/src/main.js'))) {
    throw new Error('dist/src/main.js is missing: run `npm run build` before this test');
  }
  if (!existsSync(path.join(REPO_ROOT, 'bin/clusterdns'))) throw new Error('bin/clusterdns is missing');
  install();
  port = await freePort();
  const corefile = path.join(app, 'Corefile');
  writeFileSync(corefile, '. {\n    whoami\n}\n');
  // As the image's ENTRYPOINT: node runs the launcher; the working directory is the app folder.
  child = spawn(process.execPath, [path.join(app, 'bin/clusterdns'), '-conf', corefile, '-dns.port', String(port)], {
    cwd: app,
    env: { PATH: process.env.PATH ?? '', NODE_ENV: 'production', NODE_OPTIONS: '--max-old-space-size=179' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout?.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (output += d.toString()));
  child.on('exit', (code, signal) => (exitCode = code ?? (signal ? -1 : null)));
}, 180_000);

afterAll(async () => {
  if (child && exitCode === undefined) {
    const c = child;
    await new Promise<void>((resolve) => {
      c.once('exit', () => resolve());
      c.kill('SIGKILL');
    });
  }
  rmSync(app, { recursive: true, force: true });
});

describe('image install steps (Dockerfile without Docker)', () => {
  it('has a package-lock.json in sync with package.json (npm ci in the Dockerfile refuses drift)', () => {
    expect(lockDrift()).toEqual([]);
  });

  it('installs production dependencies only', () => {
    expect(installMode).not.toBe('');
    const pkg = readJson(path.join(app, 'package.json'));
    if (!isObject(pkg) || !isObject(pkg.dependencies) || !isObject(pkg.devDependencies)) throw new Error('bad package.json');
    for (const dep of Object.keys(pkg.dependencies)) expect(existsSync(path.join(app, 'node_modules', dep)), `${dep} (${installMode})`).toBe(true);
    // A devDependency that a production package also needs (e.g. @types/node) stays; the lockfile
    // marks the dev-only ones with "dev": true.
    const lock = lockPackages();
    for (const dep of Object.keys(pkg.devDependencies)) {
      const devOnly = lock.get(`node_modules/${dep}`)?.dev === true;
      expect(existsSync(path.join(app, 'node_modules', dep)), `${dep} (${installMode})`).toBe(!devOnly);
    }
    for (const tool of ['vitest', 'typescript', 'eslint']) expect(existsSync(path.join(app, 'node_modules', tool)), tool).toBe(false);
  });

  it('answers whoami over UDP and TCP', async () => {
    const udp = await firstAnswer();
    expect(rcode(udp)).toBe(0);
    expect(rrStrings(udp.additionals ?? []).join('\n')).toMatch(/\bA 127\.0\.0\.1$/m);
    const tcp = await tcpQuery(port, 'example.org', 'A');
    expect(rcode(tcp)).toBe(0);
    expect(rrStrings(tcp.additionals ?? []).join('\n')).toMatch(/\bA 127\.0\.0\.1$/m);
  });

  it('exits 0 on SIGTERM', async () => {
    const c = child;
    if (!c) throw new Error('not started');
    if (exitCode !== undefined) throw new Error(`already exited with ${String(exitCode)}:\n${output}`);
    const code = await new Promise<number | null>((resolve) => {
      c.once('exit', (x) => resolve(x));
      c.kill('SIGTERM');
    });
    expect(code, output).toBe(0);
    expect(output).toContain('SIGTERM: Shutting down servers then terminating');
  });
});
