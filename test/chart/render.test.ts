/**
 * helm lint / helm template tests for charts/clusterdns. Needs helm (scripts/install-helm.sh);
 * fails, never skips, when it is missing.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { MiB, threadsForMemory } from '../../src/util/cpus.js';
import { heapPlan } from '../../src/util/heap.js';
import { fakeCgroupRoot } from '../helpers/cgroup.js';
import {
  CHART_DIR,
  arr,
  at,
  container,
  corefileOf,
  helmTemplateError,
  helmVersion,
  isObject,
  kinds,
  one,
  podLabels,
  rec,
  render,
  renderNotes,
  runHelm,
  str,
} from './helm.js';

const GOLDEN_DIR = path.join(path.dirname(new URL(import.meta.url).pathname), 'golden');
const UPDATE = process.env.UPDATE_GOLDEN === '1';

function golden(name: string, actual: string): void {
  const file = path.join(GOLDEN_DIR, name);
  if (UPDATE) writeFileSync(file, actual);
  expect(actual).toBe(readFileSync(file, 'utf8'));
}

function expectSelects(selector: Record<string, unknown>, labels: Record<string, unknown>): void {
  expect(Object.keys(selector).length).toBeGreaterThan(0);
  for (const [k, v] of Object.entries(selector)) expect(labels[k], `label ${k}`).toBe(v);
}

function ports(obj: unknown): unknown[] {
  return arr(obj, 'spec', 'ports');
}

describe('helm lint', () => {
  it('uses the pinned helm', () => {
    expect(helmVersion()).toMatch(/^v3\.\d+\.\d+$/);
  });

  it('passes --strict with default values', () => {
    const r = runHelm(['lint', '--strict', CHART_DIR, '--namespace', 'kube-system']);
    expect(r.stdout + r.stderr).toContain('0 chart(s) failed');
    expect(r.status).toBe(0);
  });

  it('passes --strict with customised values', () => {
    const r = runHelm([
      'lint',
      '--strict',
      CHART_DIR,
      '--set',
      'hpa.enabled=true',
      '--set',
      'prometheus.service.enabled=true',
      '--set',
      'prometheus.monitor.enabled=true',
      '--set',
      'prometheus.monitor.skipCapabilityCheck=true',
      '--set',
      'service.clusterIP=10.0.0.10',
      '--set',
      'stubDomains.consul\\.local[0]=10.150.0.1',
    ]);
    expect(r.status, r.stdout + r.stderr).toBe(0);
  });

  it('rejects values that violate values.schema.json', () => {
    const r = runHelm(['lint', '--strict', CHART_DIR, '--set', 'serviceType=Foo']);
    expect(r.status).not.toBe(0);
    expect(r.stdout + r.stderr).toMatch(/serviceType/);
  });
});

describe('ports below 1024 without a capability (lowPorts)', () => {
  const podContext = (o: Parameters<typeof render>[0]): unknown =>
    at(one(render(o), 'Deployment'), 'spec', 'template', 'spec', 'securityContext');
  const SYSCTL = 'net.ipv4.ip_unprivileged_port_start';
  /** One server block on `port` (the default block's plugins, without the probes' plugins). */
  const highPort = {
    servers: [
      {
        zones: [{ zone: '.', use_tcp: true }],
        port: 1053,
        servicePort: 53,
        plugins: [{ name: 'errors' }, { name: 'forward', parameters: '. /etc/resolv.conf' }],
      },
    ],
    livenessProbe: { enabled: false },
    readinessProbe: { enabled: false },
  };

  it('sets the sysctl to the lowest container port, after sysctls the operator gave', () => {
    const ctx = podContext({
      values: { podSecurityContext: { sysctls: [{ name: 'net.ipv4.tcp_syncookies', value: '1' }] } },
    });
    expect(at(ctx, 'sysctls')).toEqual([
      { name: 'net.ipv4.tcp_syncookies', value: '1' },
      { name: SYSCTL, value: '53' },
    ]);
  });

  it("keeps the operator's own value of that sysctl", () => {
    const ctx = podContext({ values: { podSecurityContext: { sysctls: [{ name: SYSCTL, value: '0' }] } } });
    expect(at(ctx, 'sysctls')).toEqual([{ name: SYSCTL, value: '0' }]);
  });

  it('a high container port behind the Service port 53 needs no sysctl, with lowPorts sysctl or none', () => {
    for (const lowPorts of ['sysctl', 'none']) {
      const objs = render({ values: { ...highPort, lowPorts } });
      const deploy = one(objs, 'Deployment');
      expect(at(deploy, 'spec', 'template', 'spec', 'securityContext')).toEqual({
        seccompProfile: { type: 'RuntimeDefault' },
      });
      expect(arr(container(deploy), 'ports')).toEqual([
        { containerPort: 1053, name: 'udp-1053', protocol: 'UDP' },
        { containerPort: 1053, name: 'tcp-1053', protocol: 'TCP' },
      ]);
      expect(ports(one(objs, 'Service', 'kube-dns'))).toEqual([
        { name: 'udp-1053', port: 53, protocol: 'UDP', targetPort: 1053 },
        { name: 'tcp-1053', port: 53, protocol: 'TCP', targetPort: 1053 },
      ]);
      expect(corefileOf(objs)).toContain('.:1053 {');
    }
  });

  it('lowPorts none refuses a port below 1024 the container could not bind, unless it runs as root', () => {
    expect(helmTemplateError({ set: ['lowPorts=none'] })).toMatch(
      /port 53 is below 1024 and lowPorts is "none": the container \(no capability, not root\) cannot bind it/,
    );
    expect(
      podContext({ set: ['lowPorts=none', 'securityContext.runAsUser=0', 'securityContext.runAsNonRoot=false'] }),
    ).toEqual({
      seccompProfile: { type: 'RuntimeDefault' },
    });
  });
});

describe('default render (kube-system, release clusterdns)', () => {
  const objs = render();
  const deploy = one(objs, 'Deployment');
  const svc = one(objs, 'Service', 'kube-dns');
  const c = container(deploy);

  it('renders exactly the expected objects', () => {
    expect(kinds(objs)).toEqual([
      'ClusterRole/system:clusterdns',
      'ClusterRoleBinding/system:clusterdns',
      'ConfigMap/coredns',
      'Deployment/clusterdns',
      'PodDisruptionBudget/clusterdns',
      'Service/kube-dns',
      'ServiceAccount/clusterdns',
    ]);
    for (const o of objs) {
      expect(o.metadata.name.length).toBeLessThanOrEqual(63);
      if (!o.kind.startsWith('ClusterRole')) expect(o.metadata.namespace).toBe('kube-system');
    }
  });

  it('has the kube-dns Service with the fixed clusterIP, the coredns chart port names and annotations', () => {
    expect(str(svc, 'spec', 'clusterIP')).toBe('10.96.0.10');
    expect(str(svc, 'spec', 'type')).toBe('ClusterIP');
    expect(ports(svc)).toEqual([
      { name: 'udp-53', port: 53, protocol: 'UDP', targetPort: 53 },
      { name: 'tcp-53', port: 53, protocol: 'TCP', targetPort: 53 },
      { name: 'metrics', port: 9153, protocol: 'TCP', targetPort: 9153 },
    ]);
    expect(svc.metadata.annotations).toEqual({ 'prometheus.io/port': '9153', 'prometheus.io/scrape': 'true' });
    expect(svc.metadata.labels?.['k8s-app']).toBe('kube-dns');
    expect(svc.metadata.labels?.['kubernetes.io/cluster-service']).toBe('true');
    expect(svc.metadata.labels?.['app.kubernetes.io/name']).toBe('kube-dns');
    expect(at(svc, 'spec')).not.toHaveProperty('trafficDistribution');
  });

  it('selects the pods by k8s-app=kube-dns', () => {
    const selector = rec(svc, 'spec', 'selector');
    expect(selector['k8s-app']).toBe('kube-dns');
    expectSelects(selector, podLabels(deploy));
    expectSelects(rec(deploy, 'spec', 'selector', 'matchLabels'), podLabels(deploy));
    expect(podLabels(deploy)['k8s-app']).toBe('kube-dns');
  });

  it('runs the server like CoreDNS: args, ports, probes', () => {
    expect(at(deploy, 'spec', 'replicas')).toBe(2);
    expect(c.args).toEqual(['-conf', '/etc/coredns/Corefile']);
    expect(c.ports).toEqual([
      { containerPort: 53, name: 'udp-53', protocol: 'UDP' },
      { containerPort: 53, name: 'tcp-53', protocol: 'TCP' },
      { containerPort: 9153, name: 'tcp-9153', protocol: 'TCP' },
      { containerPort: 8080, name: 'liveness-probe', protocol: 'TCP' },
      { containerPort: 8181, name: 'readiness-probe', protocol: 'TCP' },
    ]);
    expect(at(c, 'livenessProbe', 'httpGet')).toEqual({ path: '/health', port: 'liveness-probe', scheme: 'HTTP' });
    expect(at(c, 'readinessProbe', 'httpGet')).toEqual({ path: '/ready', port: 'readiness-probe', scheme: 'HTTP' });
    expect(at(c, 'readinessProbe', 'failureThreshold')).toBe(3);
  });

  it('derives NODE_OPTIONS from the memory limit', () => {
    expect(at(c, 'resources', 'limits', 'memory')).toBe('256Mi');
    expect(c.env).toEqual([{ name: 'NODE_OPTIONS', value: '--max-old-space-size=112' }]);
  });

  it('has a restricted security context without any capability; port 53 comes from the pod sysctl', () => {
    expect(c.securityContext).toEqual({
      runAsNonRoot: true,
      runAsUser: 65532,
      runAsGroup: 65532,
      readOnlyRootFilesystem: true,
      allowPrivilegeEscalation: false,
      capabilities: { drop: ['ALL'] },
      seccompProfile: { type: 'RuntimeDefault' },
    });
    expect(at(deploy, 'spec', 'template', 'spec', 'securityContext')).toEqual({
      seccompProfile: { type: 'RuntimeDefault' },
      sysctls: [{ name: 'net.ipv4.ip_unprivileged_port_start', value: '53' }],
    });
  });

  it('follows the cluster-critical pod conventions', () => {
    const spec = rec(deploy, 'spec', 'template', 'spec');
    expect(spec.priorityClassName).toBe('system-cluster-critical');
    expect(spec.dnsPolicy).toBe('Default');
    expect(spec.nodeSelector).toEqual({ 'kubernetes.io/os': 'linux' });
    expect(spec.tolerations).toContainEqual({ key: 'CriticalAddonsOnly', operator: 'Exists' });
    expect(spec.terminationGracePeriodSeconds).toBe(30);
    expect(at(deploy, 'spec', 'strategy')).toEqual({
      type: 'RollingUpdate',
      rollingUpdate: { maxUnavailable: 1, maxSurge: '25%' },
    });
    const pref = arr(spec, 'affinity', 'podAntiAffinity', 'preferredDuringSchedulingIgnoredDuringExecution');
    expect(at(pref, 0, 'podAffinityTerm', 'topologyKey')).toBe('kubernetes.io/hostname');
    expectSelects(rec(pref, 0, 'podAffinityTerm', 'labelSelector', 'matchLabels'), podLabels(deploy));
    expect(str(deploy, 'spec', 'template', 'metadata', 'annotations', 'checksum/config')).toMatch(/^[0-9a-f]{64}$/);
  });

  it('mounts the coredns ConfigMap read-only at /etc/coredns', () => {
    expect(c.volumeMounts).toEqual([{ name: 'config-volume', mountPath: '/etc/coredns', readOnly: true }]);
    expect(at(deploy, 'spec', 'template', 'spec', 'volumes')).toEqual([
      { name: 'config-volume', configMap: { name: 'coredns', items: [{ key: 'Corefile', path: 'Corefile' }] } },
    ]);
  });

  it('renders the default Corefile of the coredns chart (golden)', () => {
    golden('Corefile.default', corefileOf(objs));
  });

  it('grants exactly list+watch on services, namespaces, pods and endpointslices', () => {
    const role = one(objs, 'ClusterRole');
    const granted: string[] = [];
    for (const rule of arr(role, 'rules')) {
      expect(at(rule, 'verbs')).toEqual(['list', 'watch']);
      for (const g of arr(rule, 'apiGroups'))
        for (const r of arr(rule, 'resources')) granted.push(`${String(g)}/${String(r)}`);
      expect(rule).not.toHaveProperty('resourceNames');
    }
    expect(granted.sort()).toEqual(['/namespaces', '/pods', '/services', 'discovery.k8s.io/endpointslices']);
  });

  it('grants list+watch on mcs-api serviceimports when a kubernetes block has multicluster, or rbac.multicluster', () => {
    const grantedBy = (o: Parameters<typeof render>[0]): string[] => {
      const out: string[] = [];
      for (const rule of arr(one(render(o), 'ClusterRole'), 'rules')) {
        expect(at(rule, 'verbs')).toEqual(['list', 'watch']);
        for (const g of arr(rule, 'apiGroups'))
          for (const r of arr(rule, 'resources')) out.push(`${String(g)}/${String(r)}`);
      }
      return out.sort();
    };
    const base = ['/namespaces', '/pods', '/services', 'discovery.k8s.io/endpointslices'];
    const withImports = [...base, 'multicluster.x-k8s.io/serviceimports'].sort();
    const server = (configBlock: string) => ({
      servers: [
        {
          zones: [{ zone: '.' }],
          port: 53,
          plugins: [
            { name: 'errors' },
            { name: 'health' },
            { name: 'ready' },
            { name: 'kubernetes', parameters: 'cluster.local clusterset.local in-addr.arpa ip6.arpa', configBlock },
          ],
        },
      ],
    });
    expect(grantedBy({ values: server('pods insecure\nmulticluster clusterset.local') })).toEqual(withImports);
    expect(grantedBy({ values: server('pods insecure\nfallthrough in-addr.arpa ip6.arpa') })).toEqual(base);
    expect(grantedBy({ set: ['rbac.multicluster=true'] })).toEqual(withImports);
  });

  it('binds the ClusterRole to the dedicated ServiceAccount the pods use', () => {
    const sa = one(objs, 'ServiceAccount');
    const crb = one(objs, 'ClusterRoleBinding');
    expect(at(crb, 'roleRef')).toEqual({
      apiGroup: 'rbac.authorization.k8s.io',
      kind: 'ClusterRole',
      name: 'system:clusterdns',
    });
    expect(at(crb, 'subjects')).toEqual([{ kind: 'ServiceAccount', name: sa.metadata.name, namespace: 'kube-system' }]);
    expect(at(deploy, 'spec', 'template', 'spec', 'serviceAccountName')).toBe(sa.metadata.name);
    expect(sa.metadata.name).not.toBe('default');
  });

  it('has a PodDisruptionBudget with maxUnavailable 1 over the pods', () => {
    const pdb = one(objs, 'PodDisruptionBudget');
    expect(pdb.apiVersion).toBe('policy/v1');
    expect(at(pdb, 'spec', 'maxUnavailable')).toBe(1);
    expectSelects(rec(pdb, 'spec', 'selector', 'matchLabels'), podLabels(deploy));
  });

  it('labels every object with the common labels', () => {
    for (const o of objs) {
      expect(o.metadata.labels?.['app.kubernetes.io/instance'], `${o.kind}`).toBe('clusterdns');
      expect(o.metadata.labels?.['k8s-app'], `${o.kind}`).toBe('kube-dns');
      expect(o.metadata.labels?.['helm.sh/chart'], `${o.kind}`).toBe('clusterdns-0.1.0');
    }
  });
});

describe('customised values', () => {
  it('sets a custom clusterIP and dual-stack clusterIPs with trafficDistribution inside the Service', () => {
    const svc = one(
      render({
        values: {
          service: {
            clusterIP: '',
            clusterIPs: ['10.32.0.10', 'fd00:10:96::a'],
            ipFamilyPolicy: 'RequireDualStack',
            trafficDistribution: 'PreferClose',
          },
        },
      }),
      'Service',
    );
    expect(at(svc, 'spec', 'clusterIP')).toBe('10.32.0.10');
    expect(at(svc, 'spec', 'clusterIPs')).toEqual(['10.32.0.10', 'fd00:10:96::a']);
    expect(at(svc, 'spec', 'ipFamilyPolicy')).toBe('RequireDualStack');
    expect(at(svc, 'spec', 'trafficDistribution')).toBe('PreferClose');
    const single = one(render({ set: ['service.clusterIP=10.100.0.10', 'service.name=dns'] }), 'Service');
    expect(single.metadata.name).toBe('dns');
    expect(at(single, 'spec', 'clusterIP')).toBe('10.100.0.10');
    expect(at(single, 'spec')).not.toHaveProperty('clusterIPs');
  });

  it('defaults ipFamilyPolicy to PreferDualStack for two clusterIPs and refuses SingleStack with two', () => {
    const svc = one(
      render({ values: { service: { clusterIP: '10.96.0.10', clusterIPs: ['10.96.0.10', 'fd00::a'] } } }),
      'Service',
    );
    expect(at(svc, 'spec', 'ipFamilyPolicy')).toBe('PreferDualStack');
    expect(
      helmTemplateError({
        values: { service: { clusterIPs: ['10.96.0.10', 'fd00::a'], ipFamilyPolicy: 'SingleStack' } },
      }),
    ).toMatch(/SingleStack/);
  });

  it('refuses a clusterIP that differs from clusterIPs[0]', () => {
    expect(helmTemplateError({ values: { service: { clusterIP: '10.96.0.10', clusterIPs: ['10.32.0.10'] } } })).toMatch(
      /clusterIPs/,
    );
  });

  it('renders an extra server block, stub domains and moved health/ready/metrics ports', () => {
    const objs = render({
      values: {
        servers: [
          {
            zones: [{ zone: '.', use_tcp: true }],
            port: 53,
            plugins: [
              { name: 'errors' },
              { name: 'health', parameters: ':8090', configBlock: 'lameduck 5s' },
              { name: 'ready', parameters: '0.0.0.0:8191' },
              {
                name: 'kubernetes',
                parameters: 'cluster.local in-addr.arpa ip6.arpa',
                configBlock: 'pods insecure\nfallthrough in-addr.arpa ip6.arpa',
              },
              { name: 'prometheus', parameters: ':9253' },
              { name: 'forward', parameters: '. /etc/resolv.conf', configBlock: 'max_concurrent 1000' },
              { name: 'cache', parameters: 30 },
            ],
          },
          {
            zones: [{ zone: 'example.com.' }, { zone: 'example.net.', scheme: 'dns://', use_tcp: true }],
            port: 5353,
            plugins: [{ name: 'errors' }, { name: 'forward', parameters: '. 10.0.0.53' }],
          },
        ],
        extraConfig: { import: { parameters: '/etc/coredns/custom/*.server' } },
        stubDomains: { 'consul.local': ['10.150.0.1', '10.150.0.2'], 'acme.internal.': ['192.168.0.53'] },
      },
    });
    golden('Corefile.custom', corefileOf(objs));
    const svc = one(objs, 'Service');
    expect(ports(svc)).toEqual([
      { name: 'udp-53', port: 53, protocol: 'UDP', targetPort: 53 },
      { name: 'tcp-53', port: 53, protocol: 'TCP', targetPort: 53 },
      { name: 'udp-5353', port: 5353, protocol: 'UDP', targetPort: 5353 },
      { name: 'tcp-5353', port: 5353, protocol: 'TCP', targetPort: 5353 },
      { name: 'metrics', port: 9253, protocol: 'TCP', targetPort: 9253 },
    ]);
    expect(svc.metadata.annotations?.['prometheus.io/port']).toBe('9253');
    const c = container(one(objs, 'Deployment'));
    const byName = new Map(arr(c, 'ports').map((p) => [str(p, 'name'), at(p, 'containerPort')]));
    expect(byName.get('liveness-probe')).toBe(8090);
    expect(byName.get('readiness-probe')).toBe(8191);
    expect(byName.get('tcp-9253')).toBe(9253);
    expect(at(c, 'livenessProbe', 'httpGet', 'port')).toBe('liveness-probe');
  });

  it('skipConfig: no ConfigMap and no checksum, the Deployment mounts every key of configmap.name', () => {
    const objs = render({ set: ['deployment.skipConfig=true', 'configmap.name=my-corefile'] });
    expect(objs.filter((o) => o.kind === 'ConfigMap')).toEqual([]);
    const deploy = one(objs, 'Deployment');
    expect(at(deploy, 'spec', 'template', 'metadata', 'annotations') ?? {}).not.toHaveProperty('checksum/config');
    expect(at(deploy, 'spec', 'template', 'spec', 'volumes', 0, 'configMap')).toEqual({ name: 'my-corefile' });
  });

  it('hpa on: autoscaling/v2 HPA and no fixed replicas', () => {
    const objs = render({
      values: {
        hpa: {
          enabled: true,
          minReplicas: 3,
          maxReplicas: 8,
          metrics: [
            { type: 'Resource', resource: { name: 'cpu', target: { type: 'Utilization', averageUtilization: 70 } } },
          ],
        },
      },
    });
    const hpa = one(objs, 'HorizontalPodAutoscaler');
    expect(hpa.apiVersion).toBe('autoscaling/v2');
    expect(at(hpa, 'spec', 'scaleTargetRef')).toEqual({
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      name: 'clusterdns',
    });
    expect(at(hpa, 'spec', 'minReplicas')).toBe(3);
    expect(at(hpa, 'spec', 'maxReplicas')).toBe(8);
    expect(at(one(objs, 'Deployment'), 'spec')).not.toHaveProperty('replicas');
  });

  it('ServiceMonitor: only when monitoring.coreos.com/v1 is served (or forced), scraping the kube-dns metrics port', () => {
    expect(render({ set: ['prometheus.monitor.enabled=true'] }).filter((o) => o.kind === 'ServiceMonitor')).toEqual([]);
    for (const o of [
      { set: ['prometheus.monitor.enabled=true'], apiVersions: ['monitoring.coreos.com/v1'] },
      { set: ['prometheus.monitor.enabled=true', 'prometheus.monitor.skipCapabilityCheck=true'] },
    ]) {
      const objs = render(o);
      const sm = one(objs, 'ServiceMonitor');
      expect(sm.apiVersion).toBe('monitoring.coreos.com/v1');
      expect(at(sm, 'spec', 'endpoints', 0, 'port')).toBe('metrics');
      const selected = objs.filter((x) => {
        if (x.kind !== 'Service') return false;
        const want = rec(sm, 'spec', 'selector', 'matchLabels');
        return Object.entries(want).every(([k, v]) => x.metadata.labels?.[k] === v);
      });
      expect(selected.map((s) => s.metadata.name)).toEqual(['kube-dns']);
      expect(ports(selected[0]).some((p) => isObject(p) && p.name === 'metrics')).toBe(true);
    }
  });

  it('metrics Service: port metrics 9153 selecting the pods', () => {
    const objs = render({ set: ['prometheus.service.enabled=true'] });
    const m = one(objs, 'Service', 'clusterdns-metrics');
    expect(ports(m)).toEqual([{ name: 'metrics', port: 9153, protocol: 'TCP', targetPort: 9153 }]);
    expectSelects(rec(m, 'spec', 'selector'), podLabels(one(objs, 'Deployment')));
  });

  it('changes checksum/config when, and only when, the Corefile changes', () => {
    const sum = (o: Parameters<typeof render>[0]): string =>
      str(one(render(o), 'Deployment'), 'spec', 'template', 'metadata', 'annotations', 'checksum/config');
    const base = sum({});
    expect(sum({ set: ['replicaCount=3'] })).toBe(base);
    expect(sum({ set: ['stubDomains.consul\\.local[0]=10.150.0.1'] })).not.toBe(base);
    expect(sum({ set: ['extraConfig.import.parameters=/etc/coredns/custom/*.server'] })).not.toBe(base);
  });

  it('derives --max-old-space-size from other memory limits', () => {
    const nodeOptions = (mem: string, pct?: number): unknown => {
      const set = [`resources.limits.memory=${mem}`];
      if (pct !== undefined) set.push(`nodeOptions.maxOldSpacePercent=${pct}`);
      return at(container(one(render({ set }), 'Deployment')), 'env', 0, 'value');
    };
    // The main thread's share of what its query threads (96 MiB each) leave: as many as the limit
    // allows, 1 + (limit − 160) / 96, unless clusterdns.workers says.
    expect(nodeOptions('1Gi')).toBe('--max-old-space-size=112');
    expect(nodeOptions('500M')).toBe('--max-old-space-size=131');
    expect(nodeOptions('512Mi', 50)).toBe('--max-old-space-size=112');
    expect(nodeOptions('170Mi')).toBe('--max-old-space-size=119');
    const withWorkers = (mem: string, workers: number): unknown =>
      at(
        container(
          one(render({ set: [`resources.limits.memory=${mem}`, `clusterdns.workers=${workers}`] }), 'Deployment'),
        ),
        'env',
        0,
        'value',
      );
    expect(withWorkers('1Gi', 1)).toBe('--max-old-space-size=716');
    expect(withWorkers('1Gi', 4)).toBe('--max-old-space-size=515');
    // The template's rule is the launcher's (src/util/heap.ts, src/util/cpus.ts), for the threads
    // the memory limit allows and for an explicit count.
    for (const mib of [170, 256, 300, 512, 1024]) {
      const root = fakeCgroupRoot({ 'memory.max': String(mib * MiB) });
      const threads = threadsForMemory(mib * MiB);
      expect(nodeOptions(`${mib}Mi`)).toBe(
        heapPlan({ CLUSTERDNS_CGROUP_ROOT: root }, [], ['-workers', String(threads)]).flag,
      );
      expect(withWorkers(`${mib}Mi`, 1)).toBe(heapPlan({ CLUSTERDNS_CGROUP_ROOT: root }, [], ['-workers', '1']).flag);
    }
    expect(helmTemplateError({ set: ['resources.limits.memory=256Mi', 'clusterdns.workers=4'] })).toMatch(
      /leaves only .* with 4 query threads/,
    );
    expect(helmTemplateError({ set: ['resources.limits.memory=lots'] })).toMatch(/unsupported quantity/);
    const noLimit = container(one(render({ values: { resources: { limits: null } } }), 'Deployment'));
    expect(noLimit).not.toHaveProperty('env');
  });

  it('refuses terminationGracePeriodSeconds not above the lameduck time', () => {
    expect(helmTemplateError({ set: ['terminationGracePeriodSeconds=10'] })).toMatch(/lameduck/);
  });

  it('keeps a stopping pod answering until it has left the Service: lameduck outlasts the readiness probe', () => {
    // test/cluster/rollout.test.ts measures what these defaults are for: no query lost in rollouts.
    const d = one(render(), 'Deployment');
    expect(at(container(d), 'readinessProbe', 'periodSeconds')).toBe(2);
    expect(at(container(d), 'readinessProbe', 'failureThreshold')).toBe(3);
    expect(corefileOf(render())).toContain('lameduck 15s');
    expect(renderNotes()).not.toMatch(/WARNING: the health plugin's lameduck/);
    const notes = renderNotes({ set: ['readinessProbe.periodSeconds=5'] });
    expect(notes).toMatch(
      /WARNING: the health plugin's lameduck \(15s\) is shorter than readinessProbe\.periodSeconds x\s+failureThreshold \(15s\) \+ 3s/,
    );
    expect(renderNotes({ set: ['readinessProbe.enabled=false', 'readinessProbe.periodSeconds=5'] })).not.toMatch(
      /WARNING/,
    );
  });

  it('refuses probes without the plugin that serves them', () => {
    const servers = [{ zones: [{ zone: '.' }], port: 53, plugins: [{ name: 'whoami' }] }];
    expect(helmTemplateError({ values: { servers } })).toMatch(/health plugin/);
    const objs = render({ values: { servers, livenessProbe: { enabled: false }, readinessProbe: { enabled: false } } });
    const c = container(one(objs, 'Deployment'));
    expect(c).not.toHaveProperty('livenessProbe');
    // As in the coredns chart, TCP is exposed only with use_tcp (or a TCP scheme).
    expect(c.ports).toEqual([{ containerPort: 53, name: 'udp-53', protocol: 'UDP' }]);
  });

  it('refuses health/ready addresses the kubelet cannot reach', () => {
    const servers = (health: string) => [
      {
        zones: [{ zone: '.', use_tcp: true }],
        port: 53,
        plugins: [{ name: 'health', parameters: health }, { name: 'ready' }],
      },
    ];
    expect(helmTemplateError({ values: { servers: servers('127.0.0.1:8080') } })).toMatch(/kubelet cannot reach/);
    expect(helmTemplateError({ values: { servers: servers('localhost:8080') } })).toMatch(/kubelet cannot reach/);
    const ok = container(one(render({ values: { servers: servers('0.0.0.0:8088') } }), 'Deployment'));
    expect(arr(ok, 'ports')).toContainEqual({ containerPort: 8088, name: 'liveness-probe', protocol: 'TCP' });
  });

  it('honours naming overrides, k8sAppLabelOverride and isClusterService=false', () => {
    const long = 'x'.repeat(70);
    const objs = render({
      set: [
        `fullnameOverride=${long}`,
        'clusterRole.nameOverride=system:coredns',
        'k8sAppLabelOverride=my-dns',
        'podAntiAffinityPreset=hard',
      ],
    });
    const deploy = one(objs, 'Deployment');
    expect(deploy.metadata.name).toBe('x'.repeat(63));
    expect(one(objs, 'ClusterRole').metadata.name).toBe('system:coredns');
    expect(podLabels(deploy)['k8s-app']).toBe('my-dns');
    expect(at(deploy, 'spec', 'template', 'spec', 'affinity', 'podAntiAffinity')).toHaveProperty(
      'requiredDuringSchedulingIgnoredDuringExecution',
    );
    const plain = one(render({ set: ['isClusterService=false'] }), 'Deployment');
    expect(podLabels(plain)).not.toHaveProperty('k8s-app');
    expect(at(plain, 'spec', 'template', 'spec')).not.toHaveProperty('priorityClassName');
  });

  it('passes through env, volumes, secrets, spread constraints (tpl), pod annotations and custom metadata', () => {
    const objs = render({
      values: {
        image: { digest: `sha256:${'a'.repeat(64)}` },
        env: [{ name: 'TZ', value: 'UTC' }],
        extraVolumes: [{ name: 'custom', configMap: { name: 'coredns-custom', optional: true } }],
        extraVolumeMounts: [{ name: 'custom', mountPath: '/etc/coredns/custom', readOnly: true }],
        extraSecrets: [{ name: 'tls-certs', mountPath: '/etc/tls' }],
        topologySpreadConstraints: [
          {
            maxSkew: 1,
            topologyKey: 'topology.kubernetes.io/zone',
            whenUnsatisfiable: 'ScheduleAnyway',
            labelSelector: { matchLabels: { 'app.kubernetes.io/instance': '{{ .Release.Name }}' } },
          },
        ],
        podAnnotations: { 'example.com/pod': 'yes' },
        customLabels: { team: 'platform' },
        customAnnotations: { 'example.com/owner': 'platform' },
      },
    });
    const deploy = one(objs, 'Deployment');
    const c = container(deploy);
    expect(c.image).toBe(`ghcr.io/clusterdns/clusterdns@sha256:${'a'.repeat(64)}`);
    expect(c.env).toEqual([
      { name: 'NODE_OPTIONS', value: '--max-old-space-size=112' },
      { name: 'TZ', value: 'UTC' },
    ]);
    expect(c.volumeMounts).toEqual([
      { name: 'config-volume', mountPath: '/etc/coredns', readOnly: true },
      { name: 'tls-certs', mountPath: '/etc/tls', readOnly: true },
      { name: 'custom', mountPath: '/etc/coredns/custom', readOnly: true },
    ]);
    const volumes = arr(deploy, 'spec', 'template', 'spec', 'volumes');
    expect(volumes).toContainEqual({ name: 'tls-certs', secret: { secretName: 'tls-certs', defaultMode: 0o444 } });
    expect(volumes).toContainEqual({ name: 'custom', configMap: { name: 'coredns-custom', optional: true } });
    expect(
      at(deploy, 'spec', 'template', 'spec', 'topologySpreadConstraints', 0, 'labelSelector', 'matchLabels'),
    ).toEqual({ 'app.kubernetes.io/instance': 'clusterdns' });
    const podAnnotations = rec(deploy, 'spec', 'template', 'metadata', 'annotations');
    expect(podAnnotations['example.com/pod']).toBe('yes');
    expect(podAnnotations).toHaveProperty('checksum/config');
    for (const o of objs) {
      expect(o.metadata.labels?.team, o.kind).toBe('platform');
      expect(o.metadata.annotations?.['example.com/owner'], o.kind).toBe('platform');
    }
  });

  it('NodePort: nodePort and hostPort from servers[], externalTrafficPolicy only outside ClusterIP', () => {
    const servers = [
      {
        zones: [{ zone: '.', use_tcp: true }],
        port: 53,
        nodePort: 30053,
        hostPort: 53,
        plugins: [{ name: 'health' }, { name: 'ready' }, { name: 'forward', parameters: '. /etc/resolv.conf' }],
      },
    ];
    const objs = render({
      values: { serviceType: 'NodePort', servers, service: { clusterIP: '', externalTrafficPolicy: 'Local' } },
    });
    const svc = one(objs, 'Service');
    expect(at(svc, 'spec', 'type')).toBe('NodePort');
    expect(at(svc, 'spec', 'externalTrafficPolicy')).toBe('Local');
    expect(at(svc, 'spec')).not.toHaveProperty('clusterIP');
    expect(ports(svc)).toEqual([
      { name: 'udp-53', port: 53, protocol: 'UDP', targetPort: 53, nodePort: 30053 },
      { name: 'tcp-53', port: 53, protocol: 'TCP', targetPort: 53, nodePort: 30053 },
    ]);
    expect(arr(container(one(objs, 'Deployment')), 'ports')).toContainEqual({
      containerPort: 53,
      name: 'udp-53',
      protocol: 'UDP',
      hostPort: 53,
    });
    const clusterIPSvc = one(render({ set: ['service.externalTrafficPolicy=Local'] }), 'Service');
    expect(at(clusterIPSvc, 'spec')).not.toHaveProperty('externalTrafficPolicy');
  });

  it('deployment.enabled=false renders nothing', () => {
    expect(render({ set: ['deployment.enabled=false'] })).toEqual([]);
  });

  it('does not create a ServiceAccount or RBAC when disabled', () => {
    const objs = render({
      set: [
        'serviceAccount.create=false',
        'serviceAccount.name=dns-sa',
        'rbac.create=false',
        'podDisruptionBudget=null',
      ],
    });
    expect(kinds(objs)).toEqual(['ConfigMap/coredns', 'Deployment/clusterdns', 'Service/kube-dns']);
    expect(at(one(objs, 'Deployment'), 'spec', 'template', 'spec', 'serviceAccountName')).toBe('dns-sa');
  });
});
