import { rmSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { fakeCgroupRoot } from '../../test/helpers/cgroup.js';
import { cgroupDirs, upwards, v1File, v2Files } from './cgroup.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function tree(files: Record<string, string>): string {
  const root = fakeCgroupRoot(files);
  dirs.push(root);
  return root;
}

describe('cgroup reader', () => {
  it('lists the directories from a cgroup up to the root', () => {
    expect(upwards('/a/b')).toEqual(['/a/b', '/a', '/']);
    expect(upwards('/')).toEqual(['/']);
  });

  it('finds the v2 path and the v1 path of one controller in /proc/self/cgroup', () => {
    const text = '12:memory:/mem/x\n4:cpu,cpuacct:/cpu/y\n0::/kubepods/pod1\n';
    expect(cgroupDirs(text, 'cpu')).toEqual({ v2: ['/kubepods/pod1', '/kubepods', '/'], v1: ['/cpu/y', '/cpu', '/'] });
    expect(cgroupDirs(text, 'memory').v1).toEqual(['/mem/x', '/mem', '/']);
    expect(cgroupDirs(null, 'cpu')).toEqual({ v2: ['/'], v1: ['/'] });
  });

  it('reads a v2 file along the path, own cgroup first, leaving out the missing ones', () => {
    const root = tree({ 'a/b/memory.max': '1000\n', 'memory.max': 'max\n' });
    expect(v2Files(root, upwards('/a/b'), 'memory.max')).toEqual(['1000', 'max']);
    expect(v2Files(root, upwards('/a/b'), 'cpu.max')).toEqual([]);
  });

  it('reads a v1 file from the first controller mount that has it', () => {
    const root = tree({ 'cpu,cpuacct/x/cpu.cfs_quota_us': '50000', 'cpu/x/cpu.cfs_period_us': '100000' });
    const mounts = ['cpu', 'cpu,cpuacct'];
    expect(v1File(root, mounts, '/x', 'cpu.cfs_quota_us')).toBe('50000');
    expect(v1File(root, mounts, '/x', 'cpu.cfs_period_us')).toBe('100000');
    expect(v1File(root, mounts, '/', 'cpu.cfs_quota_us')).toBeUndefined();
  });
});
