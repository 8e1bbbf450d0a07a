import { mkdirSync, mkdtempSync, renameSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { reload } from './index.js';
import { hashConfigFile } from './hash.js';
import { ReloadLoop } from './loop.js';
import { logger } from '../../src/log.js';
import { sampleValue } from '../../test/helpers/http.js';
import { captureLogs } from '../../test/helpers/logs.js';
import { dispenserFor, FakeCore, TestInstance } from '../../test/helpers/setup.js';
import { waitFor } from '../../test/helpers/wait.js';
import { SharedResources } from '../../src/server/shared.js';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

const COREFILE = '.:1053 {\n    whoami\n    reload 2s 0\n}\n';

function tempDir(): string {
  return mkdtempSync(join(tmpdir(), 'reload-test-'));
}

const failed = async (): Promise<number> =>
  (await sampleValue('coredns_reload_failed_total', 'coredns_reload_failed_total')) ?? 0;

async function startedLoop(path: string, core: FakeCore): Promise<{ loop: ReloadLoop; logs: string[] }> {
  const logs = captureLogs(cleanups);
  const loop = new ReloadLoop({ intervalMs: 2000, jitterMs: 0 });
  cleanups.push(() => loop.stop());
  await loop.start({ services: core, log: logger('reload'), corefilePath: path });
  return { loop, logs: logs.lines };
}

describe('configuration hash', () => {
  it('ignores comment and whitespace edits within a line, sees inserted lines, imports and environment', async () => {
    const dir = tempDir();
    const path = join(dir, 'Corefile');
    const imported = join(dir, 'extra.conf');
    writeFileSync(imported, 'example.org:1053 {\n  whoami\n}\n');
    writeFileSync(path, `${COREFILE}import extra.conf\n`);
    const base = await hashConfigFile(path);
    expect(base.hash).toMatch(/^[0-9a-f]{128}$/);
    expect(base.files).toEqual([path, imported]);

    writeFileSync(path, `.:1053 {   # comment\n    whoami     \n    reload 2s 0\n}\nimport extra.conf # more\n`);
    expect((await hashConfigFile(path)).hash).toBe(base.hash);

    writeFileSync(path, `\n${COREFILE}import extra.conf\n`);
    expect((await hashConfigFile(path)).hash).not.toBe(base.hash);

    writeFileSync(path, `${COREFILE}import extra.conf\n`);
    writeFileSync(imported, 'example.net:1053 {\n  whoami\n}\n');
    expect((await hashConfigFile(path)).hash).not.toBe(base.hash);

    writeFileSync(imported, 'example.org:1053 {\n  whoami\n}\n');
    writeFileSync(path, '.:{$RELOAD_TEST_PORT} {\n    whoami\n}\n');
    const a = await hashConfigFile(path, { RELOAD_TEST_PORT: '1053' });
    const b = await hashConfigFile(path, { RELOAD_TEST_PORT: '1054' });
    expect(a.hash).not.toBe(b.hash);
  });

  it('reports unreadable and unparsable files', async () => {
    const dir = tempDir();
    await expect(hashConfigFile(join(dir, 'missing'))).rejects.toThrow('ENOENT');
    writeFileSync(join(dir, 'Corefile'), '.:1053 {\n  import nosuch.conf\n}\n');
    await expect(hashConfigFile(join(dir, 'Corefile'))).rejects.toThrow(
      /Corefile:2 - Error during parsing: File to import not found: nosuch.conf/,
    );
  });

  it('hashes a file with an unknown directive (as CoreDNS: the reload is attempted and fails there)', async () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'Corefile'), '.:1053 {\n  nosuchplugin\n}\n');
    expect((await hashConfigFile(join(dir, 'Corefile'))).hash).toMatch(/^[0-9a-f]{128}$/);
  });
});

describe('reload loop', () => {
  it('logs the running hash, reloads once on a change and publishes the new hash', async () => {
    const dir = tempDir();
    const path = join(dir, 'Corefile');
    writeFileSync(path, COREFILE);
    const core = new FakeCore();
    const { loop, logs } = await startedLoop(path, core);
    const first = (await hashConfigFile(path)).hash;
    expect(logs).toEqual([`[INFO] plugin/reload: Running configuration SHA512 = ${first}`]);
    expect(loop.period).toBe(2000);

    await loop.check();
    expect(core.reloadReasons).toEqual([]);

    writeFileSync(path, COREFILE.replace('whoami', 'whoami\n    log'));
    const second = (await hashConfigFile(path)).hash;
    await loop.check();
    expect(core.reloadReasons).toEqual(['reload plugin']);
    expect(
      await sampleValue('coredns_reload_version_info', 'coredns_reload_version_info', {
        hash: 'sha512',
        value: second,
      }),
    ).toBe(1);
    expect(
      await sampleValue('coredns_reload_version_info', 'coredns_reload_version_info', { hash: 'sha512', value: first }),
    ).toBeUndefined();
  });

  it('detects a ConfigMap-style ..data symlink swap', async () => {
    const dir = tempDir();
    mkdirSync(join(dir, '..2026_11_22_09_00_00.1'));
    writeFileSync(join(dir, '..2026_11_22_09_00_00.1', 'Corefile'), COREFILE);
    symlinkSync('..2026_11_22_09_00_00.1', join(dir, '..data'));
    symlinkSync('..data/Corefile', join(dir, 'Corefile'));
    const core = new FakeCore();
    const { loop } = await startedLoop(join(dir, 'Corefile'), core);

    // kubelet writes a new timestamped directory and atomically renames a new ..data link over the old.
    mkdirSync(join(dir, '..2026_11_22_09_01_00.2'));
    writeFileSync(join(dir, '..2026_11_22_09_01_00.2', 'Corefile'), COREFILE.replace('whoami', 'whoami\n    errors'));
    symlinkSync('..2026_11_22_09_01_00.2', join(dir, '..data_tmp'));
    renameSync(join(dir, '..data_tmp'), join(dir, '..data'));
    await loop.check();
    expect(core.reloadReasons).toEqual(['reload plugin']);
  });

  it('counts a failed reload exactly once, logs it, and does not retry the same broken content', async () => {
    const dir = tempDir();
    const path = join(dir, 'Corefile');
    writeFileSync(path, COREFILE);
    const core = new FakeCore();
    const { loop, logs } = await startedLoop(path, core);
    const before = await failed();

    writeFileSync(path, `${COREFILE}\n`.replace('whoami', 'whoami\n'));
    core.reloadResults = [false];
    await loop.check();
    expect(await failed()).toBe(before + 1);
    expect(logs.at(-1)).toBe(
      '[ERROR] plugin/reload: Corefile changed but reload failed: starting with listener file descriptors: plugin/whoami: Corefile:3 - Error during parsing: broken',
    );
    await loop.check();
    expect(core.reloadReasons).toHaveLength(1);
    expect(await failed()).toBe(before + 1);

    // A SIGUSR1 reload failing is counted too (once), through the same core notification.
    core.emitOutcome(false, new Error('SIGUSR1: broken'));
    expect(await failed()).toBe(before + 2);
    core.emitOutcome(true, null);
    expect(await failed()).toBe(before + 2);
  });

  it('counts the failure itself when the core does not report the outcome', async () => {
    const dir = tempDir();
    const path = join(dir, 'Corefile');
    writeFileSync(path, COREFILE);
    const core = new FakeCore();
    core.notifyOutcomes = false;
    const { loop, logs } = await startedLoop(path, core);
    const before = await failed();
    writeFileSync(path, `\n${COREFILE}`);
    core.reloadResults = [false];
    await loop.check();
    expect(await failed()).toBe(before + 1);
    expect(logs.at(-1)).toMatch(/^\[ERROR\] plugin\/reload: Corefile changed but reload failed: /);
  });

  it('warns about an unparsable file and does nothing else', async () => {
    const dir = tempDir();
    const path = join(dir, 'Corefile');
    writeFileSync(path, COREFILE);
    const core = new FakeCore();
    const { loop, logs } = await startedLoop(path, core);
    const hash = loop.currentHash;
    writeFileSync(path, '.:1053 {\n    whoami\n    import nosuch.conf\n}\n');
    await loop.check();
    expect(logs.at(-1)).toBe(
      `[WARNING] plugin/reload: Corefile parse failed: ${path}:3 - Error during parsing: File to import not found: nosuch.conf`,
    );
    expect(core.reloadReasons).toEqual([]);
    expect(loop.currentHash).toBe(hash);
  });

  it('does not reload once final shutdown has started', async () => {
    const dir = tempDir();
    const path = join(dir, 'Corefile');
    writeFileSync(path, COREFILE);
    const core = new FakeCore();
    const { loop, logs } = await startedLoop(path, core);
    const before = await failed();
    core.startShutdown();
    writeFileSync(path, `\n${COREFILE}`);
    await loop.check();
    expect(core.reloadReasons).toEqual([]);
    expect(await failed()).toBe(before);
    expect(logs).toHaveLength(1);
  });

  it('does not check a configuration that cannot be re-read (stdin)', async () => {
    const core = new FakeCore();
    const { loop, logs } = await startedLoop('stdin', core);
    await loop.check();
    expect(logs).toEqual([]);
    expect(core.reloadReasons).toEqual([]);
  });

  it('checks every period on its own timer and stops when its instance shuts down', async () => {
    const dir = tempDir();
    const path = join(dir, 'Corefile');
    writeFileSync(path, COREFILE);
    const core = new FakeCore();
    const shared = new SharedResources();
    const inst = new TestInstance({ core, shared, corefilePath: path });
    // Two blocks: the last values win (2s, no jitter); a second `reload` line in a block is not read.
    await reload.setup(dispenserFor('reload 1m 10s', 'reload'), inst.context('reload'));
    await reload.setup(dispenserFor('reload 2s 0\nreload 5m', 'reload'), inst.context('reload'));
    const logs = captureLogs(cleanups);
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    cleanups.push(() => void vi.useRealTimers());
    await inst.run('serving');
    expect(logs.lines.filter((l) => l.includes('Running configuration SHA512'))).toHaveLength(1);

    writeFileSync(path, `\n${COREFILE}`);
    // The new instance's serving hooks start its own loop; the old instance's shutdown stops this one.
    core.onReload = () => inst.run('shutdown');
    await vi.advanceTimersByTimeAsync(1999);
    await settle();
    expect(core.reloadReasons).toEqual([]);
    await vi.advanceTimersByTimeAsync(1);
    await waitFor('the reload the changed file asks for', () => core.reloadReasons.length === 1);
    writeFileSync(path, `\n\n${COREFILE}`);
    await vi.advanceTimersByTimeAsync(10_000);
    await settle();
    expect(core.reloadReasons).toEqual(['reload plugin']);
  });
});

/** Let pending file I/O and promise chains run (real I/O is not on the fake clock). */
async function settle(): Promise<void> {
  for (let i = 0; i < 50; i++) await new Promise((r) => setImmediate(r));
}
