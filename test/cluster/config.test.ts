/**
 * Corefile edits on a real node (issue 24): the clusterdns ConfigMap (`coredns` in kube-system,
 * the chart's release `clusterdns`) is edited with kubectl, kubelet updates the pods' volume and
 * the *reload* plugin loads it. Nothing here waits for a duration: each step waits for its effect
 * on every pod, asked directly at the pod's address (the Service would pick one pod per query).
 *
 * 1. A new server block (`hosts` for a name of this run) is answered by every pod.
 * 2. A broken edit (an unknown directive) is not loaded: each pod's `coredns_reload_failed_total`
 *    rises, its log has the error with the Corefile's file:line, and the previous configuration
 *    (with the block of step 1) still answers.
 * 3. The original Corefile is restored and served again (the block of step 1 is gone).
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { anyError, waitFor } from '../helpers/wait.js';
import { type ClusterEnv, clusterEnv, inNetns, kubectl } from './cluster.js';

const SYSTEM = 'kube-system';
const CONFIGMAP = 'coredns';
const suffix = randomBytes(3).toString('hex');
const zone = `edit-${suffix}.test`;
const probe = `probe.${zone}`;
const PROBE_IP = '192.0.2.77';
let env: ClusterEnv;
let original = '';
let pods: { name: string; ip: string }[] = [];

/** The Corefile with one more server block, answering `probe` from a hosts table. */
function withProbe(corefile: string): string {
  return `${corefile.trimEnd()}\n${zone}:53 {\n    hosts {\n        ${PROBE_IP} ${probe}\n    }\n}\n`;
}

async function setCorefile(corefile: string): Promise<void> {
  await kubectl(env, [
    '-n',
    SYSTEM,
    'patch',
    'configmap',
    CONFIGMAP,
    '--type',
    'merge',
    '-p',
    JSON.stringify({ data: { Corefile: corefile } }),
  ]);
}

/** The probe's A record as one pod answers it ('' when it has no such answer). */
async function probeAt(ip: string): Promise<string> {
  const r = await inNetns(env, ['dig', '+time=2', '+tries=1', '+short', `@${ip}`, probe, 'A']);
  return r.code === 0 ? r.stdout.trim() : '';
}

/** `coredns_reload_failed_total` of one pod (its /metrics on :9153). */
async function reloadFailed(ip: string): Promise<number> {
  const r = await inNetns(env, ['curl', '-sf', '--max-time', '5', `http://${ip}:9153/metrics`]);
  if (r.code !== 0) throw new Error(`curl http://${ip}:9153/metrics: exit ${r.code}`);
  const m = /^coredns_reload_failed_total (\d+)/m.exec(r.stdout);
  return m ? Number(m[1]) : 0;
}

beforeAll(async () => {
  env = clusterEnv();
  original = await kubectl(env, ['-n', SYSTEM, 'get', 'configmap', CONFIGMAP, '-o', 'jsonpath={.data.Corefile}']);
  expect(original).toContain('kubernetes cluster.local');
  const out = await kubectl(env, [
    '-n',
    SYSTEM,
    'get',
    'pods',
    '-l',
    'app.kubernetes.io/instance=clusterdns',
    '--field-selector=status.phase=Running',
    '-o',
    'jsonpath={range .items[*]}{.metadata.name} {.status.podIP}{"\\n"}{end}',
  ]);
  pods = out
    .trim()
    .split('\n')
    .map((l) => {
      const [name = '', ip = ''] = l.split(' ');
      return { name, ip };
    });
  expect(pods.length).toBeGreaterThan(0);
});

afterAll(async () => {
  // A failed step must not leave the edit behind for the other test files.
  if (env && original) {
    const now = await kubectl(env, ['-n', SYSTEM, 'get', 'configmap', CONFIGMAP, '-o', 'jsonpath={.data.Corefile}']);
    if (now !== original) await setCorefile(original);
  }
});

describe('a ConfigMap edit on the real node', () => {
  it('is served by every pod once kubelet has updated the volume', async () => {
    await setCorefile(withProbe(original));
    for (const p of pods)
      await waitFor(
        `${p.name} (${p.ip}) answering ${probe} after the edit`,
        async () => (await probeAt(p.ip)) === PROBE_IP,
        {
          timeoutMs: 240_000,
          everyMs: 1000,
          retry: anyError,
        },
      );
  }, 300_000);

  it('a broken edit keeps the previous configuration serving, in the log and coredns_reload_failed_total', async () => {
    const before = new Map<string, number>();
    for (const p of pods) before.set(p.name, await reloadFailed(p.ip));
    const broken = `${withProbe(original)}broken-${suffix}.test:53 {\n    nosuchplugin-${suffix}\n}\n`;
    const line = broken.split('\n').findIndex((l) => l.includes(`nosuchplugin-${suffix}`)) + 1;
    await setCorefile(broken);
    for (const p of pods) {
      const failed = await waitFor(
        `${p.name}: coredns_reload_failed_total above ${before.get(p.name)} after the broken edit`,
        async () => {
          const n = await reloadFailed(p.ip);
          return n > (before.get(p.name) ?? 0) ? n : null;
        },
        { timeoutMs: 240_000, everyMs: 1000, retry: anyError },
      );
      expect(failed).toBe((before.get(p.name) ?? 0) + 1);
      // The previous configuration (with the probe block) still answers.
      expect(await probeAt(p.ip), `${p.name} still answering ${probe}`).toBe(PROBE_IP);
      const log = await kubectl(env, ['-n', SYSTEM, 'logs', p.name]);
      const errors = log.split('\n').filter((l) => l.includes(`nosuchplugin-${suffix}`));
      expect(errors.join('\n'), `${p.name}'s log: the reload error with the Corefile's file:line`).toContain(
        `/etc/coredns/Corefile:${line} - Error during parsing: Unknown directive 'nosuchplugin-${suffix}'`,
      );
      expect(errors[0]).toMatch(/^\[ERROR\] Restart failed: /);
    }
  }, 300_000);

  it('restoring the original Corefile is served again', async () => {
    await setCorefile(original);
    for (const p of pods)
      await waitFor(
        `${p.name} (${p.ip}) no longer answering ${probe} after the restore`,
        async () => (await probeAt(p.ip)) !== PROBE_IP,
        { timeoutMs: 240_000, everyMs: 1000, retry: anyError },
      );
    for (const p of pods) {
      const r = await inNetns(env, [
        'dig',
        '+time=2',
        '+tries=2',
        '+short',
        `@${p.ip}`,
        'kubernetes.default.svc.cluster.local',
        'A',
      ]);
      expect(r.stdout.trim(), `${p.name} answering the cluster after the restore`).toMatch(/^10\.96\.0\.1$/);
    }
  }, 300_000);
});
