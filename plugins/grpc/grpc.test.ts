/**
 * The grpc plugin against the real CoreDNS 1.15.0 grpc:// server (.bin/coredns): answers, NXDOMAIN
 * and `fallthrough`, `except`, TLS with a CA and `tls_servername`, an upstream that is down, and
 * the metrics; a stub gRPC server of the test's own for what CoreDNS never sends (NotFound, a
 * reply to another question). TO parsing as CoreDNS's parse.HostPortOrFile.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import * as http2 from 'node:http2';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import * as dnsPacket from 'dns-packet';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Rcode } from '../../src/dns/constants.js';
import { decodeDnsPacket, frameDnsPacket, unframe } from '../../src/grpc/wire.js';
import { runCorefile } from '../../test/helpers/corefile.js';
import { encodeQuery } from '../../test/helpers/dns.js';
import { sampleValue } from '../../test/helpers/http.js';
import { freePort } from '../../test/helpers/net.js';
import { waitFor } from '../../test/helpers/wait.js';
import { hostPortOrFile } from './setup.js';

const COREDNS = resolve(import.meta.dirname, '../../.bin/coredns');
const TESTDATA = resolve(import.meta.dirname, '../forward/testdata');
const CERT = join(TESTDATA, 'dot.crt');
const KEY = join(TESTDATA, 'dot.key');

const ANSWERS = `  template IN A example.org {
    answer "{{ .Name }} 60 IN A 10.0.0.1"
  }
  template IN ANY nx.test {
    rcode NXDOMAIN
  }`;

let coredns: ChildProcess | null = null;
let plain = 0;
let secure = 0;
const output: string[] = [];

beforeAll(async () => {
  if (!existsSync(COREDNS)) throw new Error(`${COREDNS} is missing: .ci/run installs CoreDNS 1.15.0 there`);
  plain = await freePort();
  secure = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'clusterdns-grpc-coredns-'));
  writeFileSync(
    join(dir, 'Corefile'),
    `grpc://.:${plain} {\n${ANSWERS}\n}\ngrpc://.:${secure} {\n  tls ${CERT} ${KEY}\n${ANSWERS}\n}\n`,
  );
  coredns = spawn(COREDNS, ['-conf', join(dir, 'Corefile')], { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
  for (const s of [coredns.stdout!, coredns.stderr!])
    s.on('data', (c: Buffer) => output.push(...c.toString().split('\n').filter(Boolean)));
  await waitFor(
    () => `CoreDNS to start:\n${output.join('\n')}`,
    () => {
      if (coredns!.exitCode !== null) throw new Error(`coredns exited:\n${output.join('\n')}`);
      return output.some((l) => l.startsWith('CoreDNS-'));
    },
  );
});

afterAll(() => {
  coredns?.kill('SIGKILL');
});

const rcodeOf = (m: dnsPacket.Packet): number => ((m.flags ?? 0) & 0xf) as number;
const addresses = (m: dnsPacket.Packet): unknown[] => (m.answers ?? []).map((a) => (a as { data?: unknown }).data);

describe('grpc to CoreDNS 1.15.0', () => {
  it('forwards and counts per upstream; NXDOMAIN falls through only for the fallthrough zones', async () => {
    const r = await runCorefile(`. {\n  grpc . 127.0.0.1:${plain} {\n    fallthrough nx.test\n  }\n  whoami\n}`);
    try {
      const a = await r.ask('www.example.org', 'A');
      expect(addresses(a)).toEqual(['10.0.0.1']);
      const to = `127.0.0.1:${plain}`;
      expect(await sampleValue('coredns_grpc_requests_total', 'coredns_grpc_requests_total', { to })).toBeGreaterThan(
        0,
      );
      expect(
        await sampleValue('coredns_grpc_responses_total', 'coredns_grpc_responses_total', { rcode: 'NOERROR', to }),
      ).toBeGreaterThan(0);
      expect(
        await sampleValue('coredns_grpc_request_duration_seconds', 'coredns_grpc_request_duration_seconds_count', {
          to,
        }),
      ).toBeGreaterThan(0);
      // NXDOMAIN inside the fallthrough zone: whoami answers.
      const fell = await r.ask('a.nx.test', 'A');
      expect(rcodeOf(fell)).toBe(Rcode.NOERROR);
      expect(fell.additionals?.some((x) => x.type === 'A')).toBe(true);
      // Outside the fallthrough zones an NXDOMAIN would be written (next test); CoreDNS's SERVFAIL
      // for a name its templates do not cover comes back as it is.
      expect(rcodeOf(await r.ask('none.test', 'A'))).toBe(Rcode.SERVFAIL);
    } finally {
      await r.stop();
    }
  });

  it('writes the upstream NXDOMAIN without fallthrough, and passes excepted names on', async () => {
    const r = await runCorefile(`. {\n  grpc . 127.0.0.1:${plain} {\n    except skip.example.org\n  }\n  whoami\n}\n`);
    try {
      expect(rcodeOf(await r.ask('a.nx.test', 'A'))).toBe(Rcode.NXDOMAIN);
      const skipped = await r.ask('www.skip.example.org', 'A');
      expect(skipped.answers ?? []).toEqual([]);
      expect(skipped.additionals?.some((x) => x.type === 'SRV')).toBe(true); // whoami's
    } finally {
      await r.stop();
    }
  });

  it('connects in TLS with a CA file, with and without tls_servername; a wrong name fails', async () => {
    for (const [opts, want] of [
      [`tls ${CERT}`, Rcode.NOERROR],
      [`tls ${CERT}\n    tls_servername dot.test`, Rcode.NOERROR],
      [`tls ${CERT}\n    tls_servername wrong.test`, Rcode.SERVFAIL],
    ] as const) {
      const r = await runCorefile(`. {\n  grpc . 127.0.0.1:${secure} {\n    ${opts}\n  }\n}\n`);
      try {
        expect(rcodeOf(await r.ask('tls.example.org', 'A')), opts).toBe(want);
      } finally {
        await r.stop();
      }
    }
  });

  it('tries the next upstream after one that is down, and SERVFAILs when all are', async () => {
    const dead = await freePort();
    const r = await runCorefile(
      `. {\n  grpc . 127.0.0.1:${dead} 127.0.0.1:${plain} {\n    policy sequential\n  }\n}\nsolo {\n  grpc . 127.0.0.1:${dead}\n}\n`,
    );
    try {
      expect(addresses(await r.ask('www.example.org', 'A'))).toEqual(['10.0.0.1']);
      expect(rcodeOf(await r.ask('x.solo', 'A'))).toBe(Rcode.SERVFAIL);
    } finally {
      await r.stop();
    }
  });
});

describe('grpc against a stub gRPC server', () => {
  it('answers NXDOMAIN for a NotFound status and FORMERR for a reply to another question', async () => {
    const server = http2.createServer();
    server.on('stream', (stream) => {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => {
        const q = decodeDnsPacket(unframe(Buffer.concat(chunks)));
        const name = dnsPacket.decode(q).questions![0]!.name;
        if (name.startsWith('notfound')) {
          stream.respond(
            { ':status': 200, 'content-type': 'application/grpc', 'grpc-status': '5' },
            { endStream: true },
          );
          return;
        }
        const other = encodeQuery('other.test', 'A', { id: q.readUInt16BE(0) });
        other[2]! |= 0x80;
        stream.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
        stream.once('wantTrailers', () => stream.sendTrailers({ 'grpc-status': '0' }));
        stream.end(frameDnsPacket(other));
      });
    });
    await new Promise<void>((res) => server.listen(0, '127.0.0.1', res));
    const port = (server.address() as { port: number }).port;
    const r = await runCorefile(`. {\n  grpc . 127.0.0.1:${port}\n}\n`);
    try {
      expect(rcodeOf(await r.ask('notfound.test', 'A'))).toBe(Rcode.NXDOMAIN);
      expect(rcodeOf(await r.ask('mismatch.test', 'A'))).toBe(Rcode.FORMERR);
    } finally {
      await r.stop();
      server.close();
    }
  });
});

describe('TO parsing (parse.HostPortOrFile)', () => {
  it('keeps CoreDNS labels: default port 53, schemes, unix sockets, resolv.conf files', () => {
    expect(hostPortOrFile('10.0.0.1')).toMatchObject([{ label: '10.0.0.1:53', host: '10.0.0.1', port: 53 }]);
    expect(hostPortOrFile('127.0.0.1:9005')).toMatchObject([{ label: '127.0.0.1:9005', port: 9005 }]);
    expect(hostPortOrFile('[::1]:9005')).toMatchObject([{ label: '[::1]:9005', host: '::1', port: 9005 }]);
    expect(hostPortOrFile('grpc://10.0.0.1')).toMatchObject([{ label: 'grpc://10.0.0.1:443', port: 443 }]);
    expect(hostPortOrFile('unix:///run/dns.sock')).toMatchObject([
      { label: 'unix:///run/dns.sock', socketPath: '/run/dns.sock' },
    ]);
    const dir = mkdtempSync(join(tmpdir(), 'grpc-resolv-'));
    writeFileSync(join(dir, 'resolv.conf'), 'nameserver 10.0.0.9\nnameserver fd00::9 # comment\nsearch x\n');
    expect(hostPortOrFile(join(dir, 'resolv.conf')).map((u) => u.label)).toEqual(['10.0.0.9:53', '[fd00::9]:53']);
    expect(() => hostPortOrFile('nothere')).toThrow(/not an IP address or file "nothere"/);
  });
});
