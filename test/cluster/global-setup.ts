/**
 * Global setup of the real-node suite (vitest.cluster.config.ts): starts the cluster with
 * scripts/cluster/up.sh unless `npm run cluster:status` says one is up already (a developer's,
 * kept running between runs), and stops it after the run only if this setup started it, or
 * when up.sh fails (CLUSTER_KEEP=1 keeps it for debugging in both cases). up.sh's progress goes
 * to this process's stderr. The scripts run asynchronously: a synchronous child would block
 * vitest's main process, whose workers then time out waiting for it to answer.
 */
import { spawn } from 'node:child_process';
import { REPO_ROOT } from './cluster.js';

let started = false;

function script(name: string): Promise<number> {
  return new Promise((resolve) => {
    const child = spawn('bash', [`scripts/cluster/${name}.sh`], {
      cwd: REPO_ROOT,
      stdio: ['ignore', name === 'status' ? 'ignore' : 'inherit', 'inherit'],
    });
    child.once('error', () => resolve(1));
    child.once('exit', (code) => resolve(code ?? 1));
  });
}

export async function setup(): Promise<void> {
  if ((await script('status')) === 0) {
    process.stderr.write('cluster suite: using the cluster that is already up\n');
    return;
  }
  const t0 = Date.now();
  if ((await script('up')) !== 0) {
    // Leave the machine as it was (the logs stay in .cluster/logs/), unless asked to keep it.
    if (process.env.CLUSTER_KEEP !== '1') await script('down');
    throw new Error('scripts/cluster/up.sh failed: its output above names the step and log (.cluster/logs/)');
  }
  started = true;
  process.stderr.write(`cluster suite: cluster:up took ${Math.round((Date.now() - t0) / 1000)}s\n`);
}

export async function teardown(): Promise<void> {
  if (!started || process.env.CLUSTER_KEEP === '1') return;
  await script('down');
}
