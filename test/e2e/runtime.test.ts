/**
 * The runtime is Node ≥ 24.11 (package.json engines) on every machine, whatever its own `node`:
 * `npm ci` installs Node 24 from the npm registry's node-linux-<arch> package as
 * node_modules/.bin/node, npm scripts put node_modules/.bin first in PATH (so `npm test` runs
 * vitest, and every process the tests start with process.execPath, on it), and bin/clusterdns run
 * as a command picks that node over the one on PATH. Requires `npm run build`.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BIN, runCommand } from '../helpers/spawn.js';

const ROOT = resolve(import.meta.dirname, '../..');
/** The node `npm ci` installed for this checkout. */
const LOCAL_NODE = join(ROOT, 'node_modules/.bin/node');

/** `v24.11.0` or later. */
function supported(version: string): boolean {
  const [major = 0, minor = 0] = version.slice(1).split('.').map(Number);
  return major > 24 || (major === 24 && minor >= 11);
}

/** The version `bin/clusterdns -version` reports for the runtime it ran on (`linux/x64, v24.21.0, …`). */
function reportedRuntime(stdout: string): string {
  return stdout.split('\n')[1]?.split(', ')[1] ?? '';
}

describe('runtime', () => {
  it(`package.json requires Node >= 24.11, and the tests run on such a node (${process.version})`, () => {
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { engines: { node: string } };
    expect(pkg.engines.node).toBe('>=24.11');
    expect(supported(process.version)).toBe(true);
  });

  it('npm ci installed a Node >= 24.11 as node_modules/.bin/node', () => {
    const r = spawnSync(LOCAL_NODE, ['--version'], { encoding: 'utf8' });
    expect(r.status).toBe(0);
    expect(supported(r.stdout.trim())).toBe(true);
  });

  it("bin/clusterdns spawned by the tests runs on the tests' node", () => {
    const r = runCommand(['-version']);
    expect(r.status).toBe(0);
    expect(reportedRuntime(r.stdout)).toBe(process.version);
  });

  it('bin/clusterdns run as a command uses node_modules/.bin/node, not the node first in PATH', () => {
    const local = spawnSync(LOCAL_NODE, ['--version'], { encoding: 'utf8' }).stdout.trim();
    // The machine's own node (Node 20 on a fresh Debian) first in PATH, as in a login shell; run
    // from elsewhere and through a symlink, as npm links the command into a bin folder.
    const dir = mkdtempSync(join(tmpdir(), 'clusterdns-runtime-'));
    const link = join(dir, 'clusterdns');
    symlinkSync(BIN, link);
    const env = { ...process.env, PATH: `/usr/local/bin:/usr/bin:/bin:${process.env.PATH ?? ''}` };
    for (const cmd of [BIN, link]) {
      const r = spawnSync(cmd, ['-version'], { cwd: dir, env, encoding: 'utf8', timeout: 30_000 });
      expect(r.status, r.stderr).toBe(0);
      expect(reportedRuntime(r.stdout)).toBe(local);
    }
  });
});
