/**
 * The NodeLocal DNSCache part of the chart (`nodeLocalDNS`, docs/node-cache.md): off by default;
 * on, upstream's addon shape (ServiceAccount, kube-dns-upstream Service, Corefile template
 * ConfigMap, hostNetwork DaemonSet, headless metrics Service) running `clusterdns node-cache`, and
 * the Corefile node-cache generates from the template loads (`bin/clusterdns -validate`).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { generateCorefile } from '../../src/nodecache/corefile.js';
import { EMPTY_KUBE_DNS_CONFIG } from '../../src/nodecache/kubednsconfig.js';
import { arr, at, kinds, one, rec, render, runClusterdns, str } from './helm.js';

const work = mkdtempSync(path.join(tmpdir(), 'clusterdns-nodelocal-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

describe('nodeLocalDNS', () => {
  it('renders nothing of it by default', () => {
    const objs = render();
    expect(kinds(objs)).not.toContain('DaemonSet');
    expect(objs.some((o) => at(o, 'metadata', 'name') === 'kube-dns-upstream')).toBe(false);
  });

  it('renders the addon shape with clusterdns node-cache', () => {
    const objs = render({ values: { nodeLocalDNS: { enabled: true, dnsServer: '10.96.0.10' } } });
    const ds = one(objs, 'DaemonSet', 'node-local-dns');
    const pod = rec(ds, 'spec', 'template', 'spec');
    expect(pod['hostNetwork']).toBe(true);
    expect(pod['dnsPolicy']).toBe('Default');
    expect(pod['serviceAccountName']).toBe('node-local-dns');
    const c = rec(pod, 'containers', 0);
    expect(c['args']).toEqual([
      'node-cache',
      '-localip',
      '169.254.20.10,10.96.0.10',
      '-conf',
      '/etc/Corefile',
      '-upstreamsvc',
      'kube-dns-upstream',
      '-pidfile',
      '/tmp/node-cache.pid',
      '-health-port',
      '8080',
      '-metrics-listen-address',
      '0.0.0.0:9353',
      '-rules',
      'auto',
    ]);
    expect(at(c, 'securityContext', 'capabilities', 'add')).toEqual(['NET_ADMIN']);
    // No container ports: they would be host ports and block the surge pod of an upgrade.
    expect(c['ports']).toBeUndefined();
    expect(at(ds, 'spec', 'updateStrategy', 'rollingUpdate')).toEqual({ maxSurge: 1, maxUnavailable: 0 });
    expect(at(c, 'livenessProbe', 'httpGet')).toEqual({ host: '169.254.20.10', path: '/health', port: 8080 });
    const mounts = arr(c, 'volumeMounts').map((m) => at(m, 'mountPath'));
    expect(mounts).toEqual(['/run/xtables.lock', '/etc/coredns', '/etc/kube-dns']);

    // kube-dns-upstream selects the same pods as the kube-dns Service.
    const upstream = one(objs, 'Service', 'kube-dns-upstream');
    expect(at(upstream, 'spec', 'selector')).toEqual(at(one(objs, 'Service', 'kube-dns'), 'spec', 'selector'));
    expect('clusterIP' in rec(upstream, 'spec')).toBe(false);
    const role = one(objs, 'Role', 'node-local-dns');
    expect(at(role, 'rules', 0, 'resourceNames')).toEqual(['kube-dns-upstream']);
    expect(at(one(objs, 'Service', 'node-local-dns'), 'spec', 'clusterIP')).toBe('None');

    // The template: the chart filled domain and kube-dns IP; node-cache fills the rest.
    const template = str(one(objs, 'ConfigMap', 'node-local-dns'), 'data', 'Corefile');
    expect(template).toMatch(/^cluster\.local:53 \{/);
    expect(template).toContain('bind 169.254.20.10 10.96.0.10');
    expect(template).toContain('health 169.254.20.10:8080');
    expect(template).toContain('forward . __PILLAR__CLUSTER__DNS__ {');
    expect(template).toContain('prometheus :9253');
    expect(template).not.toContain('__PILLAR__DNS__DOMAIN__');

    const generated = generateCorefile({
      base: template,
      localIPs: ['169.254.20.10', '10.96.0.10'],
      port: 53,
      clusterDNS: '10.96.0.11',
      kubeDns: EMPTY_KUBE_DNS_CONFIG,
    });
    expect(generated.text).not.toContain('__PILLAR__');
    const file = path.join(work, 'Corefile');
    writeFileSync(file, generated.text);
    const v = runClusterdns(['-validate', '-conf', file]);
    expect(v.stdout + v.stderr).toMatch(/^Configuration OK: /);
    expect(v.status).toBe(0);
  });

  it('takes its own image and ports', () => {
    const objs = render({
      values: {
        nodeLocalDNS: {
          enabled: true,
          image: { repository: 'registry.example/clusterdns-node-cache', tag: '1.2.3' },
          healthPort: 8081,
          metricsPort: 9254,
          rules: 'iptables-legacy',
        },
      },
    });
    const c = rec(one(objs, 'DaemonSet', 'node-local-dns'), 'spec', 'template', 'spec', 'containers', 0);
    expect(c['image']).toBe('registry.example/clusterdns-node-cache:1.2.3');
    expect(c['args']).toContain('169.254.20.10');
    expect(c['args']).toContain('iptables-legacy');
    const template = str(one(objs, 'ConfigMap', 'node-local-dns'), 'data', 'Corefile');
    expect(template).toContain('health 169.254.20.10:8081');
    expect(template).toContain('prometheus :9254');
    expect(template).toContain('bind 169.254.20.10 __PILLAR__DNS__SERVER__');
  });
});
