/**
 * pprof: setup errors as CoreDNS words them, and the side server of a real clusterdns process:
 * CoreDNS's paths (redirect, index, cmdline), Node's CPU profile and heap snapshot behind
 * `profile` and `heap`, Go's errors for what Node has not, the listener kept across a reload, and
 * a port in use failing the start.
 */
import * as http from 'node:http';
import * as net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../test/helpers/net.js';
import { spawnServer, type Spawned } from '../../test/helpers/spawn.js';
import { configError, dispenserFor, setupContext as fakeSetupContext } from '../../test/helpers/setup.js';
import { pprof } from './index.js';

function setupErr(text: string): string {
  return configError(() => pprof.setup(dispenserFor(text, 'pprof'), fakeSetupContext()), text).describe();
}

describe('pprof setup', () => {
  it('rejects what CoreDNS rejects', () => {
    expect(setupErr('pprof a b')).toBe(
      "plugin/pprof: Corefile:1 - Error during parsing: Wrong argument count or unexpected line ending after 'b'",
    );
    expect(setupErr('pprof 6053')).toBe(
      'plugin/pprof: Corefile:1 - Error during parsing: address 6053: missing port in address',
    );
    expect(setupErr('pprof a:b:c')).toBe(
      'plugin/pprof: Corefile:1 - Error during parsing: address a:b:c: too many colons in address',
    );
    expect(setupErr('pprof [::1]')).toBe(
      'plugin/pprof: Corefile:1 - Error during parsing: address [::1]: missing port in address',
    );
    expect(setupErr('pprof\npprof')).toBe(
      'plugin/pprof: Corefile:2 - Error during parsing: this plugin can only be used once per Server Block',
    );
    expect(setupErr('pprof :0 {\n block x\n}')).toBe(
      "plugin/pprof: Corefile:2 - Error during parsing: property 'block' invalid integer value 'x'",
    );
    expect(setupErr('pprof :0 {\n block 1 2\n}')).toBe(
      "plugin/pprof: Corefile:2 - Error during parsing: Wrong argument count or unexpected line ending after '2'",
    );
    expect(setupErr('pprof :0 {\n foo\n}')).toBe(
      "plugin/pprof: Corefile:2 - Error during parsing: unknown property 'foo'",
    );
  });
});

interface Got {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
}

/** GET, reading at most `limit` bytes of the body. */
function get(port: number, path: string, limit = Infinity): Promise<Got> {
  return new Promise((resolve, reject) => {
    const req = http.get({ host: '127.0.0.1', port, path }, (res) => {
      const chunks: Buffer[] = [];
      let n = 0;
      res.on('data', (c: Buffer) => {
        chunks.push(c);
        n += c.length;
        if (n >= limit) {
          req.destroy();
          resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks) });
        }
      });
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks) }));
    });
    req.on('error', reject);
  });
}

describe('pprof side server', () => {
  let srv: Spawned;
  let port: number;
  beforeAll(async () => {
    port = await freePort();
    srv = await spawnServer(`. {\n  pprof 127.0.0.1:${port} {\n    block\n  }\n  whoami\n}\n`);
    await srv.waitFor(/^clusterdns-/);
  });
  afterAll(async () => {
    await srv?.stop();
  });

  it('redirects to the index, which lists the profiles', async () => {
    const r = await get(port, '/debug/pprof');
    expect(r.status).toBe(302);
    expect(r.headers.location).toBe('/debug/pprof/');
    const idx = await get(port, '/debug/pprof/');
    expect(idx.status).toBe(200);
    expect(idx.headers['content-type']).toBe('text/html; charset=utf-8');
    for (const p of ['cmdline', 'heap', 'profile']) expect(idx.body.toString()).toContain(`<a href='${p}'>${p}</a>`);
  });

  it('cmdline: the arguments separated by NUL', async () => {
    const r = await get(port, '/debug/pprof/cmdline');
    expect(r.status).toBe(200);
    const args = r.body.toString().split('\x00');
    expect(args).toContain('-conf');
    expect(args).toContain(srv.corefilePath);
  });

  it('profile: a V8 CPU profile; 5 s or more is refused as CoreDNS refuses it', async () => {
    const r = await get(port, '/debug/pprof/profile?seconds=1');
    expect(r.status).toBe(200);
    expect(r.headers['content-disposition']).toBe('attachment; filename="profile.cpuprofile"');
    const prof = JSON.parse(r.body.toString()) as { nodes: unknown[]; startTime: number; endTime: number };
    expect(prof.nodes.length).toBeGreaterThan(0);
    expect(prof.endTime - prof.startTime).toBeGreaterThanOrEqual(900_000);
    for (const q of ['', '?seconds=5', '?seconds=x']) {
      const bad = await get(port, `/debug/pprof/profile${q}`);
      expect(bad.status).toBe(400);
      expect(bad.headers['x-go-pprof']).toBe('1');
      expect(bad.body.toString()).toBe("profile duration exceeds server's WriteTimeout\n");
    }
  });

  it('heap: a V8 heap snapshot; Go-only profiles are unknown', async () => {
    const r = await get(port, '/debug/pprof/heap?gc=1', 64);
    expect(r.status).toBe(200);
    expect(r.headers['content-disposition']).toBe('attachment; filename="heap.heapsnapshot"');
    expect(r.body.toString()).toMatch(/^\{"snapshot":\{/);
    for (const p of ['goroutine', 'trace', 'allocs', 'block']) {
      const u = await get(port, `/debug/pprof/${p}`);
      expect(u.status).toBe(404);
      expect(u.body.toString()).toBe('Unknown profile\n');
    }
    expect((await get(port, '/other')).status).toBe(404);
  });
});

describe('pprof listen errors', () => {
  it("a port in use fails the start with Go's wording", async () => {
    const blocker = net.createServer();
    await new Promise<void>((r) => blocker.listen(0, '127.0.0.1', r));
    const busy = (blocker.address() as net.AddressInfo).port;
    try {
      const s = await spawnServer(`. {\n  pprof 127.0.0.1:${busy}\n  whoami\n}\n`);
      const code = await s.exited;
      expect(code).not.toBe(0);
      expect(s.output.join('\n')).toContain(
        `[ERROR] plugin/pprof: Failed to start pprof handler: listen tcp 127.0.0.1:${busy}: bind: address already in use`,
      );
    } finally {
      blocker.close();
    }
  });
});
