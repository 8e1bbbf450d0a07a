/**
 * Helpers for the chart tests: locate helm, render the chart, parse the manifests.
 *
 * helm is looked up at $PWD/.bin/helm (where scripts/install-helm.sh puts it) and then on PATH.
 * When it is missing the helm-based tests fail with instructions; they never skip.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments, stringify } from 'yaml';
import { isExecutable } from '../helpers/spawn.js';

export const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const CHART_DIR = path.join(REPO_ROOT, 'charts/clusterdns');
export const RELEASE = 'clusterdns';
export const NAMESPACE = 'kube-system';

let cachedHelm: string | undefined;

/** Absolute path of helm; throws (never skips) when it is not installed. */
export function helmPath(): string {
  if (cachedHelm !== undefined) return cachedHelm;
  const candidates = [path.join(process.cwd(), '.bin/helm'), path.join(REPO_ROOT, '.bin/helm')];
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
    if (dir) candidates.push(path.join(dir, 'helm'));
  }
  const found = candidates.find(isExecutable);
  if (found === undefined) {
    throw new Error(
      'helm not found at ./.bin/helm or on PATH. Install it with `scripts/install-helm.sh` ' +
        '(go install helm.sh/helm/v3/cmd/helm through the Go module proxy).',
    );
  }
  cachedHelm = found;
  return found;
}

export interface HelmResult {
  status: number;
  stdout: string;
  stderr: string;
}

export function runHelm(args: string[]): HelmResult {
  const r = spawnSync(helmPath(), args, {
    cwd: REPO_ROOT,
    encoding: 'utf8',
    // Keep helm away from the user's repositories/plugins and from any kube context.
    env: {
      ...process.env,
      HELM_CACHE_HOME: path.join(tmpdir(), 'clusterdns-helm-cache'),
      HELM_CONFIG_HOME: path.join(tmpdir(), 'clusterdns-helm-config'),
      HELM_DATA_HOME: path.join(tmpdir(), 'clusterdns-helm-data'),
      KUBECONFIG: '/dev/null',
    },
  });
  if (r.error) throw r.error;
  return { status: r.status ?? -1, stdout: r.stdout, stderr: r.stderr };
}

/** A rendered Kubernetes object, as far as the tests need to look into it. */
export interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  [key: string]: unknown;
}

export interface RenderOptions {
  /** Values files (`--values`), applied before `values`. */
  valuesFiles?: string[];
  /** Values merged over values.yaml (written to a temporary values file). */
  values?: Record<string, unknown>;
  /** Extra `--set` style arguments. */
  set?: string[];
  apiVersions?: string[];
  release?: string;
  namespace?: string;
}

function withValuesFile<T>(values: Record<string, unknown> | undefined, fn: (args: string[]) => T): T {
  if (values === undefined) return fn([]);
  const dir = mkdtempSync(path.join(tmpdir(), 'clusterdns-values-'));
  try {
    const file = path.join(dir, 'values.yaml');
    // helm reads values as YAML 1.1 (yes/no/on/off are booleans there), so quote accordingly.
    writeFileSync(file, stringify(values, { version: '1.1' }));
    return fn(['--values', file]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function templateArgs(o: RenderOptions, chartDir = CHART_DIR): string[] {
  const args = ['template', o.release ?? RELEASE, chartDir, '--namespace', o.namespace ?? NAMESPACE];
  for (const f of o.valuesFiles ?? []) args.push('--values', f);
  for (const s of o.set ?? []) args.push('--set', s);
  for (const a of o.apiVersions ?? []) args.push('--api-versions', a);
  return args;
}

/** `helm template` output as text; throws with helm's stderr when rendering fails. */
export function helmTemplateText(o: RenderOptions = {}): string {
  return withValuesFile(o.values, (valueArgs) => {
    const r = runHelm([...templateArgs(o), ...valueArgs]);
    if (r.status !== 0) throw new Error(`helm template failed (${r.status}): ${r.stderr}`);
    return r.stdout;
  });
}

/** `helm template` expected to fail: returns stderr. */
export function helmTemplateError(o: RenderOptions): string {
  return withValuesFile(o.values, (valueArgs) => {
    const r = runHelm([...templateArgs(o), ...valueArgs]);
    if (r.status === 0) throw new Error('helm template succeeded but was expected to fail');
    return r.stderr;
  });
}

export function parseManifests(text: string): K8sObject[] {
  const out: K8sObject[] = [];
  for (const doc of parseAllDocuments(text)) {
    if (doc.errors.length > 0)
      throw new Error(`invalid YAML in helm output: ${doc.errors.map((e) => e.message).join('; ')}`);
    const v: unknown = doc.toJS();
    if (v === null || v === undefined) continue;
    if (!isObject(v) || typeof v.kind !== 'string' || typeof v.apiVersion !== 'string' || !isObject(v.metadata)) {
      throw new Error(`rendered document is not a Kubernetes object: ${JSON.stringify(v).slice(0, 200)}`);
    }
    out.push(v as K8sObject);
  }
  return out;
}

export function render(o: RenderOptions = {}): K8sObject[] {
  return parseManifests(helmTemplateText(o));
}

export function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Exactly one object of this kind (and name, when given). */
export function one(objs: K8sObject[], kind: string, name?: string): K8sObject {
  const found = objs.filter((o) => o.kind === kind && (name === undefined || o.metadata.name === name));
  if (found.length !== 1) {
    throw new Error(
      `expected one ${kind}${name ? ` ${name}` : ''}, found ${found.length}: ${objs.map((o) => `${o.kind}/${o.metadata.name}`).join(', ')}`,
    );
  }
  return found[0] as K8sObject;
}

export function kinds(objs: K8sObject[]): string[] {
  return objs.map((o) => `${o.kind}/${o.metadata.name}`).sort();
}

/** Walk a path of keys/indices; throws with the path when something is missing. */
export function at(obj: unknown, ...keys: (string | number)[]): unknown {
  let cur: unknown = obj;
  const seen: (string | number)[] = [];
  for (const k of keys) {
    seen.push(k);
    if (typeof k === 'number') {
      if (!Array.isArray(cur) || k >= cur.length) throw new Error(`no index ${seen.join('.')}`);
      cur = cur[k] as unknown;
    } else {
      if (!isObject(cur) || !(k in cur)) throw new Error(`no key ${seen.join('.')}`);
      cur = cur[k];
    }
  }
  return cur;
}

export function str(obj: unknown, ...keys: (string | number)[]): string {
  const v = at(obj, ...keys);
  if (typeof v !== 'string') throw new Error(`${keys.join('.')} is not a string: ${JSON.stringify(v)}`);
  return v;
}

export function arr(obj: unknown, ...keys: (string | number)[]): unknown[] {
  const v = at(obj, ...keys);
  if (!Array.isArray(v)) throw new Error(`${keys.join('.')} is not a list: ${JSON.stringify(v)}`);
  return v as unknown[];
}

export function rec(obj: unknown, ...keys: (string | number)[]): Record<string, unknown> {
  const v = at(obj, ...keys);
  if (!isObject(v)) throw new Error(`${keys.join('.')} is not a map: ${JSON.stringify(v)}`);
  return v;
}

/** The pod template's labels of a Deployment. */
export function podLabels(d: K8sObject): Record<string, unknown> {
  return rec(d, 'spec', 'template', 'metadata', 'labels');
}

/** The DNS server's container of a Deployment (named `coredns`, as in the coredns chart). */
export function container(deploy: K8sObject, name = 'coredns'): Record<string, unknown> {
  const cs = arr(deploy, 'spec', 'template', 'spec', 'containers');
  const c = cs.find((x) => isObject(x) && x.name === name);
  if (!isObject(c)) throw new Error(`no ${name} container`);
  return c;
}

/**
 * NOTES.txt as `helm install` would print it. `helm template` does not render NOTES.txt and
 * `helm install --dry-run` needs a cluster, so a copy of the chart wraps NOTES.txt in a named
 * template and renders it into a ConfigMap.
 */
export function renderNotes(o: RenderOptions = {}): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'clusterdns-notes-'));
  try {
    const chart = path.join(dir, 'clusterdns');
    cpSync(CHART_DIR, chart, { recursive: true });
    const notes = readFileSync(path.join(chart, 'templates/NOTES.txt'), 'utf8');
    writeFileSync(
      path.join(chart, 'templates/_notes_under_test.tpl'),
      `{{- define "test.notes" -}}\n${notes}{{- end -}}\n`,
    );
    writeFileSync(
      path.join(chart, 'templates/notes-under-test.yaml'),
      'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: notes-under-test\ndata:\n  notes: {{ include "test.notes" . | toJson }}\n',
    );
    return withValuesFile(o.values, (valueArgs) => {
      const r = runHelm([...templateArgs(o, chart), ...valueArgs, '--show-only', 'templates/notes-under-test.yaml']);
      if (r.status !== 0) throw new Error(`helm template (NOTES) failed (${r.status}): ${r.stderr}`);
      return str(one(parseManifests(r.stdout), 'ConfigMap'), 'data', 'notes');
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export function corefileOf(objs: K8sObject[]): string {
  return str(one(objs, 'ConfigMap'), 'data', 'Corefile');
}

/** Run `node bin/clusterdns ...` from the repository; returns status and output. */
export function runClusterdns(args: string[], cwd = REPO_ROOT): HelmResult {
  const r = spawnSync(process.execPath, [path.join(cwd, 'bin/clusterdns'), ...args], {
    cwd,
    encoding: 'utf8',
    timeout: 30_000,
  });
  if (r.error) throw r.error;
  return { status: r.status ?? -1, stdout: r.stdout, stderr: r.stderr };
}

export function helmVersion(): string {
  return execFileSync(helmPath(), ['version', '--template', '{{.Version}}'], { encoding: 'utf8' }).trim();
}
