/**
 * A change to each kind of object drops exactly the answers that depend on it (changekeys.ts), in
 * both roles of the index (kubeindex.ts): the source's answer cache hears the store, a replica's
 * hears the shared-memory copy's updates. The replica is fed as a query thread is: every message
 * crosses as a structured clone and is checked where it arrives (threads-protocol.ts,
 * indexfeed.ts). Each answer is asked once before the change, so it is cached: an answer still
 * stale after the change was not invalidated.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { logger } from '../../src/log.js';
import { ReplicaClient, ReplicationHub } from '../../src/server/replication.js';
import { parseFromThread, parseToThread, type ToThread } from '../../src/server/threads-protocol.js';
import { answers, startTestSandbox, watchSettings, type Cleanups } from '../../test/helpers/kubeindex.js';
import { waitFor } from '../../test/helpers/wait.js';
import { changeKey, type ChangeKey } from './changekeys.js';
import { kubernetesExternal } from './external.js';
import { KubernetesHandler } from './handler.js';
import { KubeIndexReplica } from './indexreplica.js';
import { KubeIndexSource } from './indexsource.js';
import type { KubeIndex } from './kubeindex.js';
import { ns, pod, slice, svc } from './testdata.js';
import { baseConfig } from './testutil.js';

const cleanups: Cleanups = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

const http = { name: 'http', port: 80, protocol: 'TCP' };
const web = (ip: string, externalIPs: string[] = []) =>
  svc('inv', 'web', { type: 'ClusterIP', clusterIP: ip, clusterIPs: [ip], ports: [http], externalIPs });
const db = svc('inv', 'db', { type: 'ClusterIP', clusterIP: 'None', clusterIPs: ['None'], ports: [http] });
const dbSlice = (ip: string) => slice('inv', 'db-1', 'db', [http], [{ ip, ready: true }]);
const late = svc('late', 'api', {
  type: 'ClusterIP',
  clusterIP: '10.96.0.30',
  clusterIPs: ['10.96.0.30'],
  ports: [http],
});

interface Role {
  readonly name: string;
  readonly index: KubeIndex;
  readonly handler: KubernetesHandler;
  /** Change keys its readers were told of. */
  readonly heard: ChangeKey[];
}

/** A source offering its index, and a replica subscribed to it as a query thread would be. */
async function start(url: string): Promise<{ source: KubeIndexSource; roles: Role[] }> {
  const hub = new ReplicationHub();
  const key = 'kubernetes:invalidation';
  let replica: ReplicaClient | null = null;
  const peer = {
    postMessage: (m: ToThread) => {
      const t = parseToThread(structuredClone(m));
      if (t.t === 'feed') replica!.handle(t);
    },
  };
  replica = new ReplicaClient({
    postMessage: (m: unknown) => {
      const f = parseFromThread(structuredClone(m));
      if (f.t === 'sub' || f.t === 'unsub') hub.handle(peer, f);
    },
  });
  const source = new KubeIndexSource(watchSettings(url, { pods: true }), logger('kubernetes'), { source: hub, key });
  const copy = new KubeIndexReplica(replica, key);
  const roles: Role[] = [];
  for (const [name, index] of [
    ['source', source],
    ['replica', copy],
  ] as const) {
    cleanups.push(() => index.stop());
    index.start();
    const handler = new KubernetesHandler(
      baseConfig({ podMode: 'verified' }),
      index.reader,
      () => index.synced(),
      null,
      null,
    );
    cleanups.push(() => handler.close());
    const heard: ChangeKey[] = [];
    const unsubscribe = index.reader.subscribe((keys) => heard.push(...keys));
    cleanups.push(unsubscribe);
    roles.push({ name, index, handler, heard });
  }
  await waitFor('both roles synced', () => roles.every((r) => r.index.synced()));
  return { source, roles };
}

describe('a change invalidates the answers that depend on it, through the source and a replica', () => {
  it('services, endpoint slices, pods, namespaces and external addresses', async () => {
    const sb = await startTestSandbox(cleanups, [ns('inv'), web('10.96.0.10'), db, dbSlice('10.244.0.1'), late]);
    const { source, roles } = await start(sb.url);
    const ask = async (name: string, type: string): Promise<string[][]> =>
      Promise.all(roles.map((r) => answers(r.handler, name, type)));
    const both = (records: string[]): string[][] => roles.map(() => records);

    // Service: its name, and the reverse name of its new address.
    expect(await ask('web.inv.svc.cluster.local.', 'A')).toEqual(
      both(['web.inv.svc.cluster.local. 5 IN A 10.96.0.10']),
    );
    expect(await ask('11.0.96.10.in-addr.arpa.', 'PTR')).toEqual(both([]));
    sb.apply(web('10.96.0.11'));
    await waitFor('service changed', () => source.store.serviceByKey('web.inv')?.clusterIPs[0] === '10.96.0.11');
    expect(await ask('web.inv.svc.cluster.local.', 'A')).toEqual(
      both(['web.inv.svc.cluster.local. 5 IN A 10.96.0.11']),
    );
    expect(await ask('11.0.96.10.in-addr.arpa.', 'PTR')).toEqual(
      both(['11.0.96.10.in-addr.arpa. 5 IN PTR web.inv.svc.cluster.local.']),
    );

    // Endpoint slice: the addresses of a headless service.
    expect(await ask('db.inv.svc.cluster.local.', 'A')).toEqual(both(['db.inv.svc.cluster.local. 5 IN A 10.244.0.1']));
    sb.apply(dbSlice('10.244.0.2'));
    await waitFor('slice changed', () => source.store.slicesWithAddress('10.244.0.2').length === 1);
    expect(await ask('db.inv.svc.cluster.local.', 'A')).toEqual(both(['db.inv.svc.cluster.local. 5 IN A 10.244.0.2']));

    // Pod (`pods verified`): a pod name answers only while a pod has the address.
    expect(await ask('10-244-1-5.inv.pod.cluster.local.', 'A')).toEqual(both([]));
    sb.apply(pod('inv', 'p1', '10.244.1.5'));
    await waitFor('pod added', () => source.store.podsWithIP('10.244.1.5').length === 1);
    expect(await ask('10-244-1-5.inv.pod.cluster.local.', 'A')).toEqual(
      both(['10-244-1-5.inv.pod.cluster.local. 5 IN A 10.244.1.5']),
    );

    // Namespace: a service answers only once its namespace exists.
    expect(await ask('api.late.svc.cluster.local.', 'A')).toEqual(both([]));
    sb.apply(ns('late'));
    await waitFor('namespace added', () => source.store.hasNamespace('late'));
    expect(await ask('api.late.svc.cluster.local.', 'A')).toEqual(
      both(['api.late.svc.cluster.local. 5 IN A 10.96.0.30']),
    );

    // External address (k8s_external reads it, uncached): both roles list the service, and both
    // readers were told of the address's change key.
    const externalOf = (r: Role): string[] =>
      kubernetesExternal(r.index.reader, {
        ttl: 5,
        namespaces: null,
        endpointPodNames: false,
        localIPs: () => [],
        upstream: () => Promise.resolve(null),
      })
        .servicesByExternalIP('192.0.2.7')
        .map((s) => `${s.namespace}/${s.name}`);
    expect(roles.map(externalOf)).toEqual(both([]));
    sb.apply(web('10.96.0.11', ['192.0.2.7']));
    await waitFor('external address added', () => source.store.servicesWithExternalIP('192.0.2.7').length === 1);
    expect(roles.map(externalOf)).toEqual(both(['inv/web']));
    for (const r of roles) expect(r.heard, r.name).toContain(changeKey.external('192.0.2.7'));

    // The replica heard every change key the source did, in the same order.
    expect(roles[1]!.heard).toEqual(roles[0]!.heard);
  });
});
