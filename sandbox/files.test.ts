import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { parseYamlObjects } from './files.js';
import { type Sandbox, startSandbox } from './server.js';
import { clientsFor, collectWatch, nameOf, svc } from './testkit.js';
import { waitFor } from '../test/helpers/wait.js';

const FIXTURE = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'examples', 'cluster.yaml');

let sb: Sandbox | undefined;
let dir: string | undefined;
afterEach(async () => {
  await sb?.close();
  sb = undefined;
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
  dir = undefined;
});

function tmpFile(name: string, text: string): string {
  dir ??= fs.mkdtempSync(path.join(os.tmpdir(), 'sandbox-test-'));
  const p = path.join(dir, name);
  writeAtomic(p, text);
  return p;
}

/** Replace a file the way editors and kubectl do: write a temp file, then rename. */
function writeAtomic(p: string, text: string): void {
  const tmp = `${p}.tmp-${process.pid}`;
  fs.writeFileSync(tmp, text);
  fs.renameSync(tmp, p);
}

function docs(...objs: unknown[]): string {
  return objs.map((o) => stringify(o)).join('---\n');
}

describe('parseYamlObjects', () => {
  it('flattens Lists, reads multi-document YAML and skips empty documents', () => {
    const list = stringify({ apiVersion: 'v1', kind: 'List', items: [svc('a', 'x'), svc('a', 'y')] });
    expect(parseYamlObjects(list).map(nameOf)).toEqual(['x', 'y']);
    const multi = `---\n${stringify(svc('a', 'x'))}---\n---\n${stringify(svc('b', 'z'))}`;
    expect(parseYamlObjects(multi).map(nameOf)).toEqual(['x', 'z']);
    expect(parseYamlObjects('')).toEqual([]);
    expect(() => parseYamlObjects('a: [1, 2\nb: c: d\n')).toThrow();
    expect(() => parseYamlObjects('- 1\n- 2\n')).toThrow(/not a mapping/);
  });
});

describe('fixture examples/cluster.yaml', () => {
  it('holds exactly the records fixture plus default/kubernetes', async () => {
    const logged: string[] = [];
    sb = await startSandbox({ files: [FIXTURE], log: (level, msg) => logged.push(`${level} ${msg}`) });
    expect(logged).toEqual([]);
    const { core, discovery } = clientsFor(sb.url);
    const ns = await core.listNamespace({});
    expect(ns.items.map((n) => n.metadata?.name)).toEqual(['default', 'empty-ns', 'kube-system', 'testns']);

    const svcs = await core.listServiceForAllNamespaces({});
    const byName = new Map(svcs.items.map((s) => [`${s.metadata?.namespace}/${s.metadata?.name}`, s]));
    expect([...byName.keys()].sort()).toEqual(
      [
        'default/kubernetes',
        'kube-system/kube-dns',
        ...[
          'svc1',
          'svc2',
          'dual',
          'v6only',
          'noname',
          'hl',
          'hlnp',
          'hlempty',
          'skew',
          'manual',
          'ext',
          'extint',
          'extip',
        ].map((n) => `testns/${n}`),
      ].sort(),
    );
    const ip = (k: string): string[] | undefined => byName.get(k)?.spec?.clusterIPs;
    expect(ip('default/kubernetes')).toEqual(['10.96.0.1']);
    expect(byName.get('default/kubernetes')?.spec?.ports).toEqual([
      { name: 'https', port: 443, protocol: 'TCP', targetPort: 6443 },
    ]);
    expect(ip('kube-system/kube-dns')).toEqual(['10.96.0.10']);
    expect(byName.get('kube-system/kube-dns')?.spec?.ports?.map((p) => `${p.name} ${p.port}/${p.protocol}`)).toEqual([
      'dns 53/UDP',
      'dns-tcp 53/TCP',
      'metrics 9153/TCP',
    ]);
    expect(ip('testns/svc1')).toEqual(['10.96.0.11']);
    expect(byName.get('testns/svc1')?.spec?.ports?.[0]).toMatchObject({
      name: 'http',
      port: 80,
      protocol: 'TCP',
      targetPort: 8080,
    });
    expect(byName.get('testns/svc2')?.spec?.ports?.map((p) => p.name)).toEqual(['http', 'https']);
    expect(ip('testns/dual')).toEqual(['10.96.0.13', 'fd00:10:96::13']);
    expect(ip('testns/v6only')).toEqual(['fd00:10:96::14']);
    expect(byName.get('testns/noname')?.spec?.ports?.[0]?.name).toBeUndefined();
    expect(byName.get('testns/noname')?.spec?.ports?.[0]?.port).toBe(8080);
    for (const h of ['hl', 'hlnp', 'hlempty', 'skew']) expect(byName.get(`testns/${h}`)?.spec?.clusterIP).toBe('None');
    expect(byName.get('testns/hlnp')?.spec?.ports).toBeUndefined();
    expect(ip('testns/manual')).toEqual(['10.96.0.17']);
    expect(byName.get('testns/manual')?.spec?.selector).toBeUndefined();
    expect(byName.get('testns/ext')?.spec).toMatchObject({ type: 'ExternalName', externalName: 'www.example.com' });
    expect(byName.get('testns/extint')?.spec?.externalName).toBe('svc1.testns.svc.cluster.local');
    expect(byName.get('testns/extip')?.spec?.externalName).toBe('192.0.2.1');

    const slices = await discovery.listEndpointSliceForAllNamespaces({});
    const sl = new Map(slices.items.map((s) => [s.metadata?.name ?? '', s]));
    expect([...sl.keys()].sort()).toEqual(
      [
        'hl-v4',
        'hl-v6',
        'hlempty-x',
        'hlnp-x',
        'kube-dns-x',
        'kubernetes',
        'manual-1',
        'skew-a',
        'skew-b',
        'svc1-abc',
        'svc2-abc',
      ].sort(),
    );
    for (const s of slices.items) expect(s.metadata?.labels?.['kubernetes.io/service-name']).toBeTruthy();
    const summary = (name: string): string[] =>
      (sl.get(name)?.endpoints ?? []).map(
        (e) =>
          `${e.addresses.join(',')} ready=${String(e.conditions?.ready)} host=${e.hostname ?? '-'} ref=${e.targetRef?.name ?? '-'}`,
      );
    expect(summary('svc1-abc')).toEqual(['10.244.1.10 ready=true host=- ref=-']);
    expect(sl.get('svc1-abc')?.ports?.map((p) => `${p.name} ${p.port}/${p.protocol}`)).toEqual(['http 8080/TCP']);
    expect(summary('svc2-abc')).toEqual([]);
    expect(sl.get('svc2-abc')?.ports?.map((p) => `${p.name} ${p.port}`)).toEqual(['http 8080', 'https 8443']);
    expect(summary('hl-v4')).toEqual([
      '10.244.1.20 ready=true host=web-0 ref=web-0',
      '10.244.1.21 ready=true host=- ref=web-1',
      '10.244.1.22 ready=false host=- ref=-',
      '10.244.1.23 ready=undefined host=- ref=-',
    ]);
    const e22 = sl.get('hl-v4')?.endpoints[2]?.conditions;
    expect([e22?.serving, e22?.terminating]).toEqual([true, true]);
    expect(sl.get('hl-v6')?.addressType).toBe('IPv6');
    expect(summary('hl-v6')).toEqual(['fd00:10:244::21 ready=true host=- ref=web-1']);
    expect(summary('hlnp-x')).toEqual(['10.244.1.30 ready=true host=- ref=-']);
    expect(sl.get('hlnp-x')?.ports).toEqual([]);
    expect(summary('hlempty-x')).toEqual(['10.244.1.40 ready=false host=- ref=-']);
    expect(summary('skew-a')).toEqual(['10.244.1.60 ready=true host=- ref=-']);
    expect(summary('skew-b')).toEqual(['10.244.1.60 ready=true host=- ref=-']);
    expect(summary('manual-1')).toEqual(['192.0.2.10 ready=true host=- ref=-']);
    expect(sl.get('manual-1')?.ports?.map((p) => `${p.name} ${p.port}/${p.protocol}`)).toEqual(['pg 5432/TCP']);
    expect(summary('kube-dns-x')).toEqual(['10.244.0.5 ready=true host=- ref=-']);
    expect(sl.get('kube-dns-x')?.metadata?.namespace).toBe('kube-system');
    expect(sl.get('kube-dns-x')?.ports?.map((p) => `${p.name} ${p.port}/${p.protocol}`)).toEqual([
      'dns 53/UDP',
      'dns-tcp 53/TCP',
      'metrics 9153/TCP',
    ]);
    expect(slices.items.filter((s) => s.addressType !== 'IPv4').map((s) => s.metadata?.name)).toEqual(['hl-v6']);

    const pods = await core.listPodForAllNamespaces({});
    expect(pods.items.map((p) => `${p.metadata?.namespace}/${p.status?.podIP}/${p.status?.phase}`).sort()).toEqual([
      'default/10.244.2.8/Running',
      'kube-system/10.244.0.5/Running',
      'testns/10.244.2.7/Running',
    ]);
    const client = pods.items.find((p) => p.metadata?.name === 'client');
    expect(client?.status?.podIPs?.map((x) => x.ip)).toEqual(['10.244.2.7', 'fd00:10:244::7']);
    expect(pods.items.find((p) => p.metadata?.name === 'other')?.metadata?.namespace).toBe('default');
  });
});

describe('file watching', () => {
  it('emits ADDED/MODIFIED/DELETED for file changes, nothing for unchanged objects', async () => {
    const f = tmpFile('objs.yaml', docs(svc('n', 'keep'), svc('n', 'change'), svc('n', 'drop')));
    sb = await startSandbox({ files: [f], filePollMs: 50, log: () => undefined });
    const { core, watch } = clientsFor(sb.url);
    const list = await core.listServiceForAllNamespaces({});
    expect(list.items.map((s) => s.metadata?.name)).toEqual(['change', 'drop', 'keep']);
    const w = await collectWatch(watch, '/api/v1/services', { resourceVersion: list.metadata?.resourceVersion });

    writeAtomic(f, docs(svc('n', 'keep'), svc('n', 'change', { labels: { v: '2' } }), svc('n', 'new')));
    await waitFor('three events', () => w.events.length >= 3);
    const seen = w.events.map((e) => `${e.type} ${nameOf(e.object)}`).sort();
    expect(seen).toEqual(['ADDED new', 'DELETED drop', 'MODIFIED change']);
    const after = await core.listServiceForAllNamespaces({});
    expect(after.items.map((s) => s.metadata?.name)).toEqual(['change', 'keep', 'new']);
    expect(after.items[0]?.metadata?.labels).toEqual({ v: '2' });
    // the unchanged object was not re-emitted: its resourceVersion is the original one
    const keepBefore = list.items.find((s) => s.metadata?.name === 'keep');
    const keepAfter = after.items.find((s) => s.metadata?.name === 'keep');
    expect(keepAfter?.metadata?.resourceVersion).toBe(keepBefore?.metadata?.resourceVersion);
    w.abort();
  });

  it('reads a kind: List file and a second file; the fs.watch hint picks up rewrites', async () => {
    const a = tmpFile('a.yaml', stringify({ apiVersion: 'v1', kind: 'List', items: [svc('n', 'a1')] }));
    const b = tmpFile('b.yaml', docs({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'n' } }));
    // a long poll interval: the change must be noticed through the directory watch
    sb = await startSandbox({ files: [a, b], filePollMs: 3_600_000, log: () => undefined });
    const { core } = clientsFor(sb.url);
    expect((await core.listNamespace({})).items.map((n) => n.metadata?.name)).toEqual(['n']);
    writeAtomic(a, stringify({ apiVersion: 'v1', kind: 'List', items: [svc('n', 'a1'), svc('n', 'a2')] }));
    let names: string[] = [];
    await waitFor(
      () => `a2 to appear; services: ${names.join(',')}`,
      async () => {
        names = (await core.listServiceForAllNamespaces({})).items.map((s) => s.metadata?.name ?? '');
        return names.length === 2;
      },
    );
    expect(names).toEqual(['a1', 'a2']);
  });

  it('keeps the previous state when a file becomes malformed, and recovers when fixed', async () => {
    const f = tmpFile('objs.yaml', docs(svc('n', 'a'), svc('n', 'b')));
    const warnings: string[] = [];
    sb = await startSandbox({
      files: [f],
      filePollMs: 50,
      log: (level, msg) => {
        if (level === 'WARNING') warnings.push(msg);
      },
    });
    const { core, watch } = clientsFor(sb.url);
    const rv = sb.resourceVersion();
    const w = await collectWatch(watch, '/api/v1/services', { resourceVersion: rv });
    writeAtomic(f, 'apiVersion: v1\nkind: Service\nmetadata: {name: [unclosed\n');
    await waitFor('a warning', () => warnings.length > 0);
    expect(warnings[0]).toContain('objs.yaml');
    expect(warnings[0]).toContain('keeping previous objects');
    expect(sb.resourceVersion()).toBe(rv);
    expect((await core.listServiceForAllNamespaces({})).items.map((s) => s.metadata?.name)).toEqual(['a', 'b']);
    // an object without a name is malformed too
    writeAtomic(f, docs({ apiVersion: 'v1', kind: 'Service', metadata: {} }));
    await waitFor('a second warning', () => warnings.length > 1);
    expect((await core.listServiceForAllNamespaces({})).items).toHaveLength(2);
    writeAtomic(f, docs(svc('n', 'a')));
    await waitFor('delete event', () => w.events.length >= 1);
    expect(w.events.map((e) => `${e.type} ${nameOf(e.object)}`)).toEqual(['DELETED b']);
    w.abort();
  });
});
