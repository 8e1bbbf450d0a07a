/**
 * The launcher bounds the V8 heap by the cgroup memory limit: the derivation from fake cgroup v1
 * and v2 trees, and the real bin/clusterdns re-running node so that the server process has the
 * derived heap_size_limit (and leaving an operator's own --max-old-space-size alone).
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cgroupMemoryLimit, heapChosen, heapMiB, heapPlan } from '../util/heap.js';
import { fakeCgroupRoot } from '../../test/helpers/cgroup.js';
import { BIN } from '../../test/helpers/spawn.js';

const fakeRoot = (files: Record<string, string>): string => fakeCgroupRoot(files, '\n');

const MiB = 1048576;

describe('cgroup memory limit', () => {
  it('reads cgroup v2 memory.max at the namespace root; "max" is no limit', () => {
    expect(cgroupMemoryLimit(fakeRoot({ 'memory.max': String(256 * MiB) }), null)).toBe(256 * MiB);
    expect(cgroupMemoryLimit(fakeRoot({ 'memory.max': 'max' }), null)).toBeNull();
  });

  it('walks a v2 cgroup path up to the root and takes the smallest limit', () => {
    const root = fakeRoot({
      'kubepods/pod1/memory.max': String(512 * MiB),
      'kubepods/pod1/ctr/memory.max': 'max',
      'kubepods/memory.max': String(300 * MiB),
    });
    expect(cgroupMemoryLimit(root, '0::/kubepods/pod1/ctr\n')).toBe(300 * MiB);
  });

  it('reads cgroup v1 memory.limit_in_bytes; the huge "unlimited" value is no limit', () => {
    expect(cgroupMemoryLimit(fakeRoot({ 'memory/memory.limit_in_bytes': String(128 * MiB) }), null)).toBe(128 * MiB);
    expect(cgroupMemoryLimit(fakeRoot({ 'memory/memory.limit_in_bytes': '9223372036854771712' }), null)).toBeNull();
    const root = fakeRoot({
      'memory/docker/abc/memory.limit_in_bytes': String(200 * MiB),
      'memory/memory.limit_in_bytes': '9223372036854771712',
    });
    expect(cgroupMemoryLimit(root, '12:memory:/docker/abc\n0::/\n')).toBe(200 * MiB);
  });

  it('no cgroup files at all: no limit', () => {
    expect(cgroupMemoryLimit(fakeRoot({}), null)).toBeNull();
  });
});

describe('heap size', () => {
  it('is 70 % of the limit (the chart: 179 MiB for 256Mi), split among workers, never below 32 MiB', () => {
    expect(heapMiB(256 * MiB)).toBe(179);
    expect(heapMiB(20 * MiB)).toBe(32);
  });

  it('without a limit: 70 % of physical memory up to 1 GiB', () => {
    expect(heapMiB(null, 64 * 1024 * MiB)).toBe(1024);
    expect(heapMiB(null, 512 * MiB)).toBe(358);
  });

  it('the operator wins: NODE_OPTIONS or node arguments with --max-old-space-size', () => {
    expect(heapChosen({ NODE_OPTIONS: '--max-old-space-size=100' }, [])).toBe(true);
    expect(heapChosen({ NODE_OPTIONS: '--enable-source-maps --max_old_space_size 64' }, [])).toBe(true);
    expect(heapChosen({}, ['--max-old-space-size=64'])).toBe(true);
    expect(heapChosen({ NODE_OPTIONS: '--max-semi-space-size=2' }, ['--max-semi-space-size=2'])).toBe(false);
    expect(heapPlan({ NODE_OPTIONS: '--max-old-space-size=100' }, [], []).flag).toBeNull();
  });

  it('plans the flag from CLUSTERDNS_CGROUP_ROOT and -workers', () => {
    // One CPU of quota: one query thread by default, the whole bound for it.
    const root = fakeRoot({ 'memory.max': String(256 * MiB), 'cpu.max': '100000 100000' });
    expect(heapPlan({ CLUSTERDNS_CGROUP_ROOT: root }, [], []).flag).toBe('--max-old-space-size=179');
    // Query threads share the main thread's index and are bounded apart (96 MiB each): the main
    // thread gets 70 % of what they leave, 0.7 × (256 − 96) = 112.
    expect(heapPlan({ CLUSTERDNS_CGROUP_ROOT: root }, [], ['-workers', '2']).flag).toBe('--max-old-space-size=112');
    expect(heapPlan({ CLUSTERDNS_CGROUP_ROOT: root }, [], ['-workers=2']).flag).toBe('--max-old-space-size=112');
  });
});

describe('bin/clusterdns applies the heap bound', () => {
  /** heap_size_limit of every node process started (a preload prints it with the node arguments). */
  function launch(env: NodeJS.ProcessEnv): { execArgv: string[]; limit: number; arenas: string | null }[] {
    const dir = mkdtempSync(join(tmpdir(), 'clusterdns-heap-'));
    const probe = join(dir, 'probe.cjs');
    writeFileSync(
      probe,
      "process.stderr.write('HEAP ' + JSON.stringify({ execArgv: process.execArgv, limit: require('v8').getHeapStatistics().heap_size_limit, arenas: process.env.MALLOC_ARENA_MAX ?? null }) + '\\n');\n",
    );
    const r = spawnSync(process.execPath, ['--max-semi-space-size=2', BIN, '-version'], {
      encoding: 'utf8',
      timeout: 30_000,
      env: {
        ...withoutArenaCap(process.env),
        ...env,
        NODE_OPTIONS: `${env.NODE_OPTIONS ?? ''} --require=${probe}`.trim(),
      },
    });
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(/CoreDNS-|clusterdns/i);
    return r.stderr
      .split('\n')
      .filter((l) => l.startsWith('HEAP '))
      .map((l) => JSON.parse(l.slice(5)) as { execArgv: string[]; limit: number; arenas: string | null });
  }

  function withoutArenaCap(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
    const { MALLOC_ARENA_MAX: _, ...rest } = env;
    return rest;
  }

  function limitFor(flags: string[]): number {
    const r = spawnSync(
      process.execPath,
      [...flags, '-e', "process.stdout.write(String(require('v8').getHeapStatistics().heap_size_limit))"],
      { encoding: 'utf8' },
    );
    return Number(r.stdout);
  }

  it('the server process gets --max-old-space-size from a 256Mi cgroup limit', () => {
    // One CPU of quota: one query thread, the whole bound for it.
    const root = fakeRoot({ 'memory.max': String(256 * MiB), 'cpu.max': '100000 100000' });
    const procs = launch({ CLUSTERDNS_CGROUP_ROOT: root });
    const server = procs[procs.length - 1]!;
    expect(server.execArgv).toContain('--max-old-space-size=179');
    expect(server.execArgv).toContain('--max-semi-space-size=2');
    expect(server.limit).toBe(limitFor(['--max-semi-space-size=2', '--max-old-space-size=179']));
    expect(server.limit).toBeLessThan(256 * MiB);
  });

  it("the second start caps glibc's malloc arenas at two unless the environment chose", () => {
    const root = fakeRoot({ 'memory.max': String(256 * MiB), 'cpu.max': '100000 100000' });
    const procs = launch({ CLUSTERDNS_CGROUP_ROOT: root });
    expect(procs.map((p) => p.arenas)).toEqual([null, '2']);
    const chosen = launch({ CLUSTERDNS_CGROUP_ROOT: root, MALLOC_ARENA_MAX: '4' });
    expect(chosen.map((p) => p.arenas)).toEqual(['4', '4']);
  });

  it("an operator's --max-old-space-size is kept as it is (no second start)", () => {
    const root = fakeRoot({ 'memory.max': String(256 * MiB) });
    const procs = launch({ CLUSTERDNS_CGROUP_ROOT: root, NODE_OPTIONS: '--max-old-space-size=100' });
    expect(procs).toHaveLength(1);
    expect(procs[0]!.limit).toBe(limitFor(['--max-semi-space-size=2', '--max-old-space-size=100']));
  });
});
