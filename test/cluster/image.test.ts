/**
 * The OCI image scripts/cluster/images.sh builds (what the cluster runs) stays equivalent to what
 * `docker build` makes of the Dockerfile: the runtime configuration (ENTRYPOINT, CMD, USER, ENV,
 * WORKDIR, EXPOSE), the files under /app (package.json, bin, the compiled build context, the
 * production dependencies), the node binary (Node 24, and the file capability exactly when the
 * Dockerfile grants one) and the nonroot user. The Dockerfile is read with test/chart's parser,
 * not the builder's, so a drift on either side shows here.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildContextFiles, parseDockerfile, type Stage } from '../chart/dockerfile.js';
import { REPO_ROOT } from './cluster.js';

const archive = path.join(REPO_ROOT, '.cluster/images/clusterdns.tar');
const work = mkdtempSync(path.join(tmpdir(), 'clusterdns-oci-'));
const rootfs = path.join(work, 'rootfs');
const dockerfile = parseDockerfile(path.join(REPO_ROOT, 'Dockerfile'));
const runtime = dockerfile.stages.at(-1) as Stage;

interface ImageConfig {
  Entrypoint?: string[];
  Cmd?: string[];
  User?: string;
  WorkingDir?: string;
  Env?: string[];
  ExposedPorts?: Record<string, unknown>;
}
let config: ImageConfig = {};

function blob(digest: string): Buffer {
  return readFileSync(path.join(work, 'layout/blobs', ...digest.split(':')));
}

function instruction(keyword: string): string[] {
  return runtime.instructions.filter((i) => i.keyword === keyword).map((i) => i.args);
}

/** Every file below `dir`, relative to it. */
function files(dir: string): string[] {
  const out: string[] = [];
  const walk = (rel: string): void => {
    for (const name of readdirSync(path.join(dir, rel))) {
      const r = rel === '' ? name : `${rel}/${name}`;
      if (statSync(path.join(dir, r)).isDirectory()) walk(r);
      else out.push(r);
    }
  };
  walk('');
  return out.sort();
}

beforeAll(() => {
  if (!existsSync(archive)) throw new Error(`${archive} is missing: scripts/cluster/images.sh builds it`);
  execFileSync('mkdir', ['-p', path.join(work, 'layout'), rootfs]);
  execFileSync('tar', ['-xf', archive, '-C', path.join(work, 'layout')]);
  const index = JSON.parse(readFileSync(path.join(work, 'layout/index.json'), 'utf8')) as {
    manifests: { digest: string }[];
  };
  expect(index.manifests).toHaveLength(1);
  const manifest = JSON.parse(blob(index.manifests[0]?.digest ?? '').toString()) as {
    config: { digest: string };
    layers: { digest: string }[];
  };
  config = (JSON.parse(blob(manifest.config.digest).toString()) as { config: ImageConfig }).config;
  for (const layer of manifest.layers) {
    execFileSync('tar', [
      '--xattrs',
      '--xattrs-include=security.capability',
      '-xzf',
      path.join(work, 'layout/blobs', ...layer.digest.split(':')),
      '-C',
      rootfs,
    ]);
  }
});

afterAll(() => rmSync(work, { recursive: true, force: true }));

describe('the OCI image and the Dockerfile', () => {
  it('have the same ENTRYPOINT, CMD, USER and WORKDIR', () => {
    expect(config.Entrypoint).toEqual(JSON.parse(instruction('ENTRYPOINT').at(-1) ?? 'null'));
    expect(config.Cmd).toEqual(JSON.parse(instruction('CMD').at(-1) ?? 'null'));
    expect(config.User).toBe(instruction('USER').at(-1));
    expect(config.WorkingDir).toBe(instruction('WORKDIR').at(-1));
  });

  it('set the same ENV and EXPOSE the same ports', () => {
    for (const env of instruction('ENV')) expect(config.Env).toContain(env);
    const exposed = instruction('EXPOSE')
      .flatMap((a) => a.split(/\s+/))
      .map((p) => (p.includes('/') ? p : `${p}/tcp`));
    expect(Object.keys(config.ExposedPorts ?? {}).sort()).toEqual([...new Set(exposed)].sort());
  });

  it('run as the nonroot user 65532', () => {
    expect(config.User).toBe('65532:65532');
    expect(readFileSync(path.join(rootfs, 'etc/passwd'), 'utf8')).toMatch(/^nonroot:x:65532:65532:/m);
  });

  it('hold the same package.json and bin as the build context', () => {
    expect(readFileSync(path.join(rootfs, 'app/package.json'), 'utf8')).toBe(
      readFileSync(path.join(REPO_ROOT, 'package.json'), 'utf8'),
    );
    const bin = files(path.join(REPO_ROOT, 'bin'));
    expect(files(path.join(rootfs, 'app/bin'))).toEqual(bin);
    for (const f of bin)
      expect(readFileSync(path.join(rootfs, 'app/bin', f))).toEqual(readFileSync(path.join(REPO_ROOT, 'bin', f)));
  });

  it('compile exactly the build context: one dist/*.js per compiled .ts file', () => {
    const build = JSON.parse(readFileSync(path.join(REPO_ROOT, 'tsconfig.build.json'), 'utf8')) as {
      include: string[];
      exclude: string[];
    };
    const excluded = (f: string): boolean =>
      build.exclude.some((p) =>
        p.startsWith('**/')
          ? path.basename(f) === p.slice(3) || f.endsWith(p.slice(2))
          : f === p || f.startsWith(`${p}/`),
      ) || /\.(test|bench)\.ts$/.test(f);
    const context = buildContextFiles(REPO_ROOT, readFileSync(path.join(REPO_ROOT, '.dockerignore'), 'utf8'));
    const expected = context
      .filter((f) => f.endsWith('.ts') && !f.endsWith('.d.ts'))
      .filter((f) => build.include.some((d) => f.startsWith(`${d}/`)) && !excluded(f))
      .map((f) => f.replace(/\.ts$/, '.js'))
      .sort();
    const got = files(path.join(rootfs, 'app/dist')).filter((f) => f.endsWith('.js'));
    expect(got).toEqual(expected);
  });

  it('install the production dependencies only (no dev, no optional ones)', () => {
    const lock = JSON.parse(readFileSync(path.join(REPO_ROOT, 'package-lock.json'), 'utf8')) as {
      packages: Record<string, { dev?: boolean; optional?: boolean; devOptional?: boolean }>;
    };
    const expected = Object.entries(lock.packages)
      .filter(([p, v]) => /^node_modules\/(@[^/]+\/)?[^/]+$/.test(p) && !v.dev && !v.optional && !v.devOptional)
      .map(([p]) => p.slice('node_modules/'.length))
      .sort();
    const top = path.join(rootfs, 'app/node_modules');
    const got = readdirSync(top)
      .filter((n) => !n.startsWith('.'))
      .flatMap((n) => (n.startsWith('@') ? readdirSync(path.join(top, n)).map((s) => `${n}/${s}`) : [n]))
      .sort();
    expect(got).toEqual(expected);
  });

  it("run Node 24 as /nodejs/bin/node, with the file capability the Dockerfile's stages give it", () => {
    const node = path.join(rootfs, 'nodejs/bin/node');
    expect(execFileSync(node, ['--version'], { encoding: 'utf8' })).toMatch(/^v24\./);
    // The stage that supplies /nodejs/bin/node and the `setcap` it runs on it, if any.
    const copy = runtime.instructions
      .filter((i) => i.keyword === 'COPY')
      .map((i) => /^--from=(\S+)\s+(\S+)\s+(\S+)$/.exec(i.args))
      .find((m) => m?.[3] === '/nodejs/bin/node');
    const stage = dockerfile.stages.find((s) => s.name === copy?.[1]);
    const setcap = stage?.instructions
      .map((i) => (i.keyword === 'RUN' ? /\bsetcap\s+(\S+)\s+(\S+)/.exec(i.args) : null))
      .find((m) => m?.[2] === copy?.[2]);
    const got = execFileSync('getcap', [node], { encoding: 'utf8' }).trim();
    if (setcap) {
      // getcap prints "=ep" for "+ep": compare the capability and its flags.
      const [cap, flags] = (setcap[1] ?? '').split(/[=+]/).filter((s) => s !== '');
      expect(got).toBe(`${node} ${cap}=${flags}`);
    } else {
      expect(got).toBe('');
    }
  });
});
