/**
 * Reply sizes against the real CoreDNS 1.15.0 (.bin/coredns) on the same sandbox cluster: a
 * headless `_http._tcp` SRV query without EDNS (the SRV targets are in the compression table, so
 * the additional owners point at them), PTR replies, and a few more. Ours is never larger, and
 * carries at least as many records.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSandbox, type Sandbox } from '../../sandbox/server.js';
import { decode } from '../dns/message.js';
import { encodeQuery, udpExchange } from '../../test/helpers/dns.js';
import { freePort } from '../../test/helpers/net.js';
import { startServer, type TestServer } from '../../test/helpers/server.js';
import { anyError, waitFor } from '../../test/helpers/wait.js';

const COREDNS = resolve(import.meta.dirname, '../../.bin/coredns');

function headless(name: string, n: number, base: number, hostnames: boolean): object[] {
  return [
    {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name, namespace: 'testns' },
      spec: { clusterIP: 'None', ports: [{ name: 'http', port: 80, protocol: 'TCP' }] },
    },
    {
      apiVersion: 'discovery.k8s.io/v1',
      kind: 'EndpointSlice',
      addressType: 'IPv4',
      metadata: { name: `${name}-abc`, namespace: 'testns', labels: { 'kubernetes.io/service-name': name } },
      endpoints: Array.from({ length: n }, (_, i) => ({
        addresses: [`10.244.${base}.${i + 10}`],
        conditions: { ready: true },
        ...(hostnames ? { hostname: `web-${i}` } : {}),
      })),
      ports: [{ name: 'http', port: 80, protocol: 'TCP' }],
    },
  ];
}

let last = '';
describe('reply sizes against CoreDNS 1.15.0', () => {
  let sb: Sandbox;
  let ours: TestServer;
  let coredns: ChildProcess;
  let corePort = 0;
  const coreOutput: string[] = [];

  beforeAll(async () => {
    expect(existsSync(COREDNS), `${COREDNS} (the real CoreDNS 1.15.0) is needed`).toBe(true);
    sb = await startSandbox({ files: ['examples/cluster.yaml'] });
    for (const o of [
      ...headless('web6', 6, 5, false),
      ...headless('named6', 6, 6, true),
      ...headless('many', 40, 7, false),
    ])
      sb.apply(o);
    const corefile = `cluster.local in-addr.arpa ip6.arpa {\n  kubernetes cluster.local in-addr.arpa ip6.arpa {\n    endpoint ${sb.url}\n  }\n}\n`;
    ours = await startServer(corefile);
    const dir = mkdtempSync(join(tmpdir(), 'clusterdns-coredns-'));
    writeFileSync(join(dir, 'Corefile'), corefile);
    corePort = await freePort();
    coredns = spawn(COREDNS, ['-conf', join(dir, 'Corefile'), '-dns.port', String(corePort)], {
      cwd: dir,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    coredns.stdout!.on('data', (c: Buffer) => coreOutput.push(c.toString()));
    coredns.stderr!.on('data', (c: Buffer) => coreOutput.push(c.toString()));
    const q = encodeQuery('many.testns.svc.cluster.local', 'A', { edns: 4096 });
    for (const port of [ours.port, corePort]) {
      await waitFor(
        () =>
          `${port === corePort ? 'CoreDNS' : 'clusterdns'} to see the cluster (last reply: ${last}; CoreDNS output: ${coreOutput.join('')})`,
        async () => {
          const m = decode(await udpExchange(port, q, 1000));
          last = `rcode ${m.flags! & 0xf}, ${m.answers.length} answers`;
          return m.answers.length === 40;
        },
        { everyMs: 100, retry: anyError },
      );
    }
  }, 60_000);

  afterAll(async () => {
    coredns?.kill('SIGKILL');
    await ours?.stop();
    await sb?.close();
  });

  const cases: [string, string, number | undefined][] = [
    ['_http._tcp.web6.testns.svc.cluster.local', 'SRV', undefined],
    ['_http._tcp.named6.testns.svc.cluster.local', 'SRV', undefined],
    ['_http._tcp.many.testns.svc.cluster.local', 'SRV', undefined],
    ['_http._tcp.many.testns.svc.cluster.local', 'SRV', 1232],
    ['web6.testns.svc.cluster.local', 'A', undefined],
    ['many.testns.svc.cluster.local', 'A', undefined],
    ['12.5.244.10.in-addr.arpa', 'PTR', undefined],
    ['12.6.244.10.in-addr.arpa', 'PTR', undefined],
    ['1.0.96.10.in-addr.arpa', 'PTR', undefined],
    ['kubernetes.default.svc.cluster.local', 'A', undefined],
    ['nothere.testns.svc.cluster.local', 'A', undefined],
  ];

  for (const [name, type, edns] of cases) {
    it(`${name} ${type}${edns ? ` (EDNS ${edns})` : ''}: not larger than CoreDNS's, as many records`, async () => {
      const q = encodeQuery(name, type, { id: 4711, ...(edns ? { edns } : {}) });
      const a = await udpExchange(ours.port, q);
      const b = await udpExchange(corePort, q);
      const ma = decode(a);
      const mb = decode(b);
      expect(ma.flags! & 0xf).toBe(mb.flags! & 0xf);
      expect(ma.answers.length).toBe(mb.answers.length);
      expect(ma.additionals.length).toBeGreaterThanOrEqual(mb.additionals.length);
      expect(ma.flag_tc).toBe(mb.flag_tc);
      expect(a.length).toBeLessThanOrEqual(b.length);
    });
  }

  it('the headless SRV query with six endpoints is byte for byte the reply of CoreDNS (targets registered for compression, TC for a left-out additional)', async () => {
    for (const svc of ['web6', 'named6']) {
      const q = encodeQuery(`_http._tcp.${svc}.testns.svc.cluster.local`, 'SRV', { id: 1 });
      const a = await udpExchange(ours.port, q);
      const b = await udpExchange(corePort, q);
      expect(a.toString('hex'), svc).toBe(b.toString('hex'));
    }
  });
});
