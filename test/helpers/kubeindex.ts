/**
 * The kubernetes plugin's watch-backed index in tests against the sandbox API server: settings, a
 * sandbox, a started index and handler, answers through the handler, captured log lines and polling waits. Each test
 * file keeps its own list of cleanups, run after every test.
 */
import { logger } from '../../src/log.js';
import { KubernetesHandler } from '../../plugins/kubernetes/handler.js';
import { KubeIndexSource } from '../../plugins/kubernetes/indexsource.js';
import type { WatchSettings } from '../../plugins/kubernetes/kubeindex.js';
import { baseConfig, replyOf } from '../../plugins/kubernetes/testutil.js';
import { rrLines } from './records.js';
import { startSandbox, type Sandbox } from '../../sandbox/server.js';
import { makeQuery } from './dns.js';

export type Cleanups = (() => Promise<void> | void)[];

/** Settings for the API server at `url`: plain HTTP, no rate limit, EndpointSlices, no pods. */
export function watchSettings(url: string, over: Partial<WatchSettings> = {}): WatchSettings {
  return {
    endpoint: url,
    tls: null,
    kubeconfig: null,
    qps: 0,
    burst: 0,
    maxInflight: 0,
    labels: null,
    namespaceLabels: null,
    endpoints: true,
    pods: false,
    zonal: false,
    podNames: false,
    multicluster: false,
    ...over,
  };
}

/** A started index on `url`, stopped by `cleanups`. */
export function startIndex(cleanups: Cleanups, url: string, over: Partial<WatchSettings> = {}): KubeIndexSource {
  const ix = new KubeIndexSource(watchSettings(url, over), logger('kubernetes'));
  cleanups.push(() => ix.stop());
  ix.start();
  return ix;
}

/** A sandbox API server holding `objects`, closed by `cleanups`. */
export async function startTestSandbox(
  cleanups: Cleanups,
  objects: unknown[],
  opts: { bookmarkIntervalMs?: number } = {},
): Promise<Sandbox> {
  const sb = await startSandbox({ objects, log: () => undefined, ...opts });
  cleanups.push(() => sb.close());
  return sb;
}

/** A handler with the base configuration on `ix`'s store, closed by `cleanups`. */
export function startHandler(cleanups: Cleanups, ix: KubeIndexSource): KubernetesHandler {
  const h = new KubernetesHandler(baseConfig(), ix.store, () => ix.synced(), null, null);
  cleanups.push(() => h.close());
  return h;
}

/** The answer records `h` gives for `name` and `type`, as `rrLines` prints them. */
export async function answers(h: KubernetesHandler, name: string, type = 'A'): Promise<string[]> {
  const q = makeQuery(name, type);
  await h.serve(q);
  const m = replyOf(q);
  return m ? rrLines(m.answers) : [];
}
