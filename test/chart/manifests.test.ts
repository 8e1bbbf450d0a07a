/**
 * deploy/manifests/clusterdns.yaml is the chart rendered with default values into kube-system,
 * for clusters without Helm. This test keeps it in sync with `helm template`.
 * Regenerate with: UPDATE_GOLDEN=1 npx vitest run test/chart/manifests.test.ts
 */
import { readFileSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT, helmTemplateText, kinds, one, parseManifests, str } from './helm.js';

const FILE = path.join(REPO_ROOT, 'deploy/manifests/clusterdns.yaml');
const HEADER = [
  '# clusterdns: the Helm chart charts/clusterdns rendered with its default values, for clusters',
  '# without Helm. Do not edit: regenerate with',
  '#   helm template clusterdns charts/clusterdns --namespace kube-system',
  '# (UPDATE_GOLDEN=1 npx vitest run test/chart/manifests.test.ts writes this file).',
  '# Before applying, check that service.clusterIP (10.96.0.10) is your kubelet clusterDNS address.',
  '',
].join('\n');

describe('deploy/manifests/clusterdns.yaml', () => {
  const expected = HEADER + helmTemplateText();
  if (process.env.UPDATE_GOLDEN === '1') writeFileSync(FILE, expected);
  const actual = readFileSync(FILE, 'utf8');

  it('is up to date with helm template output', () => {
    expect(actual).toBe(expected);
  });

  it('holds the kube-dns objects in kube-system', () => {
    const objs = parseManifests(actual);
    expect(kinds(objs)).toContain('Service/kube-dns');
    expect(kinds(objs)).toContain('ConfigMap/coredns');
    expect(str(one(objs, 'Service'), 'spec', 'clusterIP')).toBe('10.96.0.10');
    for (const o of objs) if (!o.kind.startsWith('ClusterRole')) expect(o.metadata.namespace).toBe('kube-system');
  });
});
