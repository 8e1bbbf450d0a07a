/**
 * Access to the real-node cluster that scripts/cluster/up.sh starts (test/cluster/): its
 * .cluster/env, kubectl through the namespace, commands in pods (kubectl exec) and in the node's
 * network namespace. Every call is a child process with a timeout; nothing here sleeps.
 */
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import * as path from 'node:path';

export const REPO_ROOT = path.resolve(import.meta.dirname, '../..');
export const CLUSTER_ENV = path.join(REPO_ROOT, '.cluster/env');

export interface ClusterEnv {
  readonly KUBECONFIG: string;
  readonly NETNS: string;
  readonly KUBECTL: string;
  readonly DNS_IP: string;
  /** The reference CoreDNS 1.15.0's Service (release coredns-ref, same chart and Corefile). */
  readonly COREDNS_IP: string;
  /** The nameserver kubelet writes into pods' resolv.conf: DNS_IP, or NODE_LOCAL_IP with --node-local. */
  readonly POD_DNS_IP: string;
  /** 1 when cluster:up ran with --node-local (the chart's node-local-dns DaemonSet installed). */
  readonly NODE_LOCAL: boolean;
  readonly NODE_LOCAL_IP: string;
  /** helm through the namespace (.cluster/helm). */
  readonly HELM: string;
  readonly IMAGE_NODE_CACHE: string;
  readonly IMAGE_CLIENT_GLIBC: string;
  readonly IMAGE_CLIENT_MUSL: string;
  readonly IMAGE_CLUSTERDNS: string;
}

/** .cluster/env (shell `KEY=value` lines) as written by up.sh. */
export function clusterEnv(): ClusterEnv {
  const vars = new Map<string, string>();
  for (const line of readFileSync(CLUSTER_ENV, 'utf8').split('\n')) {
    const m = /^([A-Z_]+)=(.*)$/.exec(line);
    if (m) vars.set(m[1] ?? '', m[2] ?? '');
  }
  const get = (k: string): string => {
    const v = vars.get(k);
    if (v === undefined) throw new Error(`${CLUSTER_ENV} has no ${k}`);
    return v;
  };
  return {
    KUBECONFIG: get('KUBECONFIG'),
    NETNS: get('NETNS'),
    KUBECTL: get('KUBECTL'),
    DNS_IP: get('DNS_IP'),
    COREDNS_IP: get('COREDNS_IP'),
    POD_DNS_IP: get('POD_DNS_IP'),
    NODE_LOCAL: get('NODE_LOCAL') === '1',
    NODE_LOCAL_IP: get('NODE_LOCAL_IP'),
    HELM: get('HELM_WRAPPER'),
    IMAGE_NODE_CACHE: get('IMAGE_NODE_CACHE'),
    IMAGE_CLIENT_GLIBC: get('IMAGE_CLIENT_GLIBC'),
    IMAGE_CLIENT_MUSL: get('IMAGE_CLIENT_MUSL'),
    IMAGE_CLUSTERDNS: get('IMAGE_CLUSTERDNS'),
  };
}

export interface RunResult {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** Run a command; resolves with its exit code and output (a non-zero exit is not an error). */
export function run(
  cmd: string,
  args: string[],
  opts: { input?: string; timeoutMs?: number } = {},
): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const child = execFile(
      cmd,
      args,
      { timeout: opts.timeoutMs ?? 60_000, maxBuffer: 16 << 20, encoding: 'utf8' },
      (err, stdout, stderr) => {
        if (err && typeof err.code !== 'number') {
          reject(new Error(`${cmd} ${args.join(' ')}: ${err.message}\n${stderr}`));
          return;
        }
        resolve({ code: typeof err?.code === 'number' ? err.code : 0, stdout, stderr });
      },
    );
    if (opts.input !== undefined) child.stdin?.end(opts.input);
  });
}

/** kubectl against the cluster; throws with its output unless it exits 0. */
export async function kubectl(env: ClusterEnv, args: string[], input?: string): Promise<string> {
  const r = await run(env.KUBECTL, args, { input, timeoutMs: 120_000 });
  if (r.code !== 0) throw new Error(`kubectl ${args.join(' ')} exited with ${r.code}: ${r.stderr}${r.stdout}`);
  return r.stdout;
}

/** A command in a pod's only container (kubectl exec); its exit code and output. */
export function execIn(env: ClusterEnv, namespace: string, pod: string, cmd: string[]): Promise<RunResult> {
  return run(env.KUBECTL, ['-n', namespace, 'exec', pod, '--', ...cmd], { timeoutMs: 60_000 });
}

/** A command in the node's network namespace (ip netns exec), as a user of the cluster runs it. */
export function inNetns(env: ClusterEnv, cmd: string[]): Promise<RunResult> {
  return run('ip', ['netns', 'exec', env.NETNS, ...cmd], { timeoutMs: 60_000 });
}
