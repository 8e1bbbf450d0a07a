/**
 * The API server stopped on a real node (issue 24): scripts/cluster/apiserver.sh stops the node's
 * kube-apiserver process (SIGTERM, waiting until it is gone). clusterdns's *kubernetes* plugin
 * loses its watches; it keeps answering from the last state it observed, and its `/ready` stays
 * 200, as CoreDNS 1.15.0's does (the *ready* plugin's default `monitor until-ready`: a plugin that
 * was ready once is not asked again, so an API outage does not take every DNS pod out of its
 * Service). What the plugin reports — why it is degraded — is its log line `[WARNING]
 * plugin/kubernetes: watch of KIND failed: …`. The outage lasts "for a minute or until observed":
 * each pod's log shows the failed watch, nothing waits for a duration. Then the API server starts
 * again and a Service created after the restart is answered by every pod, and by CoreDNS.
 *
 * The log is read from the node's files (.cluster/logs/pods/, kubelet's container logs): `kubectl
 * logs` needs the API server.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync, readdirSync } from 'node:fs';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { anyError, waitFor } from '../helpers/wait.js';
import { type ClusterEnv, REPO_ROOT, clusterEnv, inNetns, kubectl, run } from './cluster.js';

const SYSTEM = 'kube-system';
const suffix = randomBytes(3).toString('hex');
const ns = `api-${suffix}`;
let env: ClusterEnv;
let pods: { name: string; uid: string; ip: string }[] = [];
let refPods: { name: string; uid: string; ip: string }[] = [];
let beforeIP = '';

async function releasePods(release: string): Promise<{ name: string; uid: string; ip: string }[]> {
  const out = await kubectl(env, [
    '-n',
    SYSTEM,
    'get',
    'pods',
    '-l',
    `app.kubernetes.io/instance=${release}`,
    '--field-selector=status.phase=Running',
    '-o',
    'jsonpath={range .items[*]}{.metadata.name} {.metadata.uid} {.status.podIP}{"\\n"}{end}',
  ]);
  return out
    .trim()
    .split('\n')
    .map((l) => {
      const [name = '', uid = '', ip = ''] = l.split(' ');
      return { name, uid, ip };
    });
}

function apiserver(action: 'stop' | 'start'): Promise<{ code: number; stderr: string }> {
  return run('bash', [path.join(REPO_ROOT, 'scripts/cluster/apiserver.sh'), action], { timeoutMs: 180_000 });
}

/** A name's A record as one server (a pod's or a Service's address) answers it ('' if none). */
async function lookup(server: string, name: string): Promise<string> {
  const r = await inNetns(env, ['dig', '+time=2', '+tries=1', '+short', `@${server}`, name, 'A']);
  return r.code === 0 ? r.stdout.trim() : '';
}

/** HTTP status of a pod's /ready (:8181), and its body. */
async function ready(ip: string): Promise<string> {
  const r = await inNetns(env, ['curl', '-s', '--max-time', '5', '-w', ' %{http_code}', `http://${ip}:8181/ready`]);
  return r.stdout.trim();
}

/** The pod's container log as kubelet wrote it on the node. */
function nodeLog(pod: { name: string; uid: string }): string {
  const dir = path.join(REPO_ROOT, '.cluster/logs/pods', `${SYSTEM}_${pod.name}_${pod.uid}`);
  return readdirSync(dir)
    .flatMap((c) => readdirSync(path.join(dir, c)).map((f) => path.join(dir, c, f)))
    .map((f) => readFileSync(f, 'utf8'))
    .join('\n');
}

beforeAll(async () => {
  env = clusterEnv();
  await kubectl(
    env,
    ['apply', '-f', '-'],
    `apiVersion: v1\nkind: Namespace\nmetadata: {name: ${ns}}\n---\napiVersion: v1\nkind: Service\nmetadata: {name: before, namespace: ${ns}}\nspec:\n  ports: [{port: 80}]\n`,
  );
  beforeIP = (await kubectl(env, ['-n', ns, 'get', 'svc', 'before', '-o', 'jsonpath={.spec.clusterIP}'])).trim();
  pods = await releasePods('clusterdns');
  refPods = await releasePods('coredns-ref');
  for (const p of [...pods, ...refPods])
    await waitFor(
      `${p.name} answering before.${ns}`,
      async () => (await lookup(p.ip, `before.${ns}.svc.cluster.local`)) === beforeIP,
      {
        timeoutMs: 60_000,
        everyMs: 500,
        retry: anyError,
      },
    );
}, 120_000);

afterAll(async () => {
  // Never leave the node without its API server.
  if (env) {
    await apiserver('start');
    await kubectl(env, ['delete', 'namespace', ns, '--wait=false']).catch(() => undefined);
  }
}, 180_000);

describe('the API server stopped', () => {
  it('answers continue from the last state; /ready stays 200 and the log says why', async () => {
    const stopped = await apiserver('stop');
    expect(stopped.code, stopped.stderr).toBe(0);
    for (const p of pods) {
      // Observed: the plugin's watch failed (its reconnect finds nothing listening).
      await waitFor(
        `${p.name}'s log: the kubernetes plugin's failed watch`,
        () => /\[WARNING\] plugin\/kubernetes: watch of \w+ failed: /.test(nodeLog(p)),
        { timeoutMs: 180_000, everyMs: 1000, retry: anyError },
      );
      expect(await lookup(p.ip, `before.${ns}.svc.cluster.local`), `${p.name}: the Service created before`).toBe(
        beforeIP,
      );
      expect(await lookup(p.ip, 'kubernetes.default.svc.cluster.local'), `${p.name}: kubernetes.default`).toBe(
        '10.96.0.1',
      );
      expect(await ready(p.ip), `${p.name}: /ready`).toBe('OK 200');
    }
    // Through the Service (kube-proxy's rules stay), and the reference answering the same.
    expect(await lookup(env.DNS_IP, `before.${ns}.svc.cluster.local`)).toBe(beforeIP);
    for (const p of refPods) {
      expect(await lookup(p.ip, `before.${ns}.svc.cluster.local`), `CoreDNS ${p.name}`).toBe(beforeIP);
      expect(await ready(p.ip), `CoreDNS ${p.name}: /ready`).toBe('OK 200');
    }
  }, 300_000);

  it('recovers once the API server is back: a Service created after the restart is answered', async () => {
    const started = await apiserver('start');
    expect(started.code, started.stderr).toBe(0);
    await waitFor(
      'the Service "after" created',
      async () => {
        await kubectl(
          env,
          ['apply', '-f', '-'],
          `apiVersion: v1\nkind: Service\nmetadata: {name: after, namespace: ${ns}}\nspec:\n  ports: [{port: 80}]\n`,
        );
        return true;
      },
      { timeoutMs: 120_000, everyMs: 1000, retry: anyError },
    );
    const afterIP = (await kubectl(env, ['-n', ns, 'get', 'svc', 'after', '-o', 'jsonpath={.spec.clusterIP}'])).trim();
    expect(afterIP).toMatch(/^10\.96\./);
    for (const p of [...pods, ...refPods])
      await waitFor(
        `${p.name} answering after.${ns} (created after the restart)`,
        async () => (await lookup(p.ip, `after.${ns}.svc.cluster.local`)) === afterIP,
        { timeoutMs: 180_000, everyMs: 1000, retry: anyError },
      );
    for (const p of pods) expect(await ready(p.ip), `${p.name}: /ready`).toBe('OK 200');
  }, 300_000);
});
