/**
 * Global setup of the real-node suite (vitest.cluster.config.ts): starts the cluster with
 * scripts/cluster/up.sh unless `npm run cluster:status` says one is up already (a developer's,
 * kept running between runs), and stops it after the run only if this setup started it
 * (CLUSTER_KEEP=1 keeps it for debugging). up.sh's progress goes to this process's stderr.
 */
import { spawnSync } from 'node:child_process';
import { REPO_ROOT } from './cluster.js';

let started = false;

function script(name: string): number {
  const r = spawnSync('bash', [`scripts/cluster/${name}.sh`], {
    cwd: REPO_ROOT,
    stdio: ['ignore', name === 'status' ? 'ignore' : 'inherit', 'inherit'],
  });
  return r.status ?? 1;
}

export function setup(): void {
  if (script('status') === 0) {
    process.stderr.write('cluster suite: using the cluster that is already up\n');
    return;
  }
  const t0 = Date.now();
  if (script('up') !== 0) throw new Error('scripts/cluster/up.sh failed: its output above names the step and log');
  started = true;
  process.stderr.write(`cluster suite: cluster:up took ${Math.round((Date.now() - t0) / 1000)}s\n`);
}

export function teardown(): void {
  if (!started || process.env.CLUSTER_KEEP === '1') return;
  script('down');
}
