/**
 * Helpers for tests that talk to a sandbox with the real @kubernetes/client-node.
 */
import { CoreV1Api, DiscoveryV1Api, KubeConfig, Watch } from '@kubernetes/client-node';

export function kubeConfigFor(url: string): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'sandbox', server: url, skipTLSVerify: true }],
    users: [{ name: 'anonymous' }],
    contexts: [{ name: 'sandbox', cluster: 'sandbox', user: 'anonymous' }],
    currentContext: 'sandbox',
  });
  return kc;
}

export interface Clients {
  kc: KubeConfig;
  core: CoreV1Api;
  discovery: DiscoveryV1Api;
  watch: Watch;
}

export function clientsFor(url: string): Clients {
  const kc = kubeConfigFor(url);
  return { kc, core: kc.makeApiClient(CoreV1Api), discovery: kc.makeApiClient(DiscoveryV1Api), watch: new Watch(kc) };
}

export interface WatchEvent {
  type: string;
  object: Record<string, unknown>;
}

export interface Collected {
  events: WatchEvent[];
  /** resolves with the error passed to `done` (null on a clean end) */
  done: Promise<unknown>;
  abort(): void;
}

/** Start a watch and collect its events. */
export async function collectWatch(
  w: Watch,
  path: string,
  query: Record<string, string | number | boolean | undefined>,
): Promise<Collected> {
  const events: WatchEvent[] = [];
  let resolveDone: (e: unknown) => void = () => undefined;
  const done = new Promise<unknown>((r) => {
    resolveDone = r;
  });
  const ctl = await w.watch(
    path,
    query,
    (type: string, object: unknown) => {
      events.push({ type, object: object as Record<string, unknown> });
    },
    (err: unknown) => resolveDone(err),
  );
  return { events, done, abort: () => ctl.abort() };
}

export function svc(namespace: string, name: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  const { labels, spec, ...rest } = extra;
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name, namespace, ...(labels ? { labels } : {}) },
    spec: {
      clusterIP: '10.96.0.100',
      ports: [{ name: 'http', port: 80 }],
      ...(spec as Record<string, unknown> | undefined),
    },
    ...rest,
  };
}

export function nameOf(o: unknown): string {
  const md = (o as { metadata?: { name?: unknown } }).metadata;
  return typeof md?.name === 'string' ? md.name : '';
}

export function rvOf(o: unknown): string {
  const md = (o as { metadata?: { resourceVersion?: unknown } }).metadata;
  return typeof md?.resourceVersion === 'string' ? md.resourceVersion : '';
}
