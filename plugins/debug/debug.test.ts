/**
 * debug: setup errors as CoreDNS words them, `[DEBUG]` lines only while a block has `debug` (also
 * across reloads), and the panic difference: without debug an exception in a plugin is answered
 * SERVFAIL and logged; with it the exception is not caught and ends the process.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { encodeQuery, rcode, udpQuery } from '../../test/helpers/dns.js';
import { startServer } from '../../test/helpers/server.js';
import { configError, dispenserFor, setupContext as fakeSetupContext } from '../../test/helpers/setup.js';
import type { Handler } from '../../src/plugin.js';
import { makeDispatch } from '../../src/server/dispatch.js';
import type { Exchange } from '../../src/server/listener.js';
import { RouteTable } from '../../src/server/routes.js';
import { debug } from './index.js';
import { captureLogs } from '../../test/helpers/logs.js';

function setupErr(text: string): string {
  return configError(() => debug.setup(dispenserFor(text, 'debug'), fakeSetupContext()), text).describe();
}

describe('debug setup', () => {
  it('takes no arguments and no block', () => {
    expect(setupErr('debug x')).toBe(
      "plugin/debug: Corefile:1 - Error during parsing: Wrong argument count or unexpected line ending after 'x'",
    );
    expect(setupErr('debug {\n}')).toBe(
      "plugin/debug: Corefile:1 - Error during parsing: Unexpected token '{', expecting argument",
    );
    expect(debug.setup(dispenserFor('debug\ndebug', 'debug'), fakeSetupContext())).toBeNull();
  });
});

describe('debug log lines', () => {
  it('hosts reports its parse at debug level, only while debug is on', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'debug-test-'));
    const hosts = join(dir, 'hosts');
    writeFileSync(hosts, '192.0.2.1 a.example\n192.0.2.2 b.example c.example\n');
    const block = (extra: string) => `. {\n${extra}  hosts ${hosts}\n}\n`;
    const s = await startServer(block('  debug\n'));
    try {
      expect(rcode(await udpQuery(s.port, 'a.example', 'A'))).toBe(0);
      // 3 names and 3 reverse entries, as CoreDNS counts them.
      expect(s.logs).toContain('[DEBUG] plugin/hosts: Parsed hosts file into 6 entries');
      const before = s.logs.length;
      expect(await s.reload(block(''))).toBe(true);
      writeFileSync(hosts, '192.0.2.9 d.example\n');
      expect(await s.reload(block(' '))).toBe(true);
      expect(rcode(await udpQuery(s.port, 'd.example', 'A'))).toBe(0);
      expect(s.logs.slice(before).filter((l) => l.startsWith('[DEBUG]'))).toEqual([]);
    } finally {
      await s.stop();
    }
  });
});

/** An exchange recording its replies. */
function exchange(): Exchange & { replies: Buffer[] } {
  return {
    proto: 'udp',
    family: 1,
    remoteAddress: '127.0.0.1',
    remotePort: 5353,
    localAddress: '',
    localPort: 53,
    server: 'dns://:53',
    replies: [],
    respond(reply: Buffer): void {
      this.replies.push(reply);
    },
    done(): void {},
  };
}

const throwing: Handler = {
  name: 'test',
  serve: () => {
    throw new Error('plugin bug');
  },
};

describe('panic recovery', () => {
  it('recovered with SERVFAIL without debug; not caught with debug', () => {
    const table = new RouteTable();
    table.add({ zone: '.', chain: throwing });
    const logs = captureLogs();
    const logged = logs.lines;
    try {
      const ex = exchange();
      makeDispatch(table, { maxUdpSize: 1232 })(encodeQuery('x.example', 'A'), ex);
      expect(ex.replies).toHaveLength(1);
      expect(ex.replies[0]![3]! & 0xf).toBe(2);
      expect(logged.some((l) => l.includes('Recovered from panic in server: "dns://:53"'))).toBe(true);
      const ex2 = exchange();
      expect(() =>
        makeDispatch(table, { maxUdpSize: 1232, recover: false })(encodeQuery('x.example', 'A'), ex2),
      ).toThrow('plugin bug');
      expect(ex2.replies).toHaveLength(0);
    } finally {
      logs.restore();
    }
  });

  it('an asynchronous failure with debug ends the process with its stack trace', () => {
    const script = `
      import { makeDispatch } from './dist/src/server/dispatch.js';
      import { RouteTable } from './dist/src/server/routes.js';
      const t = new RouteTable();
      t.add({ zone: '.', chain: { name: 't', serve: () => Promise.reject(new Error('async plugin bug')) } });
      const q = Buffer.from('000101000001000000000000017800000100 01'.replace(/ /g, ''), 'hex');
      makeDispatch(t, { maxUdpSize: 1232, recover: false })(q, { proto: 'udp', family: 1, remoteAddress: '127.0.0.1', remotePort: 1, localAddress: '', localPort: 53, server: 'dns://:53', respond() { console.log('answered'); }, done() {} });
      setTimeout(() => console.log('still running'), 2000);
    `;
    const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], {
      cwd: join(import.meta.dirname, '../..'),
      encoding: 'utf8',
      timeout: 20_000,
    });
    expect(r.status).not.toBe(0);
    expect(r.stderr).toContain('async plugin bug');
    expect(r.stdout).not.toContain('answered');
    expect(r.stdout).not.toContain('still running');
  });
});
