import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/corefile/types.js';
import { logger } from '../../src/log.js';
import { dispenserFor } from '../../test/helpers/setup.js';
import { resolvConfSearch as searchDomains } from '../../src/util/resolvconf.js';
import { normalizeLabelSelector as normalizeSelector } from '../../src/util/labelselector.js';
import { parseDuration } from '../../src/util/duration.js';
import { parseKubernetes, type KubernetesConfig } from './setup.js';
import { captureLogs } from '../../test/helpers/logs.js';

const BLOCK = ['cluster.local.'];

function parse(text: string, zones: string[] = BLOCK): KubernetesConfig {
  return parseKubernetes(dispenserFor(text, 'kubernetes'), zones, logger('kubernetes'));
}

function parseErr(text: string): string {
  try {
    parse(text);
  } catch (e) {
    expect(e).toBeInstanceOf(ConfigError);
    return (e as ConfigError).describe();
  }
  throw new Error(`expected a config error for: ${text}`);
}

describe('kubernetes setup', () => {
  const ok: [string, Partial<KubernetesConfig>][] = [
    [
      'kubernetes',
      {
        zones: ['cluster.local.'],
        primaryZone: 'cluster.local.',
        ttl: 5,
        podMode: 'disabled',
        fallthrough: null,
        startupTimeoutMs: 5000,
      },
    ],
    [
      'kubernetes cluster.local in-addr.arpa ip6.arpa',
      { zones: ['cluster.local.', 'in-addr.arpa.', 'ip6.arpa.'], primaryZone: 'cluster.local.' },
    ],
    [
      'kubernetes in-addr.arpa Cluster.Local.',
      { zones: ['in-addr.arpa.', 'cluster.local.'], primaryZone: 'cluster.local.' },
    ],
    ['kubernetes cluster.local 10.0.0.0/15', { zones: ['cluster.local.', '0.10.in-addr.arpa.', '1.10.in-addr.arpa.'] }],
    [
      'kubernetes cluster.local {\n pods insecure\n fallthrough in-addr.arpa ip6.arpa\n ttl 30\n}',
      { podMode: 'insecure', fallthrough: ['in-addr.arpa.', 'ip6.arpa.'], ttl: 30 },
    ],
    ['kubernetes {\n pods verified\n}', { podMode: 'verified' }],
    ['kubernetes {\n fallthrough\n}', { fallthrough: ['.'] }],
    ['kubernetes {\n ttl 0\n}', { ttl: 0 }],
    ['kubernetes {\n ttl 3600 extra\n}', { ttl: 3600 }],
    [
      'kubernetes {\n endpoint_pod_names\n noendpoints\n ignore empty_service\n}',
      { endpointPodNames: true, noEndpoints: true, ignoreEmptyService: true },
    ],
    ['kubernetes {\n ignore\n}', { ignoreEmptyService: false }],
    ['kubernetes {\n namespaces a b\n namespaces c\n}', { namespaces: ['a', 'b', 'c'] }],
    ['kubernetes {\n namespace_labels team=a\n}', { namespaceLabels: 'team=a' }],
    [
      'kubernetes {\n labels environment in (staging, qa),application=nginx\n}',
      { labels: 'environment in (staging,qa),application=nginx' },
    ],
    ['kubernetes {\n endpoint http://127.0.0.1:8080\n}', { endpoint: 'http://127.0.0.1:8080' }],
    ['kubernetes {\n endpoint https://a:6443 https://b:6443\n}', { endpoint: 'https://a:6443' }],
    ['kubernetes {\n tls c.crt c.key ca.crt\n}', { tls: { cert: 'c.crt', key: 'c.key', ca: 'ca.crt' } }],
    ['kubernetes {\n kubeconfig /k.conf ctx1\n}', { kubeconfig: { path: '/k.conf', context: 'ctx1' } }],
    ['kubernetes {\n kubeconfig /k.conf\n}', { kubeconfig: { path: '/k.conf', context: null } }],
    ['kubernetes {\n startup_timeout 1m30s\n}', { startupTimeoutMs: 90_000 }],
    ['kubernetes {\n startup_timeout 250ms\n}', { startupTimeoutMs: 250 }],
    [
      'kubernetes {\n apiserver_qps 20.5\n apiserver_burst 40\n apiserver_max_inflight 3\n}',
      { apiserverQps: 20.5, apiserverBurst: 40, apiserverMaxInflight: 3 },
    ],
    ['kubernetes cluster.local { pods insecure\n}', { podMode: 'insecure' }],
    ['kubernetes {\n zonal\n}', { zonal: true }],
    [
      'kubernetes cluster.local CLUSTERSET.local {\n multicluster clusterset.local.\n}',
      { zones: ['cluster.local.', 'clusterset.local.'], multiclusterZones: ['clusterset.local.'] },
    ],
    // CoreDNS: without arguments the option names no zone (it does not take the plugin's).
    ['kubernetes cluster.local clusterset.local {\n multicluster\n}', { multiclusterZones: [] }],
  ];
  for (const [text, want] of ok) {
    it(`accepts ${JSON.stringify(text)}`, () => {
      expect(parse(text)).toMatchObject(want);
    });
  }

  const bad: [string, RegExp][] = [
    ['kubernetes {\n pods bogus\n}', /wrong value for pods: bogus, {2}must be one of: disabled, verified, insecure/],
    ['kubernetes {\n pods\n}', /Wrong argument count/],
    ['kubernetes {\n ttl 3601\n}', /ttl must be in range \[0, 3600\]: 3601/],
    ['kubernetes {\n ttl -1\n}', /ttl must be in range \[0, 3600\]: -1/],
    ['kubernetes {\n ttl abc\n}', /invalid syntax/],
    ['kubernetes {\n ttl\n}', /Wrong argument count/],
    ['kubernetes {\n ignore foo\n}', /unable to parse ignore value: 'foo'/],
    ['kubernetes {\n namespaces\n}', /Wrong argument count/],
    ['kubernetes {\n namespaces a\n namespace_labels x=y\n}', /namespaces and namespace_labels cannot both be set/],
    ['kubernetes {\n bogus\n}', /unknown property 'bogus'/],
    ['kubernetes {\n tls a b\n}', /Wrong argument count/],
    ['kubernetes {\n kubeconfig\n}', /Wrong argument count/],
    ['kubernetes {\n kubeconfig a b c\n}', /Wrong argument count/],
    ['kubernetes {\n endpoint_pod_names x\n}', /Wrong argument count/],
    ['kubernetes {\n noendpoints x\n}', /Wrong argument count/],
    ['kubernetes {\n startup_timeout five\n}', /failed to parse startup_timeout: five, time: invalid duration "five"/],
    ['kubernetes {\n labels a in (\n}', /unable to parse label selector value/],
    ['kubernetes {\n namespace_labels ,\n}', /unable to parse namespace_label selector value/],
    // as CoreDNS 1.15.0 (meta.ParseToLabelSelector): `!=` and `>`/`<` cannot be a LabelSelector
    [
      'kubernetes {\n labels app=web,tier!=cache\n}',
      /unable to parse label selector value: 'app=web,tier!=cache': "!=" is not a valid label selector operator/,
    ],
    [
      'kubernetes {\n namespace_labels team!=b\n}',
      /unable to parse namespace_label selector value: 'team!=b': "!=" is not a valid label selector operator/,
    ],
    ['kubernetes {\n labels replicas<3\n}', /"lt" isn't supported in label selectors/],
    ['kubernetes {\n apiserver_qps x\n}', /invalid apiserver_qps "x": strconv.ParseFloat: parsing "x": invalid syntax/], // CoreDNS 1.15.0's text
    ['kubernetes {\n apiserver_burst -1\n}', /apiserver_burst must be >= 0/],
    ['kubernetes {\n endpoint ftp://x\n}', /scheme must be http or https/],
    ['kubernetes in-addr.arpa', /non-reverse zone name must be used/],
    ['kubernetes cluster.local {\n pods insecure }\n', /Wrong argument count/],
    ['kubernetes {\n zonal\n noendpoints\n}', /zonal and noendpoints cannot both be set/],
    ['kubernetes {\n zonal x\n}', /Wrong argument count/],
    [
      'kubernetes {\n multicluster clusterset.local\n}',
      /Corefile:2 - Error during parsing: is not authoritative for the multicluster zone clusterset.local. \(authoritative zones: \[cluster.local.\]\)$/,
    ],
    [
      'kubernetes cluster.local clusterset.local {\n multicluster sub.clusterset.local\n}',
      /is not authoritative for the multicluster zone sub.clusterset.local. \(authoritative zones: \[cluster.local. clusterset.local.\]\)/,
    ],
  ];
  for (const [text, re] of bad) {
    it(`rejects ${JSON.stringify(text)}`, () => {
      const msg = parseErr(text);
      expect(msg).toMatch(re);
      expect(msg).toMatch(/^plugin\/kubernetes: Corefile:\d+ - Error during parsing: /);
    });
  }

  it('reports the line of the offending option', () => {
    expect(parseErr('kubernetes cluster.local {\n pods insecure\n ttl 99999\n}')).toContain('Corefile:3 ');
  });

  it('warns about ignored extra endpoints and a bare ignore', () => {
    const logs = captureLogs();
    const lines = logs.lines;
    try {
      parse('kubernetes {\n endpoint http://a:1 http://b:2\n ignore\n}');
    } finally {
      logs.restore();
    }
    expect(lines).toEqual([
      "[WARNING] plugin/kubernetes: Multiple endpoints have been deprecated, only the first specified endpoint 'http://a:1' is used",
      "[WARNING] plugin/kubernetes: 'ignore' without an argument does nothing (expected 'ignore empty_service')",
    ]);
  });

  it('the README syntax block lists only options the parser accepts', () => {
    const readme = readFileSync(new URL('./README.md', import.meta.url), 'utf8');
    const block = /## Syntax[\s\S]*?```\n([\s\S]*?)```/.exec(readme)?.[1] ?? '';
    const opts = block
      .split('\n')
      .map((l) => l.trim().split(/\s+/)[0]!)
      .filter((w) => /^[a-z_]+$/.test(w) && w !== 'kubernetes');
    expect(opts.length).toBeGreaterThan(10);
    for (const o of opts) {
      const arg: Record<string, string> = {
        endpoint: 'http://127.0.0.1:1',
        tls: 'a b c',
        kubeconfig: 'k',
        namespaces: 'a',
        namespace_labels: 'a=b',
        labels: 'a=b',
        pods: 'insecure',
        ttl: '5',
        fallthrough: '',
        ignore: 'empty_service',
        startup_timeout: '5s',
        apiserver_qps: '1',
        apiserver_burst: '1',
        apiserver_max_inflight: '1',
      };
      expect(() => parse(`kubernetes {\n ${o} ${arg[o] ?? ''}\n}`), o).not.toThrow();
    }
  });
});

describe('helpers', () => {
  it('normalizes selectors', () => {
    expect(normalizeSelector('a=b, c notin (d),!e, f, g notin (x, y)')).toBe('a=b,c notin (d),!e,f,g notin (x,y)');
    expect(normalizeSelector('a==b')).toBe('a=b');
    expect(() => normalizeSelector('a=b,')).toThrow();
    expect(normalizeSelector('a in ()')).toBe('a in ()'); // the empty value, as apimachinery reads `()`
    expect(() => normalizeSelector('-bad=x')).toThrow();
  });

  it('startup_timeout is a Go duration (src/util/duration.ts: μs accepted, int64 overflow rejected)', () => {
    expect(parse('kubernetes {\n startup_timeout 1h2m3s\n}').startupTimeoutMs).toBe(3_723_000);
    expect(parse('kubernetes {\n startup_timeout 1500000μs\n}').startupTimeoutMs).toBe(1500);
    expect(parseErr('kubernetes {\n startup_timeout 9999999999h\n}')).toContain(
      'failed to parse startup_timeout: 9999999999h, time: invalid duration "9999999999h"',
    );
    expect(parseDuration('5')).toBeUndefined();
  });

  it('reads search domains from resolv.conf', () => {
    expect(searchDomains('nameserver 1.1.1.1\nsearch a.example B.example\noptions ndots:5\n')).toEqual([
      'a.example.',
      'b.example.',
    ]);
    expect(searchDomains('nameserver 1.1.1.1\n')).toEqual([]);
  });
});
