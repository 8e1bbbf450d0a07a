/**
 * reload's log lines and hash against the real CoreDNS 1.15.0 (.bin/coredns): the same Corefiles
 * and the same edits give the same lines, byte for byte (SHA-512 included), and the same
 * `coredns_reload_failed_total`.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import * as http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { requireCoreDNS, startLines } from '../../test/helpers/lines.js';
import { freePort } from '../../test/helpers/net.js';
import { PLATFORM_LINE, VERSION_LINE } from '../../src/version.js';
import { hashCorefileText } from './hash.js';

const SHA = /^\[INFO\] plugin\/reload: Running configuration SHA512 = ([0-9a-f]{128})$/;

async function metric(port: number, name: string): Promise<string | undefined> {
  const text = await new Promise<string>((resolve, reject) => {
    http
      .get({ host: '127.0.0.1', port, path: '/metrics', agent: false }, (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (body += c));
        res.on('end', () => resolve(body));
      })
      .on('error', reject);
  });
  return text.split('\n').find((l) => l.startsWith(`${name} `));
}

/** Start `which` on `first`, apply the edits, and return the lines from the first SHA line on. */
async function reloadScenario(
  which: 'clusterdns' | 'coredns',
  dir: string,
  first: string,
  broken: string,
  fixed: string,
  metricsPort: number,
): Promise<{ lines: string[]; failed: (string | undefined)[] }> {
  const path = join(dir, 'Corefile');
  writeFileSync(path, first);
  const p = startLines(which, ['-conf', 'Corefile'], dir);
  try {
    await p.waitFor(SHA);
    // From the banner's first line on (CoreDNS prints a `maxprocs:` line before it).
    const start = await p.waitFor(/^\.:\d+$/);
    writeFileSync(path, broken);
    const fail = await p.waitFor(/Corefile changed but reload failed/, start);
    const failed = [await metric(metricsPort, 'coredns_reload_failed_total')];
    writeFileSync(path, fixed);
    await p.waitFor(/^\[INFO\] Reloading complete$/, fail);
    failed.push(await metric(metricsPort, 'coredns_reload_failed_total'));
    return { lines: p.lines.slice(start), failed };
  } finally {
    await p.stop();
  }
}

describe('reload lines against CoreDNS 1.15.0', () => {
  beforeAll(requireCoreDNS);
  it('prints the same SHA-512 as CoreDNS for the same Corefiles', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'reload-sha-'));
    const port = await freePort();
    writeFileSync(join(dir, 'extra.conf'), 'cache 30\n');
    const files = [
      `.:${port} {\n    reload\n    whoami\n}\n`,
      `# comment\n(snip) {\n  log . "{remote} <a&b> \\"q\\" é"\n}\n.:${port}, example.org:${port} {\n    reload 10s\n    import snip\n    import extra.conf\n    hosts {\n        127.0.0.1 a.example.org\n        fallthrough\n    }\n    forward . {$RELOAD_SHA_UP} 127.0.0.1:5353\n}\nexample.net:${port} {\n  whoami\n}\n`,
      `\ufeff.:${port} {\r\n  reload\r\n  errors\r\n  whoami\r\n}\r\n`,
      `.:${port} {\n  reload 5s 2s\n  hosts "/etc/hosts" example.org {\n     ttl 60\n  }\n  whoami\n}\n`,
    ];
    const env = { ...process.env, RELOAD_SHA_UP: '127.0.0.1:5300' };
    for (const text of files) {
      writeFileSync(join(dir, 'Corefile'), text);
      const p = startLines('coredns', ['-conf', join(dir, 'Corefile')], dir, env);
      let oracle: string;
      try {
        oracle = SHA.exec(p.lines[await p.waitFor(SHA)]!)![1]!;
      } finally {
        await p.stop();
      }
      expect(hashCorefileText(text, join(dir, 'Corefile'), env).hash).toBe(oracle);
    }
  }, 60_000);

  it('a broken and then a good reload print what CoreDNS prints, and count one failure', async () => {
    const port = await freePort();
    const mport = await freePort();
    const first = `.:${port} {\n    reload 2s 0\n    prometheus 127.0.0.1:${mport}\n    whoami\n}\n`;
    const broken = first.replace('whoami\n', 'whoami\n    x\n');
    const fixed = first.replace('whoami\n', 'whoami\n    log\n');
    const ours = await reloadScenario(
      'clusterdns',
      mkdtempSync(join(tmpdir(), 'reload-ours-')),
      first,
      broken,
      fixed,
      mport,
    );
    const theirs = await reloadScenario(
      'coredns',
      mkdtempSync(join(tmpdir(), 'reload-coredns-')),
      first,
      broken,
      fixed,
      mport,
    );
    const sha = (t: string) => hashCorefileText(t, 'Corefile').hash;
    const expected = (version: string, platform: string) => [
      `.:${port}`,
      `[INFO] plugin/reload: Running configuration SHA512 = ${sha(first)}`,
      version,
      platform,
      '[INFO] Reloading',
      "[ERROR] Restart failed: Corefile:5 - Error during parsing: Unknown directive 'x'",
      "[ERROR] plugin/reload: Corefile changed but reload failed: starting with listener file descriptors: Corefile:5 - Error during parsing: Unknown directive 'x'",
      '[INFO] Reloading',
      `[INFO] plugin/reload: Running configuration SHA512 = ${sha(fixed)}`,
      '[INFO] Reloading complete',
    ];
    expect(theirs.lines).toEqual(expected('CoreDNS-1.15.0', theirs.lines[3]!));
    expect(theirs.lines[3]).toMatch(/^linux\/amd64, go/);
    expect(ours.lines).toEqual(expected(VERSION_LINE, PLATFORM_LINE));
    expect(theirs.failed).toEqual(['coredns_reload_failed_total 1', 'coredns_reload_failed_total 1']);
    expect(ours.failed).toEqual(theirs.failed);
  }, 60_000);

  /**
   * Send SIGUSR1 until the process says `SIGUSR1: Reloading`. CoreDNS subscribes to the signal in
   * a goroutine started before its banner (caddy's trapSignalsPosix); a SIGUSR1 that arrives before
   * that goroutine ran is caught by Go's runtime and dropped, which a loaded machine shows. Sending
   * again is harmless: only a handled signal prints the line, and the wait per attempt is long.
   */
  const usr1 = async (p: ReturnType<typeof startLines>, from: number): Promise<void> => {
    for (let attempt = 1; ; attempt++) {
      p.proc.kill('SIGUSR1');
      try {
        await p.waitFor(/^\[INFO\] SIGUSR1: Reloading$/, from + 1, 5_000);
        return;
      } catch (e) {
        if (attempt === 5 || p.proc.exitCode !== null) throw e;
      }
    }
  };

  it('SIGUSR1 with a broken and then a good Corefile prints what CoreDNS prints', async () => {
    const port = await freePort();
    const first = `.:${port} {\n    whoami\n}\n`;
    const scenario = async (which: 'clusterdns' | 'coredns'): Promise<string[]> => {
      const dir = mkdtempSync(join(tmpdir(), `usr1-${which}-`));
      const path = join(dir, 'Corefile');
      writeFileSync(path, first);
      const p = startLines(which, ['-conf', 'Corefile'], dir);
      try {
        const start = await p.waitFor(/^\.:\d+$/);
        await p.waitFor(/, /); // the platform line: start-up is complete
        writeFileSync(path, first.replace('whoami\n', 'whoami\n    x\n'));
        await usr1(p, start);
        const fail = await p.waitFor(/^\[ERROR\] SIGUSR1: /, start);
        writeFileSync(path, first.replace('whoami\n', 'whoami\n    log\n'));
        await usr1(p, fail);
        const done = await p.waitFor(/^\[INFO\] Reloading complete$/, fail);
        return p.lines.slice(start + 3, done + 1);
      } finally {
        await p.stop();
      }
    };
    const expected = [
      '[INFO] SIGUSR1: Reloading',
      '[INFO] Reloading',
      "[ERROR] Restart failed: Corefile:3 - Error during parsing: Unknown directive 'x'",
      "[ERROR] SIGUSR1: starting with listener file descriptors: Corefile:3 - Error during parsing: Unknown directive 'x'",
      '[INFO] SIGUSR1: Reloading',
      '[INFO] Reloading',
      '[INFO] Reloading complete',
    ];
    expect(await scenario('coredns')).toEqual(expected);
    expect(await scenario('clusterdns')).toEqual(expected);
  }, 60_000);
});
