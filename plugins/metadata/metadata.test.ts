/**
 * metadata: setup errors as CoreDNS 1.15.0 words them (with file:line), and over real sockets the
 * kubernetes plugin's labels reaching the log plugin's `{/LABEL}` only when metadata is in the
 * block and the name is inside its zones.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rcode, udpQuery } from '../../test/helpers/dns.js';
import { startServer, type TestServer } from '../../test/helpers/server.js';
import { configError, dispenserFor, setupContext as fakeSetupContext } from '../../test/helpers/setup.js';
import { startSandbox, type Sandbox } from '../../sandbox/server.js';
import { metadata } from './index.js';
import { waitFor } from '../../test/helpers/wait.js';

function setupErr(text: string): string {
  return configError(() => metadata.setup(dispenserFor(text, 'metadata'), fakeSetupContext()), text).describe();
}

describe('metadata setup', () => {
  it('accepts zones and an empty block', () => {
    expect(typeof metadata.setup(dispenserFor('metadata example.org 10.0.0.0/8', 'metadata'), fakeSetupContext())).toBe(
      'function',
    );
    expect(typeof metadata.setup(dispenserFor('metadata example.org {\n}', 'metadata'), fakeSetupContext())).toBe(
      'function',
    );
  });
  it('rejects a block with content and a second occurrence', () => {
    expect(setupErr('metadata {\n    foo\n}')).toBe(
      "plugin/metadata: Corefile:2 - Error during parsing: Wrong argument count or unexpected line ending after 'foo'",
    );
    expect(setupErr('metadata\nmetadata')).toBe(
      "plugin/metadata: Corefile:2 - Error during parsing: Wrong argument count or unexpected line ending after 'metadata'",
    );
  });
});

describe('metadata collected for the log plugin', () => {
  let sb: Sandbox;
  const servers: TestServer[] = [];
  beforeAll(async () => {
    sb = await startSandbox({
      objects: [
        { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'ns1' } },
        {
          apiVersion: 'v1',
          kind: 'Service',
          metadata: { name: 'web', namespace: 'ns1' },
          spec: { clusterIP: '10.96.0.50', ports: [{ name: 'http', port: 80, protocol: 'TCP' }] },
        },
      ],
      log: () => undefined,
    });
  });
  afterAll(async () => {
    for (const s of servers) await s.stop();
    await sb?.close();
  });

  const FORMAT =
    '"M {name} [{/kubernetes/kind}] [{/kubernetes/namespace}] [{/kubernetes/service}] [{/kubernetes/protocol}] [{/kubernetes/port-name}] [{/kubernetes/endpoint}] [{/kubernetes/parse-error}] [{/nosuch/label}]"';
  const corefile = (meta: string) =>
    `. {\n${meta}  log . ${FORMAT}\n  kubernetes cluster.local {\n    endpoint ${sb.url}\n  }\n  whoami\n}\n`;

  async function logLine(s: TestServer, name: string): Promise<string> {
    const before = s.logs.length;
    await udpQuery(s.port, name, 'A');
    const l = await waitFor(`the log line for ${name}`, () =>
      s.logs.slice(before).find((x) => x.includes(`M ${name}.`)),
    );
    return l.slice(l.indexOf('M '));
  }

  it('labels of the kubernetes plugin, empty values and unknown labels', async () => {
    const s = await startServer(corefile('  metadata\n'));
    servers.push(s);
    expect(rcode(await udpQuery(s.port, 'web.ns1.svc.cluster.local', 'A'))).toBe(0);
    expect(await logLine(s, 'web.ns1.svc.cluster.local')).toBe(
      'M web.ns1.svc.cluster.local. [svc] [ns1] [web] [] [] [] [-] [-]',
    );
    expect(await logLine(s, '_http._tcp.web.ns1.svc.cluster.local')).toBe(
      'M _http._tcp.web.ns1.svc.cluster.local. [svc] [ns1] [web] [tcp] [http] [] [-] [-]',
    );
    expect(await logLine(s, 'a.b.c.d.e.svc.cluster.local')).toBe(
      'M a.b.c.d.e.svc.cluster.local. [-] [-] [-] [-] [-] [-] [invalid query name] [-]',
    );
    expect(await logLine(s, 'example.org')).toBe('M example.org. [-] [-] [-] [-] [-] [-] [-] [-]');
  });

  it('nothing without the plugin, nor outside its zones', async () => {
    const without = await startServer(corefile(''));
    servers.push(without);
    expect(await logLine(without, 'web.ns1.svc.cluster.local')).toBe(
      'M web.ns1.svc.cluster.local. [-] [-] [-] [-] [-] [-] [-] [-]',
    );
    const other = await startServer(corefile('  metadata example.org\n'));
    servers.push(other);
    expect(await logLine(other, 'web.ns1.svc.cluster.local')).toBe(
      'M web.ns1.svc.cluster.local. [-] [-] [-] [-] [-] [-] [-] [-]',
    );
  });
});
