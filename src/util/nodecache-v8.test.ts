/**
 * The launcher's V8 options for `clusterdns node-cache` (src/util/nodecache-v8.ts): node-cache runs
 * without Maglev, the server with V8's defaults, and an operator's own Maglev option wins.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BIN } from '../../test/helpers/spawn.js';
import { nodeCacheV8Flags } from './nodecache-v8.js';

describe('nodeCacheV8Flags', () => {
  it('adds --no-maglev for node-cache only', () => {
    expect(nodeCacheV8Flags([], ['node-cache', '-localip', '169.254.20.10'])).toEqual(['--no-maglev']);
    expect(nodeCacheV8Flags([], ['-conf', '/etc/coredns/Corefile'])).toEqual([]);
    expect(nodeCacheV8Flags([], [])).toEqual([]);
  });

  it("keeps node's own Maglev option", () => {
    expect(nodeCacheV8Flags(['--maglev'], ['node-cache'])).toEqual([]);
    expect(nodeCacheV8Flags(['--no-maglev'], ['node-cache'])).toEqual([]);
  });
});

describe('bin/clusterdns node-cache', () => {
  /** The execArgv of every node process the launcher starts (a preload prints them). */
  function execArgvs(args: string[]): string[][] {
    const probe = join(mkdtempSync(join(tmpdir(), 'clusterdns-v8-')), 'probe.cjs');
    writeFileSync(probe, "process.stderr.write('ARGV ' + JSON.stringify(process.execArgv) + '\\n');\n");
    const r = spawnSync(process.execPath, [BIN, ...args], {
      encoding: 'utf8',
      timeout: 30_000,
      env: { ...process.env, NODE_OPTIONS: `--require=${probe}` },
    });
    expect(r.status, r.stderr).toBe(0);
    return r.stderr
      .split('\n')
      .filter((l) => l.startsWith('ARGV '))
      .map((l) => JSON.parse(l.slice(5)) as string[]);
  }

  it('runs node-cache without Maglev and the server with it', () => {
    const nodeCache = execArgvs(['node-cache', '-h']);
    expect(nodeCache.at(-1)).toContain('--no-maglev');
    const server = execArgvs(['-version']);
    expect(server.flat()).not.toContain('--no-maglev');
  });
});
