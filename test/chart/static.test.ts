/**
 * Chart checks that need no helm: values.yaml against values.schema.json (ajv), every
 * `.Values.x.y` a template reads is declared in values.yaml, and README.md documents every value.
 */
import { readFileSync, readdirSync } from 'node:fs';
import * as path from 'node:path';
import { Ajv } from 'ajv';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { CHART_DIR, REPO_ROOT, isObject } from './helm.js';

const values: unknown = parse(readFileSync(path.join(CHART_DIR, 'values.yaml'), 'utf8'));
const schema: unknown = JSON.parse(readFileSync(path.join(CHART_DIR, 'values.schema.json'), 'utf8'));
const templatesDir = path.join(CHART_DIR, 'templates');
const templates = readdirSync(templatesDir)
  .filter((f) => /\.(ya?ml|tpl|txt)$/.test(f))
  .map((f) => ({ file: f, text: readFileSync(path.join(templatesDir, f), 'utf8') }));

function compile(): (data: unknown) => { ok: boolean; errors: string } {
  if (!isObject(schema)) throw new Error('values.schema.json is not an object');
  const ajv = new Ajv({ allErrors: true, strict: true, allowUnionTypes: true });
  const validate = ajv.compile(schema);
  return (data) => {
    const ok = validate(data);
    return { ok, errors: ajv.errorsText(validate.errors) };
  };
}

/** Does `values` have this dotted path? Stops (true) at a free-form map or list. */
function declared(root: unknown, keys: string[]): boolean {
  let cur: unknown = root;
  for (const k of keys) {
    if (!isObject(cur)) return false;
    if (!(k in cur)) return false;
    cur = cur[k];
  }
  return true;
}

/**
 * `.Values.a.b.c` references of a template, and `$x.a.b` through variables bound with
 * `$x := .Values.a` in the same file.
 */
function valueRefs(text: string): string[][] {
  const refs: string[][] = [];
  const ident = '[A-Za-z_][A-Za-z0-9_]*';
  for (const m of text.matchAll(new RegExp(`\\.Values((?:\\.${ident})+)`, 'g'))) {
    refs.push((m[1] ?? '').slice(1).split('.'));
  }
  for (const m of text.matchAll(new RegExp(`(\\$${ident})\\s*:?=\\s*\\.Values((?:\\.${ident})+)`, 'g'))) {
    // `range $k, $v := .Values.x` binds elements, not the map itself.
    if (/range\s+(\$\w+\s*,\s*)?$/.test(text.slice(0, m.index))) continue;
    const variable = m[1] ?? '';
    const base = (m[2] ?? '').slice(1).split('.');
    const escaped = variable.replace(/\$/g, '\\$');
    for (const u of text.matchAll(new RegExp(`${escaped}((?:\\.${ident})+)`, 'g'))) {
      refs.push([...base, ...(u[1] ?? '').slice(1).split('.')]);
    }
  }
  return refs;
}

/** Dotted paths of values.yaml down to leaves (scalars, lists, empty maps). */
function leafPaths(v: unknown, prefix: string[] = []): string[] {
  if (isObject(v) && Object.keys(v).length > 0) {
    return Object.entries(v).flatMap(([k, x]) => leafPaths(x, [...prefix, k]));
  }
  return [prefix.join('.')];
}

describe('values.schema.json', () => {
  const validate = compile();

  it('accepts values.yaml', () => {
    const r = validate(values);
    expect(r.errors).toBe('No errors');
    expect(r.ok).toBe(true);
  });

  it('declares every top-level key of values.yaml and nothing undeclared is accepted', () => {
    if (!isObject(values) || !isObject(schema) || !isObject(schema.properties)) throw new Error('bad documents');
    const props = Object.keys(schema.properties);
    for (const k of Object.keys(values)) expect(props, k).toContain(k);
    expect(validate({ ...values, replicaCnt: 3 }).ok).toBe(false);
  });

  it('rejects wrong types and unknown enum values', () => {
    if (!isObject(values)) throw new Error('bad values');
    expect(validate({ ...values, serviceType: 'Foo' }).ok).toBe(false);
    expect(validate({ ...values, replicaCount: 'two' }).ok).toBe(false);
    expect(
      validate({ ...values, servers: [{ zones: [{ zone: '.', scheme: 'udp://' }], port: 53, plugins: [] }] }).ok,
    ).toBe(false);
    expect(
      validate({ ...values, servers: [{ zones: [{ zone: '.' }], port: 53, plugins: [{ parameters: 'x' }] }] }).ok,
    ).toBe(false);
    expect(validate({ ...values, stubDomains: { 'consul.local': '10.0.0.1' } }).ok).toBe(false);
    expect(validate({ ...values, stubDomains: { 'consul.local': ['10.0.0.1'] } }).ok).toBe(true);
  });

  it('accepts the coredns chart servers schema (zones, port, servicePort, nodePort, hostPort, plugins)', () => {
    if (!isObject(values)) throw new Error('bad values');
    const servers = [
      {
        zones: [
          { zone: 'example.com.', scheme: 'dns://', use_tcp: true },
          { zone: 'example.org.', scheme: 'tls://' },
        ],
        port: 5353,
        servicePort: 53,
        nodePort: 30053,
        hostPort: 5353,
        plugins: [{ name: 'cache', parameters: 30, configBlock: 'success 1000' }, { name: 'errors' }],
      },
    ];
    const r = validate({ ...values, servers });
    expect(r.errors).toBe('No errors');
  });
});

describe('templates read only declared values', () => {
  const all = templates.flatMap((t) => valueRefs(t.text).map((ref) => ({ file: t.file, ref })));

  it('finds references in every template', () => {
    expect(all.length).toBeGreaterThan(50);
    for (const t of templates.filter((x) => x.file.endsWith('.yaml'))) {
      expect(valueRefs(t.text).length, t.file).toBeGreaterThan(0);
    }
  });

  it('every .Values path is declared in values.yaml', () => {
    const missing = all.filter((r) => !declared(values, r.ref)).map((r) => `${r.file}: .Values.${r.ref.join('.')}`);
    expect([...new Set(missing)]).toEqual([]);
  });

  it('detects an undeclared reference (self-check of the scanner)', () => {
    const refs = valueRefs(
      '{{ .Values.service.nope }} {{- $m := .Values.prometheus.monitor }}{{ $m.bogus }}{{ range $k, $v := .Values.stubDomains }}{{ $v.x }}{{ end }}',
    );
    expect(refs.filter((r) => !declared(values, r)).map((r) => r.join('.'))).toEqual([
      'service.nope',
      'prometheus.monitor.bogus',
    ]);
  });
});

describe('README.md', () => {
  const readme = readFileSync(path.join(CHART_DIR, 'README.md'), 'utf8');

  it('documents every value in a table', () => {
    const rows = new Set([...readme.matchAll(/^\|\s*`([^`]+)`\s*\|/gm)].map((m) => m[1]));
    const documented = (p: string): boolean => {
      const parts = p.split('.');
      for (let n = parts.length; n > 0; n--) if (rows.has(parts.slice(0, n).join('.'))) return true;
      return false;
    };
    const missing = leafPaths(values).filter((p) => !documented(p));
    expect(missing).toEqual([]);
  });

  it('explains the migration from the coredns chart', () => {
    expect(readme).toMatch(/## Migrating from the coredns chart/);
  });
});

describe('Corefile.example', () => {
  it('is the kubeadm default Corefile', () => {
    const text = readFileSync(path.join(REPO_ROOT, 'Corefile.example'), 'utf8');
    for (const needle of [
      'pods insecure',
      'max_concurrent 1000',
      'disable success cluster.local',
      'disable denial cluster.local',
      'prometheus :9153',
      'lameduck 5s',
    ]) {
      expect(text).toContain(needle);
    }
  });
});

describe('Dockerfile', () => {
  const text = readFileSync(path.join(REPO_ROOT, 'Dockerfile'), 'utf8');
  // Instructions with line continuations joined, comments dropped.
  const instructions = text
    .replace(/\\\n/g, ' ')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#'));
  const stages: { from: string; name: string; lines: string[] }[] = [];
  for (const line of instructions) {
    const from = /^FROM\s+(\S+)(?:\s+AS\s+(\S+))?/i.exec(line);
    if (from) stages.push({ from: from[1] ?? '', name: from[2] ?? '', lines: [] });
    else stages.at(-1)?.lines.push(line);
  }
  const args = new Map(
    instructions.flatMap((l) => {
      const m = /^ARG\s+(\w+)=(\S+)/.exec(l);
      return m ? [[m[1] ?? '', m[2] ?? '']] : [];
    }),
  );
  const resolve = (image: string): string => image.replace(/\$\{(\w+)\}/g, (_, v: string) => args.get(v) ?? '');
  const final = stages.at(-1);

  it('builds on node:24-bookworm-slim with npm ci, npm run build and a production-only npm ci', () => {
    const build = stages.find((s) => s.name === 'build');
    expect(build && resolve(build.from)).toBe('node:24-bookworm-slim');
    const runs = build?.lines.filter((l) => l.startsWith('RUN')).join('\n') ?? '';
    expect(runs).toMatch(/npm ci\b/);
    expect(runs).toMatch(/npm run build/);
    expect(runs).toMatch(/npm ci --omit=dev --ignore-scripts/);
  });

  it("runs as 65532 on a Node 24 distroless base, with the base image's node binary as it is", () => {
    if (!final) throw new Error('no stages');
    expect(resolve(final.from)).toBe('gcr.io/distroless/nodejs24-debian12:nonroot');
    // No file capability (port 53 comes from the pod's sysctl, charts/clusterdns README "Port
    // 53"): with one the kernel runs node in secure-exec mode and glibc ignores MALLOC_ARENA_MAX.
    expect(text).not.toMatch(/setcap|getcap|libcap/);
    expect(final.lines.filter((l) => l.includes('/nodejs/bin/node') && !l.startsWith('ENTRYPOINT'))).toEqual([]);
    expect(final.lines).toContain('ENV MALLOC_ARENA_MAX=2');
    expect(final.lines).toContain('USER 65532:65532');
    expect(final.lines).toContain('EXPOSE 53 53/udp 8080 8181 9153');
    expect(final.lines).toContain('ENTRYPOINT ["/nodejs/bin/node", "--max-semi-space-size=2", "/app/bin/clusterdns"]');
    expect(final.lines).toContain('CMD ["-conf", "/etc/coredns/Corefile"]');
    for (const what of ['/prod/node_modules', '/src/dist', 'package.json', 'bin']) {
      expect(
        final.lines.some((l) => l.startsWith('COPY') && l.includes(` ${what} `)),
        what,
      ).toBe(true);
    }
  });

  it('uses the user the chart runs the container as', () => {
    if (!isObject(values) || !isObject(values.securityContext)) throw new Error('bad values');
    expect(final?.lines).toContain(
      `USER ${String(values.securityContext.runAsUser)}:${String(values.securityContext.runAsGroup)}`,
    );
  });

  it('.dockerignore keeps every folder tsconfig.build.json compiles and drops node_modules and dist', () => {
    const ignore = readFileSync(path.join(REPO_ROOT, '.dockerignore'), 'utf8')
      .split('\n')
      .map((l) => l.trim());
    const build: unknown = JSON.parse(readFileSync(path.join(REPO_ROOT, 'tsconfig.build.json'), 'utf8'));
    const included = isObject(build) && Array.isArray(build.include) ? build.include.map(String) : [];
    expect(included).toContain('src');
    for (const keep of [
      '!package.json',
      '!package-lock.json',
      '!tsconfig.json',
      '!tsconfig.build.json',
      '!bin',
      ...included.map((d) => `!${d}`),
    ]) {
      expect(ignore, keep).toContain(keep);
    }
    expect(ignore).toContain('**/node_modules');
    expect(ignore).toContain('**/dist');
  });
});
