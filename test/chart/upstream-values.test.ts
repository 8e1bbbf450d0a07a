/**
 * The chart takes the coredns chart's values unchanged (coredns/helm, charts/coredns 1.46.2).
 * fixtures/coredns-1.46.2-values.yaml is that chart's default values.yaml (every key, its
 * defaults); fixtures/coredns-1.46.2-values-operator.yaml is the same file with a typical
 * operator's changes (image, pspEnable left over, kubeadm adoption with LabelSelectors, a PDB
 * with only minAvailable, a zone file, cluster-proportional-autoscaler). Both are rendered as
 * they are, and the objects that matter are checked. Needs helm (scripts/install-helm.sh).
 */
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { Ajv } from 'ajv';
import { parse } from 'yaml';
import {
  CHART_DIR,
  type K8sObject,
  arr,
  at,
  container,
  corefileOf,
  helmTemplateError,
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

const FIXTURES = path.join(path.dirname(new URL(import.meta.url).pathname), 'fixtures');
const UPSTREAM = path.join(FIXTURES, 'coredns-1.46.2-values.yaml');
const OPERATOR = path.join(FIXTURES, 'coredns-1.46.2-values-operator.yaml');

/** Keys of the coredns chart that are accepted and ignored (README.md and NOTES.txt say why). */
const IGNORED = ['rbac.pspEnable'];

/** Dotted paths of a values document down to leaves (scalars, lists, empty maps). */
function leafPaths(v: unknown, prefix: string[] = []): string[] {
  if (isObject(v) && Object.keys(v).length > 0)
    return Object.entries(v).flatMap(([k, x]) => leafPaths(x, [...prefix, k]));
  return [prefix.join('.')];
}

function portNames(list: unknown[]): string[] {
  return list.map((p) => str(p, 'name'));
}

function byKindName(objs: K8sObject[], kind: string, name: string): K8sObject {
  return one(objs, kind, name);
}

describe('the fixtures', () => {
  it('have every key of the coredns chart, and the operator file only adds keys upstream documents', () => {
    const upstream = leafPaths(parse(readFileSync(UPSTREAM, 'utf8')));
    const operator = leafPaths(parse(readFileSync(OPERATOR, 'utf8')));
    // The top-level keys of the coredns chart's values.yaml (1.46.2).
    const top = new Set(upstream.map((p) => p.split('.')[0]));
    for (const k of [
      'image',
      'replicaCount',
      'resources',
      'rollingUpdate',
      'terminationGracePeriodSeconds',
      'podAnnotations',
      'podLabels',
      'serviceType',
      'prometheus',
      'service',
      'serviceAccount',
      'rbac',
      'clusterRole',
      'isClusterService',
      'priorityClassName',
      'podSecurityContext',
      'securityContext',
      'servers',
      'extraConfig',
      'livenessProbe',
      'readinessProbe',
      'affinity',
      'topologySpreadConstraints',
      'nodeSelector',
      'tolerations',
      'podDisruptionBudget',
      'zoneFiles',
      'extraContainers',
      'extraVolumes',
      'extraVolumeMounts',
      'extraSecrets',
      'env',
      'customLabels',
      'customAnnotations',
      'hpa',
      'autoscaler',
      'deployment',
      'initContainers',
    ]) {
      expect(top.has(k), k).toBe(true);
    }
    const extra = operator.filter(
      (p) =>
        !upstream.includes(p) &&
        !p.startsWith('zoneFiles') &&
        !p.endsWith('selector.matchLabels.k8s-app') &&
        !p.startsWith('podDisruptionBudget.'),
    );
    expect(extra.sort()).toEqual(['k8sAppLabelOverride', 'rbac.pspEnable']);
  });

  it('are accepted by values.schema.json (which refuses unknown keys) and every key is documented in README.md', () => {
    const schema: unknown = JSON.parse(readFileSync(path.join(CHART_DIR, 'values.schema.json'), 'utf8'));
    if (!isObject(schema)) throw new Error('bad values.schema.json');
    const validate = new Ajv({ allErrors: true, strict: true, allowUnionTypes: true }).compile(schema);
    for (const file of [UPSTREAM, OPERATOR]) {
      const ok = validate(parse(readFileSync(file, 'utf8')));
      expect(validate.errors ?? [], path.basename(file)).toEqual([]);
      expect(ok).toBe(true);
    }
    expect(validate({ rbac: { pspEnable: true, bogus: 1 } })).toBe(false);

    const readme = readFileSync(path.join(CHART_DIR, 'README.md'), 'utf8');
    const rows = new Set([...readme.matchAll(/^\|\s*`([^`]+)`\s*\|/gm)].map((m) => m[1]));
    const documented = (p: string): boolean => {
      const parts = p.split('.');
      for (let n = parts.length; n > 0; n--) if (rows.has(parts.slice(0, n).join('.'))) return true;
      return false;
    };
    const paths = [
      ...new Set([
        ...leafPaths(parse(readFileSync(UPSTREAM, 'utf8'))),
        ...leafPaths(parse(readFileSync(OPERATOR, 'utf8'))),
      ]),
    ];
    expect(paths.filter((p) => !documented(p))).toEqual([]);
    for (const k of IGNORED)
      expect(readme).toMatch(new RegExp(`\\|\\s*\`${k.replace('.', '\\.')}\`\\s*\\|[^\\n]*[Ii]gnored`));
  });
});

describe('the coredns chart default values.yaml, unchanged', () => {
  it('passes helm lint --strict', () => {
    const r = runHelm(['lint', '--strict', CHART_DIR, '--namespace', 'kube-system', '--values', UPSTREAM]);
    expect(r.status, r.stdout + r.stderr).toBe(0);
  });

  const objs = render({ valuesFiles: [UPSTREAM] });
  const deploy = one(objs, 'Deployment');
  const c = container(deploy);
  const svc = one(objs, 'Service');

  it('renders the DNS objects (no ServiceAccount: serviceAccount.create is false upstream)', () => {
    expect(kinds(objs)).toEqual([
      'ClusterRole/system:clusterdns',
      'ClusterRoleBinding/system:clusterdns',
      'ConfigMap/coredns',
      'Deployment/clusterdns',
      'PodDisruptionBudget/clusterdns',
      'Service/kube-dns',
    ]);
    expect(at(deploy, 'spec', 'template', 'spec', 'serviceAccountName')).toBe('default');
    expect(at(one(objs, 'ClusterRoleBinding'), 'subjects', 0, 'name')).toBe('default');
  });

  it('names the container and the ports as the coredns chart does', () => {
    expect(arr(deploy, 'spec', 'template', 'spec', 'containers').map((x) => str(x, 'name'))).toEqual(['coredns']);
    expect(arr(c, 'ports')).toEqual([
      { containerPort: 53, name: 'udp-53', protocol: 'UDP' },
      { containerPort: 53, name: 'tcp-53', protocol: 'TCP' },
      { containerPort: 9153, name: 'tcp-9153', protocol: 'TCP' },
      { containerPort: 8080, name: 'liveness-probe', protocol: 'TCP' },
      { containerPort: 8181, name: 'readiness-probe', protocol: 'TCP' },
    ]);
    expect(portNames(arr(svc, 'spec', 'ports'))).toEqual(['udp-53', 'tcp-53', 'metrics']);
  });

  it('binds port 53 through the pod sysctl; the NET_BIND_SERVICE it adds is harmless (node has no file capability)', () => {
    expect(at(deploy, 'spec', 'template', 'spec', 'securityContext', 'sysctls')).toEqual([
      { name: 'net.ipv4.ip_unprivileged_port_start', value: '53' },
    ]);
    expect(at(c, 'securityContext', 'capabilities')).toEqual({ add: ['NET_BIND_SERVICE'], drop: ['ALL'] });
    expect(at(c, 'securityContext', 'runAsUser')).toBe(65532);
  });

  it('keeps the upstream values that matter: replicas, probes, resources, Corefile', () => {
    expect(at(deploy, 'spec', 'replicas')).toBe(1);
    expect(at(c, 'readinessProbe', 'initialDelaySeconds')).toBe(30);
    expect(at(c, 'readinessProbe', 'failureThreshold')).toBe(1);
    expect(at(c, 'resources')).toEqual({
      limits: { cpu: '100m', memory: '128Mi' },
      requests: { cpu: '100m', memory: '128Mi' },
    });
    const corefile = corefileOf(objs);
    for (const line of [
      '.:53 {',
      'lameduck 10s',
      'kubernetes cluster.local in-addr.arpa ip6.arpa {',
      'prometheus 0.0.0.0:9153',
      'forward . /etc/resolv.conf',
      'cache 30',
      'loadbalance',
    ]) {
      expect(corefile).toContain(line);
    }
  });

  it('selects the pods with the default selector, and the PDB defaults to maxUnavailable 1', () => {
    const sel = rec(deploy, 'spec', 'selector');
    expect(Object.keys(sel)).toEqual(['matchLabels']);
    for (const [k, v] of Object.entries(rec(sel, 'matchLabels'))) expect(podLabels(deploy)[k], k).toBe(v);
    const pdb = one(objs, 'PodDisruptionBudget');
    expect(at(pdb, 'spec', 'maxUnavailable')).toBe(1);
    expect(at(pdb, 'spec')).not.toHaveProperty('minAvailable');
  });

  it('prints no "ignored values" section in NOTES', () => {
    const notes = renderNotes({ valuesFiles: [UPSTREAM] });
    expect(notes).toContain('DNS Service: kube-dns.kube-system');
    expect(notes).not.toMatch(/Ignored values/);
  });
});

describe('a typical operator values file for the coredns chart, unchanged', () => {
  it('passes helm lint --strict', () => {
    const r = runHelm(['lint', '--strict', CHART_DIR, '--namespace', 'kube-system', '--values', OPERATOR]);
    expect(r.status, r.stdout + r.stderr).toBe(0);
  });

  const objs = render({ valuesFiles: [OPERATOR] });
  const deploy = byKindName(objs, 'Deployment', 'clusterdns');
  const c = container(deploy);

  it('renders the DNS objects and the cluster-proportional-autoscaler objects', () => {
    expect(kinds(objs)).toEqual([
      'ClusterRole/clusterdns-autoscaler',
      'ClusterRole/system:clusterdns',
      'ClusterRoleBinding/clusterdns-autoscaler',
      'ClusterRoleBinding/system:clusterdns',
      'ConfigMap/clusterdns-autoscaler',
      'ConfigMap/coredns',
      'Deployment/clusterdns',
      'Deployment/clusterdns-autoscaler',
      'PodDisruptionBudget/clusterdns',
      'Service/kube-dns',
      'ServiceAccount/clusterdns-autoscaler',
    ]);
    expect(c.image).toBe('ghcr.io/clusterdns/clusterdns:0.1.0');
  });

  it('binds port 53 through the pod sysctl', () => {
    expect(at(deploy, 'spec', 'template', 'spec', 'securityContext', 'sysctls')).toEqual([
      { name: 'net.ipv4.ip_unprivileged_port_start', value: '53' },
    ]);
  });

  it('takes deployment.selector as a LabelSelector (kubeadm adoption) that the pods match', () => {
    expect(at(deploy, 'spec', 'selector')).toEqual({ matchLabels: { 'k8s-app': 'kube-dns' } });
    expect(podLabels(deploy)['k8s-app']).toBe('kube-dns');
    expect(at(one(objs, 'Service'), 'spec', 'selector', 'k8s-app')).toBe('kube-dns');
  });

  it('takes prometheus.monitor.selector as a LabelSelector', () => {
    const sm = one(
      render({
        valuesFiles: [OPERATOR],
        set: ['prometheus.monitor.enabled=true', 'prometheus.monitor.skipCapabilityCheck=true'],
      }),
      'ServiceMonitor',
    );
    expect(at(sm, 'spec', 'selector')).toEqual({ matchLabels: { 'k8s-app': 'kube-dns' } });
    expect(at(sm, 'spec', 'endpoints', 0, 'port')).toBe('metrics');
  });

  it('has a PDB with only minAvailable', () => {
    const spec = rec(one(objs, 'PodDisruptionBudget'), 'spec');
    expect(spec.minAvailable).toBe(1);
    expect(spec).not.toHaveProperty('maxUnavailable');
    for (const [k, v] of Object.entries(rec(spec, 'selector', 'matchLabels'))) expect(podLabels(deploy)[k], k).toBe(v);
  });

  it('puts the zone file into the ConfigMap and mounts it at /etc/coredns/example.db', () => {
    const cm = byKindName(objs, 'ConfigMap', 'coredns');
    const zone = parse(readFileSync(OPERATOR, 'utf8')) as { zoneFiles: { filename: string; contents: string }[] };
    expect(str(cm, 'data', 'example.db')).toBe(zone.zoneFiles[0]?.contents);
    const volume = arr(deploy, 'spec', 'template', 'spec', 'volumes').find(
      (v) => isObject(v) && v.name === 'config-volume',
    );
    expect(at(volume, 'configMap')).toEqual({
      name: 'coredns',
      items: [
        { key: 'Corefile', path: 'Corefile' },
        { key: 'example.db', path: 'example.db' },
      ],
    });
    expect(arr(c, 'volumeMounts')).toContainEqual({ name: 'config-volume', mountPath: '/etc/coredns', readOnly: true });
  });

  it('deploys cluster-proportional-autoscaler as the coredns chart does, owning the replica count', () => {
    expect(at(deploy, 'spec')).not.toHaveProperty('replicas');
    const cpa = byKindName(objs, 'Deployment', 'clusterdns-autoscaler');
    const spec = rec(cpa, 'spec', 'template', 'spec');
    expect(spec.serviceAccountName).toBe('clusterdns-autoscaler');
    const cpaContainer = container(cpa, 'autoscaler');
    expect(cpaContainer.image).toBe('registry.k8s.io/cpa/cluster-proportional-autoscaler:v1.9.0');
    expect(cpaContainer.command).toEqual([
      '/cluster-proportional-autoscaler',
      '--namespace=kube-system',
      '--configmap=clusterdns-autoscaler',
      '--target=Deployment/clusterdns',
      '--logtostderr=true',
      '--v=2',
    ]);
    expect(at(cpaContainer, 'livenessProbe', 'httpGet')).toEqual({ path: '/healthz', port: 8080, scheme: 'HTTP' });
    for (const [k, v] of Object.entries(rec(cpa, 'spec', 'selector', 'matchLabels')))
      expect(podLabels(cpa)[k], k).toBe(v);
    // The autoscaler's pods must not be selected by the DNS Service, PDB or Deployment.
    expect(podLabels(cpa)['k8s-app']).toBe('kube-dns-autoscaler');

    const linear: unknown = JSON.parse(str(byKindName(objs, 'ConfigMap', 'clusterdns-autoscaler'), 'data', 'linear'));
    expect(linear).toEqual({
      coresPerReplica: 256,
      nodesPerReplica: 16,
      min: 0,
      max: 0,
      includeUnschedulableNodes: false,
      preventSinglePointFailure: true,
    });

    const role = byKindName(objs, 'ClusterRole', 'clusterdns-autoscaler');
    const grants = arr(role, 'rules').flatMap((r) =>
      arr(r, 'resources').map((res) => `${String(res)}:${arr(r, 'verbs').join(',')}`),
    );
    expect(grants).toContain('nodes:list,watch');
    expect(grants).toContain('deployments/scale:get,update');
    expect(grants).toContain('configmaps:get,create');
    const crb = byKindName(objs, 'ClusterRoleBinding', 'clusterdns-autoscaler');
    expect(at(crb, 'roleRef', 'name')).toBe('clusterdns-autoscaler');
    expect(at(crb, 'subjects')).toEqual([
      { kind: 'ServiceAccount', name: 'clusterdns-autoscaler', namespace: 'kube-system' },
    ]);
  });

  it('reports rbac.pspEnable as ignored, and the autoscaler and the zone file, in NOTES', () => {
    const notes = renderNotes({ valuesFiles: [OPERATOR] });
    expect(notes).toMatch(
      /Ignored values[^\n]*\n\s+- rbac\.pspEnable \(false\): PodSecurityPolicy was removed in Kubernetes 1\.25/,
    );
    expect(notes).toContain('cluster-proportional-autoscaler (Deployment clusterdns-autoscaler)');
    expect(notes).toContain('Zone files in /etc/coredns/: example.db');
  });
});

describe('coredns chart semantics', () => {
  it('defines the coredns.* named templates as aliases, for tpl values written for that chart', () => {
    const spread = [
      {
        topologyKey: 'kubernetes.io/hostname',
        maxSkew: 1,
        whenUnsatisfiable: 'ScheduleAnyway',
        labelSelector: {
          matchLabels: {
            'app.kubernetes.io/name': '{{ template "coredns.name" . }}',
            'app.kubernetes.io/instance': '{{ .Release.Name }}',
            fullname: '{{ include "coredns.fullname" . }}',
            k8sapp: '{{ include "coredns.k8sapplabel" . }}',
            sa: '{{ include "coredns.serviceAccountName" . }}',
            role: '{{ include "coredns.clusterRoleName" . }}',
            labels: '{{ include "coredns.labels" . | fromYaml | len }}',
            autoscaler: '{{ get (include "coredns.labels.autoscaler" . | fromYaml) "k8s-app" }}',
            svcports: '{{ include "coredns.servicePorts" . | fromYamlArray | len }}',
            ctrports: '{{ include "coredns.containerPorts" . | fromYamlArray | len }}',
          },
        },
      },
    ];
    const deploy = one(render({ values: { topologySpreadConstraints: spread } }), 'Deployment');
    const labels = rec(
      deploy,
      'spec',
      'template',
      'spec',
      'topologySpreadConstraints',
      0,
      'labelSelector',
      'matchLabels',
    );
    expect(labels).toEqual({
      'app.kubernetes.io/name': 'clusterdns',
      'app.kubernetes.io/instance': 'clusterdns',
      fullname: 'clusterdns',
      k8sapp: 'kube-dns',
      sa: 'clusterdns',
      role: 'system:clusterdns',
      labels: '9',
      autoscaler: 'kube-dns-autoscaler',
      svcports: '3',
      ctrports: '5',
    });
    // The label the upstream example spreads on is on the pods.
    expect(podLabels(deploy)['app.kubernetes.io/name']).toBe('clusterdns');
  });

  it('skipConfig mounts every key of the existing ConfigMap (k3s keeps NodeHosts there)', () => {
    const deploy = one(
      render({ valuesFiles: [OPERATOR], set: ['deployment.skipConfig=true'] }),
      'Deployment',
      'clusterdns',
    );
    const volume = arr(deploy, 'spec', 'template', 'spec', 'volumes').find(
      (v) => isObject(v) && v.name === 'config-volume',
    );
    expect(at(volume, 'configMap')).toEqual({ name: 'coredns' });
  });

  it('deployment.selector takes matchExpressions; a flat map is refused by the schema', () => {
    const selector = {
      matchLabels: { 'k8s-app': 'kube-dns' },
      matchExpressions: [{ key: 'app.kubernetes.io/name', operator: 'In', values: ['clusterdns', 'coredns'] }],
    };
    const deploy = one(render({ values: { deployment: { selector } } }), 'Deployment');
    expect(at(deploy, 'spec', 'selector')).toEqual(selector);
    expect(podLabels(deploy)['app.kubernetes.io/name']).toBe('clusterdns');
    expect(helmTemplateError({ values: { deployment: { selector: { 'k8s-app': 'kube-dns' } } } })).toMatch(/selector/);
    expect(helmTemplateError({ values: { prometheus: { monitor: { selector: { 'k8s-app': 'kube-dns' } } } } })).toMatch(
      /selector/,
    );
  });

  it("adopting a coredns chart release's Deployment: its immutable selector's labels win on the pods, the Service and the PDB", () => {
    const matchLabels = {
      'app.kubernetes.io/instance': 'coredns',
      'app.kubernetes.io/name': 'coredns',
      'k8s-app': 'kube-dns',
    };
    const objs = render({ values: { deployment: { name: 'coredns', selector: { matchLabels } } } });
    const deploy = one(objs, 'Deployment', 'coredns');
    expect(at(deploy, 'spec', 'selector')).toEqual({ matchLabels });
    const labels = podLabels(deploy);
    for (const selector of [
      rec(deploy, 'spec', 'selector', 'matchLabels'),
      rec(one(objs, 'Service'), 'spec', 'selector'),
      rec(one(objs, 'PodDisruptionBudget'), 'spec', 'selector', 'matchLabels'),
      rec(
        deploy,
        'spec',
        'template',
        'spec',
        'affinity',
        'podAntiAffinity',
        'preferredDuringSchedulingIgnoredDuringExecution',
        0,
        'podAffinityTerm',
        'labelSelector',
        'matchLabels',
      ),
    ]) {
      expect(selector).toEqual(matchLabels);
      for (const [k, v] of Object.entries(selector)) expect(labels[k], k).toBe(v);
    }
  });

  it('the PDB takes minAvailable or maxUnavailable alone, refuses both, and null disables it', () => {
    const pdb = (set: string[]): Record<string, unknown> => rec(one(render({ set }), 'PodDisruptionBudget'), 'spec');
    expect(pdb(['podDisruptionBudget.minAvailable=1'])).not.toHaveProperty('maxUnavailable');
    expect(pdb(['podDisruptionBudget.minAvailable=50%']).minAvailable).toBe('50%');
    expect(pdb(['podDisruptionBudget.maxUnavailable=2']).maxUnavailable).toBe(2);
    expect(pdb([]).maxUnavailable).toBe(1);
    expect(
      helmTemplateError({ set: ['podDisruptionBudget.minAvailable=1', 'podDisruptionBudget.maxUnavailable=1'] }),
    ).toMatch(/minAvailable or maxUnavailable, not both/);
    expect(render({ set: ['podDisruptionBudget=null'] }).filter((o) => o.kind === 'PodDisruptionBudget')).toEqual([]);
  });

  it('hpa.enabled takes precedence over autoscaler.enabled (as upstream) and NOTES says so', () => {
    const set = ['autoscaler.enabled=true', 'hpa.enabled=true'];
    const objs = render({ set });
    expect(kinds(objs).filter((k) => k.includes('autoscaler'))).toEqual([]);
    expect(kinds(objs)).toContain('HorizontalPodAutoscaler/clusterdns');
    expect(renderNotes({ set })).toMatch(/- autoscaler\.enabled: hpa\.enabled is also true/);
  });

  it('passes autoscaler settings through: flags, pull secrets (names or objects), scheduling, limits', () => {
    const objs = render({
      values: {
        autoscaler: {
          enabled: true,
          min: 2,
          max: 10,
          coresPerReplica: 128,
          customFlags: ['--nodelabels=topology.kubernetes.io/zone=us-east-1a'],
          image: { pullSecrets: ['regcred', { name: 'other' }] },
          priorityClassName: 'dns-critical',
          tolerations: [{ key: 'CriticalAddonsOnly', operator: 'Exists' }],
          podAnnotations: { 'example.com/a': 'b' },
        },
      },
    });
    const cpa = one(objs, 'Deployment', 'clusterdns-autoscaler');
    const spec = rec(cpa, 'spec', 'template', 'spec');
    expect(spec.imagePullSecrets).toEqual([{ name: 'regcred' }, { name: 'other' }]);
    expect(spec.priorityClassName).toBe('dns-critical');
    expect(spec.tolerations).toEqual([{ key: 'CriticalAddonsOnly', operator: 'Exists' }]);
    expect(arr(container(cpa, 'autoscaler'), 'command').at(-1)).toBe(
      '--nodelabels=topology.kubernetes.io/zone=us-east-1a',
    );
    expect(at(cpa, 'spec', 'template', 'metadata', 'annotations', 'example.com/a')).toBe('b');
    expect(JSON.parse(str(one(objs, 'ConfigMap', 'clusterdns-autoscaler'), 'data', 'linear'))).toMatchObject({
      min: 2,
      max: 10,
      coresPerReplica: 128,
    });
    expect(helmTemplateError({ set: ['autoscaler.enabled=true', 'autoscaler.min=5', 'autoscaler.max=2'] })).toMatch(
      /autoscaler\.min/,
    );
    const noRbac = kinds(render({ set: ['autoscaler.enabled=true', 'rbac.create=false'] }));
    expect(noRbac.filter((k) => k.includes('autoscaler'))).toEqual([
      'ConfigMap/clusterdns-autoscaler',
      'Deployment/clusterdns-autoscaler',
      'ServiceAccount/clusterdns-autoscaler',
    ]);
  });
});

describe('helm template refuses a Corefile the binary would reject', () => {
  const servers = (plugins: { name: string; parameters?: string }[], zone: Record<string, unknown> = { zone: '.' }) => [
    { zones: [zone], port: 53, plugins },
  ];
  const noProbes = { livenessProbe: { enabled: false }, readinessProbe: { enabled: false } };

  it('names a directive that is not in the plugin registry (files/directives.txt)', () => {
    const err = helmTemplateError({
      values: {
        ...noProbes,
        servers: servers([{ name: 'errors' }, { name: 'nosuchplugin', parameters: 'example.org' }]),
      },
    });
    expect(err).toMatch(/servers\[0\]\.plugins\[1\]: clusterdns \S+ has no plugin "nosuchplugin"/);
    expect(err).toContain('Known directives: root, metadata, geoip, cancel, proxyproto, quic, grpc_server, https');
    // The operator file with a directive nobody has in place of one of its own.
    const op = helmTemplateError({ valuesFiles: [OPERATOR], set: ['servers[0].plugins[10].name=nosuchplugin'] });
    expect(op).toMatch(/has no plugin "nosuchplugin"/);
  });

  it('names a transport the binary does not serve (tls://, https://, quic://)', () => {
    for (const scheme of ['tls://', 'https://', 'quic://']) {
      const err = helmTemplateError({
        values: { ...noProbes, servers: servers([{ name: 'whoami' }], { zone: '.', scheme }) },
      });
      expect(err).toMatch(
        new RegExp(`servers\\[0\\]\\.zones\\[0\\]: transport ${scheme.replace(/\//g, '\\/')} is not supported`),
      );
    }
    expect(
      helmTemplateError({
        values: { ...noProbes, servers: servers([{ name: 'whoami' }], { zone: 'tls://example.org.' }) },
      }),
    ).toMatch(/transport tls:\/\/ is not supported/);
    const ok = render({
      values: {
        ...noProbes,
        servers: servers([{ name: 'whoami' }], { zone: 'example.org.', scheme: 'dns://', use_tcp: true }),
      },
    });
    expect(corefileOf(ok)).toContain('dns://example.org.:53 {');
    const grpc = render({
      values: { ...noProbes, servers: servers([{ name: 'whoami' }], { zone: '.', scheme: 'grpc://' }) },
    });
    expect(corefileOf(grpc)).toContain('grpc://.:53 {');
  });

  it('refuses extraConfig entries other than import', () => {
    expect(helmTemplateError({ values: { extraConfig: { log: { parameters: '' } } } })).toMatch(
      /extraConfig\.log: only import/,
    );
    expect(
      corefileOf(render({ values: { extraConfig: { import: { parameters: '/etc/coredns/custom/*.server' } } } })),
    ).toMatch(/^import \/etc\/coredns\/custom\/\*\.server$/m);
  });

  it('refuses a zone file named Corefile', () => {
    expect(
      helmTemplateError({ values: { zoneFiles: [{ filename: 'Corefile', domain: 'x', contents: 'x' }] } }),
    ).toMatch(/Corefile/);
  });
});
