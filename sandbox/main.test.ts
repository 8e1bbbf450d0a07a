import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { afterEach, describe, expect, it } from 'vitest';
import { parseCli, runCli } from './main.js';
import type { Sandbox } from './server.js';

const FIXTURE = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'examples', 'cluster.yaml');

let sb: Sandbox | undefined;
let dir: string | undefined;
afterEach(async () => {
  await sb?.close();
  sb = undefined;
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
  dir = undefined;
});

describe('CLI', () => {
  it('serves a file, prints the listening line and writes a kubeconfig', async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sandbox-cli-'));
    const kubeconfig = path.join(dir, 'kubeconfig');
    const lines: string[] = [];
    sb = await runCli(['--port', '0', '--file', FIXTURE, '--kubeconfig', kubeconfig], (l) => lines.push(l));
    expect(lines).toHaveLength(1);
    const m = /^sandbox listening on (http:\/\/127\.0\.0\.1:(\d+))$/.exec(lines[0] ?? '');
    expect(m?.[1]).toBe(sb?.url);
    expect(Number(m?.[2])).toBe(sb?.port);
    const kc = new KubeConfig();
    kc.loadFromFile(kubeconfig);
    const svcs = await kc.makeApiClient(CoreV1Api).listNamespacedService({ namespace: 'kube-system' });
    expect(svcs.items.map((s) => s.spec?.clusterIP)).toEqual(['10.96.0.10']);
  });

  it('generates a synthetic cluster from flags', async () => {
    const lines: string[] = [];
    sb = await runCli(
      ['--synthetic-services', '5', '--synthetic-pods', '20', '--synthetic-namespaces', '2', '--seed', '9'],
      (l) => lines.push(l),
    );
    const pods = (await (await fetch(`${sb?.url ?? ''}/api/v1/pods`)).json()) as { items: unknown[] };
    expect(pods.items).toHaveLength(20);
    const ns = (await (await fetch(`${sb?.url ?? ''}/api/v1/namespaces`)).json()) as { items: unknown[] };
    expect(ns.items).toHaveLength(2);
  });

  it('parses options and rejects bad flags', () => {
    expect(parseCli(['--bookmark-interval-ms', '100', '--history-limit', '5', '--file', 'a', '--file', 'b'])).toEqual({
      opts: { port: 0, host: '127.0.0.1', files: ['a', 'b'], bookmarkIntervalMs: 100, historyLimit: 5 },
    });
    expect(parseCli(['--synthetic-pods', '30'])?.opts.synthetic).toEqual({ services: 2, pods: 30 });
    expect(parseCli(['--help'])).toBeUndefined();
    expect(() => parseCli(['--bogus'])).toThrow();
    expect(() => parseCli(['--port', 'x'])).toThrow(/--port/);
  });
});
