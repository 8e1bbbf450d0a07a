/**
 * The kubernetes plugin's `multicluster` option end to end (docs/records.md §8.4): `bin/clusterdns
 * -workers N` against the sandbox serving ServiceImports. One set of API watches (the two of
 * `multicluster` included) whatever N; every thread answers the imports from the shared index; a
 * change of an import reaches every thread, with the multicluster SOA serial; readiness waits for
 * the import watch, and reports it when the CRD is not installed; `-validate` names a
 * multicluster zone the plugin is not authoritative for, with its file:line.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { Answer } from 'dns-packet';
import { afterEach, describe, expect, it } from 'vitest';
import { startSandbox, type Sandbox } from '../../sandbox/server.js';
import { rcodeName } from '../../src/dns/constants.js';
import { rcodeOf } from '../../src/dns/message.js';
import { udpQuery } from '../helpers/dns.js';
import { httpRequest } from '../helpers/http.js';
import { freePort } from '../helpers/net.js';
import { BIN, runCommand, watchLines } from '../helpers/spawn.js';
import { anyError, waitFor } from '../helpers/wait.js';

const ROOT = resolve(import.meta.dirname, '../..');
const CLUSTER = ['examples/cluster.yaml', 'test/differential/fixtures/multicluster.yaml'].map((f) => join(ROOT, f));

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

interface Running {
  dns: number;
  ready: number;
  output: readonly string[];
}

/** Start the server; resolves when it listens (not when it is ready). */
async function start(sb: Sandbox, workers: number): Promise<Running> {
  const [dns, ready] = [await freePort(), await freePort()];
  const dir = mkdtempSync(join(tmpdir(), 'clusterdns-mc-'));
  const corefile = join(dir, 'Corefile');
  writeFileSync(
    corefile,
    `.:${dns} {
    ready 127.0.0.1:${ready}
    kubernetes cluster.local clusterset.local {
        endpoint ${sb.url}
        multicluster clusterset.local
        startup_timeout 1s
    }
}
`,
  );
  const proc = spawn(process.execPath, [BIN, '-conf', corefile, '-workers', String(workers)], {
    cwd: dir,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines = watchLines(proc, { label: 'clusterdns', timeoutMs: 20000 });
  cleanups.push(async () => {
    if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGTERM');
    return lines.exited;
  });
  await lines.waitFor(/^clusterdns-\d/);
  return { dns, ready, output: lines.output };
}

const data = (a: Answer): string => String((a as { data?: unknown }).data);

/** `n` queries, each from its own socket (the kernel spreads them over the threads); their answers. */
async function spread(port: number, n: number, name: string, type: string): Promise<string[]> {
  const out: string[] = [];
  for (let i = 0; i < n; i += 20) {
    const batch = await Promise.all(Array.from({ length: Math.min(20, n - i) }, () => udpQuery(port, name, type)));
    for (const m of batch) {
      const soa = m.authorities?.find((a) => a.type === 'SOA') as { data?: { serial?: number } } | undefined;
      out.push(
        `${rcodeName(rcodeOf(m))} ${(m.answers ?? []).map(data).sort().join(',')} ${soa ? `serial=${soa.data?.serial === 0 ? 0 : 'set'}` : ''}`,
      );
    }
  }
  return out;
}

describe('multicluster: ServiceImports through query threads', () => {
  it('one set of watches, every thread answers imports, changes reach every thread', async () => {
    const sb = await startSandbox({ files: CLUSTER, log: () => undefined });
    cleanups.push(() => sb.close());
    const srv = await start(sb, 3);
    await waitFor('ready', async () => (await httpRequest(srv.ready, '/ready')).status === 200, { retry: anyError });
    // services, namespaces, endpointslices, and multicluster's endpointslices and serviceimports
    expect(sb.watchesByResource()).toEqual({ services: 1, namespaces: 1, endpointslices: 2, serviceimports: 1 });
    expect(new Set(await spread(srv.dns, 60, 'web.testns.svc.clusterset.local', 'A'))).toEqual(
      new Set(['NOERROR 10.42.0.10 ']),
    );
    expect(new Set(await spread(srv.dns, 60, 'db.testns.svc.clusterset.local', 'A'))).toEqual(
      new Set(['NOERROR 10.1.0.20,10.1.0.21,10.2.0.20,10.3.0.20 ']),
    );
    expect(new Set(await spread(srv.dns, 40, 'db-0.c2.db.testns.svc.clusterset.local', 'A'))).toEqual(
      new Set(['NOERROR 10.2.0.20 ']),
    );
    // NODATA in the multicluster zone carries its own serial: 0 until an import or slice is updated.
    expect(new Set(await spread(srv.dns, 20, 'noips.testns.svc.clusterset.local', 'A'))).toEqual(
      new Set(['NOERROR  serial=0']),
    );
    sb.apply({
      apiVersion: 'multicluster.x-k8s.io/v1alpha1',
      kind: 'ServiceImport',
      metadata: { name: 'noips', namespace: 'testns' },
      spec: { type: 'ClusterSetIP', ips: ['10.42.0.30'], ports: [{ name: 'https', protocol: 'TCP', port: 443 }] },
    });
    await waitFor(
      'the updated import in every thread',
      async () =>
        (await spread(srv.dns, 60, 'noips.testns.svc.clusterset.local', 'A')).every((a) => a === 'NOERROR 10.42.0.30 '),
      { retry: anyError },
    );
    expect(new Set(await spread(srv.dns, 20, 'noports.testns.svc.clusterset.local', 'A'))).toEqual(
      new Set(['NXDOMAIN  serial=set']),
    );
    expect(sb.watchesByResource()).toEqual({ services: 1, namespaces: 1, endpointslices: 2, serviceimports: 1 });
  });

  it('without the ServiceImport CRD the plugin never becomes ready and says why', async () => {
    const sb = await startSandbox({ files: CLUSTER, serviceImports: false, log: () => undefined });
    cleanups.push(() => sb.close());
    const srv = await start(sb, 1);
    expect(srv.output.join('\n')).toMatch(/starting server with unsynced Kubernetes API/);
    const r = await httpRequest(srv.ready, '/ready');
    expect(r.status).toBe(503);
    expect(srv.output.join('\n')).toMatch(/list of serviceimports failed: 404 on serviceimports/);
    // The cluster zone answers from what did sync; a name error is SERVFAIL while unsynced (§6.4).
    expect((await udpQuery(srv.dns, 'svc1.testns.svc.cluster.local', 'A')).answers?.map(data)).toEqual(['10.96.0.11']);
    expect(rcodeName(rcodeOf(await udpQuery(srv.dns, 'web.testns.svc.clusterset.local', 'A')))).toBe('SERVFAIL');
  });
});

describe('multicluster: -validate', () => {
  it('reports a multicluster zone outside the plugin zones with file:line, and accepts one inside', () => {
    const dir = mkdtempSync(join(tmpdir(), 'clusterdns-mc-validate-'));
    const conf = join(dir, 'Corefile');
    writeFileSync(
      conf,
      [
        'a.local {',
        '  kubernetes cluster.local clusterset.local {',
        '    multicluster clusterset.local',
        '  }',
        '}',
        'b.local {',
        '  kubernetes cluster.local {',
        '    multicluster clusterset.local other.local',
        '  }',
        '}',
        '',
      ].join('\n'),
    );
    const r = runCommand(['-validate', '-conf', conf]);
    expect(r.status).toBe(1);
    expect(r.stderr.trim().split('\n')).toEqual([
      `plugin/kubernetes: ${conf}:8 - Error during parsing: is not authoritative for the multicluster zone clusterset.local. (authoritative zones: [cluster.local.])`,
      `Configuration has 1 error: ${conf}`,
    ]);
  });
});
