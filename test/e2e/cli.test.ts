/**
 * The command as operators run it: `bin/clusterdns -conf F -dns.port P`, answered by dig and kdig,
 * flags, exit codes, bad Corefiles, signals. Requires `npm run build` (done by `npm test`).
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import * as net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { rcode, udpQuery } from '../helpers/dns.js';
import { freePort } from '../helpers/net.js';
import { hasTool, runCommand, runTool, spawnServer } from '../helpers/spawn.js';

const WHOAMI = 'example.org {\n  whoami\n  log\n  errors\n}\n';

describe('bin/clusterdns', () => {
  it('prints the version in two lines and the plugin list', () => {
    const v = runCommand(['-version']);
    expect(v.status).toBe(0);
    const lines = v.stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^clusterdns-\d+\.\d+\.\d+/);
    expect(lines[1]).toMatch(/^linux\/\w+, v\d+/);
    const p = runCommand(['--plugins']);
    expect(p.status).toBe(0);
    const names = p.stdout.trim().split('\n');
    expect(names).toEqual([...names].sort());
    for (const n of ['kubernetes', 'forward', 'cache', 'whoami', 'health', 'ready', 'prometheus', 'reload']) expect(names).toContain(n);
  });

  it('rejects unknown flags with status 2 and extra arguments with status 1', () => {
    expect(runCommand(['-nope']).status).toBe(2);
    const extra = runCommand(['-quiet', 'a', 'b']);
    expect(extra.status).toBe(1);
    expect(extra.stdout + extra.stderr).toContain('extra command line arguments: [a b]');
  });

  it.skipIf(!hasTool('dig') || !hasTool('kdig'))('serves dig over UDP and kdig over TCP (several queries, one connection)', async () => {
    const s = await spawnServer(WHOAMI);
    try {
      await s.waitFor(/^clusterdns-/);
      expect(s.output).toContain(`example.org.:${s.port}`);
      const d = runTool('dig', ['@127.0.0.1', '-p', String(s.port), 'www.example.org', 'A', '+noall', '+comments', '+additional']);
      expect(d.stdout).toContain('status: NOERROR');
      expect(d.stdout).toMatch(/www\.example\.org\.\s+0\s+IN\s+A\s+127\.0\.0\.1/);
      const k = runTool('kdig', ['@127.0.0.1', '-p', String(s.port), '+tcp', '+keepopen', 'a.example.org', 'b.example.org', 'c.example.org']);
      expect(k.status).toBe(0);
      expect(k.stdout.match(/status: NOERROR/g)?.length).toBe(3);
      expect(k.stdout).toMatch(/_tcp\.a\.example\.org\.\s+0\s+IN\s+SRV/);
      // The log plugin's default line shape.
      await s.waitFor(/^\[INFO\] 127\.0\.0\.1:\d+ - \d+ "A IN www\.example\.org\. udp \d+ (true|false) 1232" NOERROR qr,aa,rd \d+ \d+(\.\d+)?s$/);
      const refused = runTool('dig', ['@127.0.0.1', '-p', String(s.port), 'www.google.com', '+noall', '+comments']);
      expect(refused.stdout).toContain('status: REFUSED');
    } finally {
      expect(await s.stop('SIGTERM')).toBe(0);
    }
    expect(s.output).toContain('[INFO] SIGTERM: Shutting down servers then terminating');
  });

  it('exits 1 naming file:line for a broken Corefile, without serving', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'clusterdns-bad-'));
    const file = join(dir, 'Corefile');
    writeFileSync(file, '.:53 {\n  whoami\n  frobnicate\n}\n');
    const r = runCommand(['-conf', file, '-dns.port', String(await freePort())]);
    expect(r.status).toBe(1);
    expect(r.stdout + r.stderr).toMatch(/\[FATAL\] .*Corefile:3 - Error during parsing: Unknown directive 'frobnicate'/);
  });

  it('-validate prints every error and exits non-zero; exits 0 for a good file', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'clusterdns-val-'));
    const bad = join(dir, 'bad');
    writeFileSync(bad, 'a.org {\n  errors bogus\n}\nb.org {\n  log\n  errors x y\n}\n');
    const r = runCommand(['-validate', '-conf', bad]);
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(/bad:2 - Error during parsing: invalid log file: bogus/);
    expect(r.stderr).toMatch(/bad:6 - Error during parsing: Wrong argument count/);
    const good = join(dir, 'good');
    writeFileSync(good, WHOAMI);
    const ok = runCommand(['-validate', '-conf', good]);
    expect(ok.status).toBe(0);
  });

  it('exits 1 with a one-line reason when the port is in use', async () => {
    const port = await freePort();
    const blocker = net.createServer().listen(port, '::');
    await new Promise((r) => blocker.once('listening', r));
    try {
      const r = runCommand(['-conf', 'stdin', '-dns.port', String(port)], { input: WHOAMI });
      expect(r.status).toBe(1);
      expect((r.stdout + r.stderr).trim().split('\n').filter((l) => l.startsWith('[FATAL]'))).toHaveLength(1);
      expect(r.stdout + r.stderr).toMatch(/EADDRINUSE|address already in use/);
    } finally {
      blocker.close();
    }
  });

  it('falls back to the built-in default (whoami on -dns.port) without a Corefile, and writes the pidfile', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'clusterdns-def-'));
    const port = await freePort();
    const { spawn } = await import('node:child_process');
    const { BIN } = await import('../helpers/spawn.js');
    const pidfile = join(dir, 'pid');
    const proc = spawn(process.execPath, [BIN, '-dns.port', String(port), '-pidfile', pidfile], { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
    const out: string[] = [];
    const ready = new Promise<void>((resolve, reject) => {
      proc.stdout.on('data', (c: Buffer) => {
        out.push(c.toString());
        if (out.join('').includes(`.:${port}`)) resolve();
      });
      proc.on('exit', () => reject(new Error(out.join(''))));
    });
    await ready;
    try {
      const r = await udpQuery(port, 'anything.test', 'A');
      expect(rcode(r)).toBe(0);
      expect(r.additionals.some((a) => a.type === 'A')).toBe(true);
      expect(Number(readFileSync(pidfile, 'utf8').trim())).toBe(proc.pid);
    } finally {
      proc.kill('SIGINT');
      await new Promise((r) => proc.on('exit', r));
    }
  });
});
