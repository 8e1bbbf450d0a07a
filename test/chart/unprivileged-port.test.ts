/**
 * Port 53 without a capability (charts/clusterdns README, "Port 53"): the server, run as the
 * chart's user with no capability at all and no file capability on node, binds 127.0.0.1:53 in a
 * network namespace whose net.ipv4.ip_unprivileged_port_start is the value the chart renders into
 * the pod's sysctls, and cannot with the kernel's default (1024). Needs root for `unshare -n` (CI
 * runs as root); where the namespace cannot be made the test fails and says why, never skips.
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { BIN } from '../helpers/spawn.js';
import { at, container, one, render, REPO_ROOT } from './helm.js';

const DRIVER = path.join(REPO_ROOT, 'test/fixtures/port53-netns.mjs');

/** Why the namespace test cannot run here, or null. */
function problem(): string | null {
  const u = spawnSync('unshare', ['-n', 'true'], { encoding: 'utf8' });
  if (u.error) return `\`unshare -n\` cannot be run (util-linux missing?): ${u.error.message}`;
  if (u.status !== 0) return `\`unshare -n true\` exited ${u.status}: ${u.stderr.trim()} (needs root)`;
  if (spawnSync('sh', ['-c', 'command -v setpriv']).status !== 0) return '`setpriv` (util-linux) is not installed';
  if (!existsSync(path.join(REPO_ROOT, 'dist/src/main.js'))) return 'dist/ is not built: run `npm run build` first';
  return null;
}

interface Outcome {
  answered: boolean;
  exitCode: number | null;
  output: string;
}

function runIn(netnsPortStart: string, uid: number, gid: number): Outcome {
  const dir = mkdtempSync(path.join(tmpdir(), 'clusterdns-port53-'));
  chmodSync(dir, 0o755); // the server runs as the chart's user
  const corefile = path.join(dir, 'Corefile');
  writeFileSync(corefile, '.:53 {\n    bind 127.0.0.1\n    whoami\n}\n', { mode: 0o644 });
  const r = spawnSync(
    'unshare',
    [
      '-n',
      'sh',
      '-c',
      'ip link set lo up 2>/dev/null || ifconfig lo up; exec "$0" "$@"',
      process.execPath,
      DRIVER,
      netnsPortStart,
      String(uid),
      String(gid),
      BIN,
      corefile,
    ],
    { encoding: 'utf8', timeout: 120_000 },
  );
  expect(r.status, r.stderr).toBe(0);
  return JSON.parse(r.stdout) as Outcome;
}

describe('port 53 without a capability, through the pod sysctl the chart sets', () => {
  const deploy = one(render(), 'Deployment');
  const sysctls = at(deploy, 'spec', 'template', 'spec', 'securityContext', 'sysctls') as {
    name: string;
    value: string;
  }[];
  const start = sysctls.find((s) => s.name === 'net.ipv4.ip_unprivileged_port_start')?.value;
  const uid = Number(at(container(deploy), 'securityContext', 'runAsUser'));
  const gid = Number(at(container(deploy), 'securityContext', 'runAsGroup'));

  it("binds 53 as the chart's user with the chart's sysctl, and not with the kernel's default", () => {
    const why = problem();
    if (why !== null) throw new Error(`cannot run the network-namespace test: ${why}`);
    expect(start).toBe('53');
    expect(uid).not.toBe(0);
    const withSysctl = runIn(start!, uid, gid);
    expect(withSysctl, withSysctl.output).toMatchObject({ answered: true, exitCode: null });
    const without = runIn('1024', uid, gid);
    expect(without.answered).toBe(false);
    expect(without.exitCode).toBe(1);
    expect(without.output).toContain('bind EACCES 127.0.0.1:53');
  }, 240_000);
});
