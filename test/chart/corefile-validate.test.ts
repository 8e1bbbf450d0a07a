/**
 * The Corefiles the chart and the repository ship must load: `bin/clusterdns -validate -conf FILE`
 * parses and sets up the configuration and exits non-zero on errors. Needs `npm run build`
 * (dist/); fails with that instruction when dist/ is missing.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { REPO_ROOT, runClusterdns } from './helm.js';

const GOLDEN_DIR = path.join(REPO_ROOT, 'test/chart/golden');
const work = mkdtempSync(path.join(tmpdir(), 'clusterdns-validate-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

function requireBuild(): void {
  if (!existsSync(path.join(REPO_ROOT, 'dist/src/main.js'))) {
    throw new Error('dist/src/main.js is missing: run `npm run build` before these tests');
  }
}

function validate(file: string): { status: number; output: string } {
  requireBuild();
  const r = runClusterdns(['-validate', '-conf', file]);
  return { status: r.status, output: r.stdout + r.stderr };
}

describe('bin/clusterdns -validate', () => {
  for (const [name, file] of [
    ['the chart default Corefile (golden)', path.join(GOLDEN_DIR, 'Corefile.default')],
    [
      'the chart Corefile with extra blocks, stub domains and import (golden)',
      path.join(GOLDEN_DIR, 'Corefile.custom'),
    ],
    ['Corefile.example (kubeadm)', path.join(REPO_ROOT, 'Corefile.example')],
  ] as const) {
    it(`accepts ${name}`, () => {
      const r = validate(file);
      expect(r.output).toContain('Configuration OK');
      expect(r.status).toBe(0);
    });
  }

  it('rejects a Corefile with an unknown directive', () => {
    const bad = path.join(work, 'Corefile.bad');
    writeFileSync(
      bad,
      readFileSync(path.join(GOLDEN_DIR, 'Corefile.default'), 'utf8').replace(
        '    loop\n',
        '    loop\n    bogusplugin\n',
      ),
    );
    const r = validate(bad);
    expect(r.status).not.toBe(0);
    expect(r.output).toContain('bogusplugin');
  });
});
