/**
 * on: Caddy's command splitting, its setup errors, and hooks that really run commands on startup
 * and final shutdown — in the foreground (waited for), in the background (`&`), failing — with
 * Caddy's log lines.
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { on } from './index.js';
import { shlexSplit } from './shlex.js';
import { captureLogs, type LogCapture } from '../../test/helpers/logs.js';
import { configError, dispenserFor, setupContext, type TestContext } from '../../test/helpers/setup.js';
import { waitFor } from '../../test/helpers/wait.js';

describe('on: command splitting (go-shlex)', () => {
  it.each([
    ['cmd arg1 arg2', ['cmd', 'arg1', 'arg2']],
    ['cmd  "a b"  \'c d\'', ['cmd', 'a b', 'c d']],
    ['cmd a\\ b "x\\"y"', ['cmd', 'a b', 'x"y']],
    ['cmd a#b #rest of line', ['cmd', 'a#b']],
    ['cmd &', ['cmd', '&']],
    ['', []],
  ])('%j', (line, words) => {
    expect(shlexSplit(line)).toEqual(words);
  });

  it.each([
    ['cmd "open', 'EOF found when expecting closing quote.'],
    ["cmd 'open", 'EOF found when expecting closing quote.'],
    ['cmd a\\', 'EOF found after escape character'],
    ['`cmd`', 'Unknown rune: 96'],
    ['cmd a`b', 'Uknown rune: 96'],
  ])('%j', (line, message) => {
    expect(() => shlexSplit(line)).toThrow(message);
  });
});

describe('on: setup errors, as Caddy words them (no plugin/on prefix)', () => {
  it.each([
    ['on', "Corefile:1 - Error during parsing: Wrong argument count or unexpected line ending after 'on'"],
    ['on xyz cmd arg', "Corefile:1 - Error during parsing: Wrong event name or event not supported: 'xyz'"],
    ['on startup', "Corefile:1 - Error during parsing: no command contained in ''"],
    [
      "on startup echo it's",
      'Corefile:1 - Error during parsing: error parsing command: EOF found when expecting closing quote.',
    ],
  ])('%j', (text, message) => {
    expect(configError(() => on.setup(dispenserFor(text, 'on'), setupContext()), text).describe()).toBe(message);
  });

  it('accepts every event in any case, and certrenew', () => {
    expect(
      on.setup(dispenserFor('on STARTUP cmd\non shutdown cmd arg &\non certrenew cmd', 'on'), setupContext()),
    ).toBe(null);
  });
});

describe('on: hooks', () => {
  let dir: string;
  let logs: LogCapture;
  let ctx: TestContext | null = null;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'clusterdns-on-'));
    logs = captureLogs();
  });
  afterEach(async () => {
    logs.restore();
    await ctx?.stop();
    ctx = null;
    rmSync(dir, { recursive: true, force: true });
  });

  async function start(text: string): Promise<TestContext> {
    ctx = setupContext({ plugin: 'on' });
    void on.setup(dispenserFor(text, 'on'), ctx);
    ctx.seal();
    await ctx.start();
    return ctx;
  }

  it('startup runs a foreground command before the hook returns, and logs it as Caddy does', async () => {
    const f = join(dir, 'started');
    await start(`on startup touch ${f}`);
    expect(existsSync(f)).toBe(true);
    expect(
      logs.lines.some((l) => new RegExp(`^\\[INFO\\] Blocking Command "touch ${f}" with ID [0-9a-f-]{36}$`).test(l)),
    ).toBe(true);
  });

  it('a trailing & runs it in the background, without the &', async () => {
    const f = join(dir, 'bg');
    await start(`on startup touch ${f} &`);
    await waitFor('the background command ran', () => existsSync(f));
    expect(logs.lines.some((l) => l.startsWith(`[INFO] Nonblocking Command "touch ${f}" with ID `))).toBe(true);
  });

  it('shutdown runs on final shutdown only', async () => {
    const f = join(dir, 'stopped');
    const c = await start(`on shutdown touch ${f}`);
    expect(existsSync(f)).toBe(false);
    await c.instance.run('finalShutdown');
    expect(existsSync(f)).toBe(true);
  });

  it("failures are logged with the hook ID and Go's error text; the server goes on", async () => {
    await start('on startup false\non startup nosuch-command-for-clusterdns-tests x');
    const ids = logs.lines.map((l) => / with ID ([0-9a-f-]{36})$/.exec(l)?.[1]).filter((x) => x !== undefined);
    expect(ids).toHaveLength(2);
    expect(logs.lines).toContain(`error on 'on-${ids[0]}' hook: exit status 1`);
    expect(logs.lines).toContain(
      `error on 'on-${ids[1]}' hook: exec: "nosuch-command-for-clusterdns-tests": executable file not found in $PATH`,
    );
    expect(logs.lines).toContain('[INFO] Blocking Command "false " with ID ' + ids[0]);
  });
});
