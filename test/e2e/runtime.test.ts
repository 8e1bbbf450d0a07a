/**
 * The runtime under test: `.ci/run` runs the suite twice, on the machine's Node 20 and on Node 24
 * (scripts/test-node24.sh sets CLUSTERDNS_TEST_NODE to the version it installed). Both the tests
 * and the servers they spawn must run on that one runtime, or the second run proves nothing.
 * Requires `npm run build`.
 */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCommand } from '../helpers/spawn.js';

const expected = process.env.CLUSTERDNS_TEST_NODE ?? process.version;

describe('runtime', () => {
  it(`the tests run on ${expected}, a supported major version (package.json engines)`, () => {
    expect(process.version).toBe(expected);
    const engines = (JSON.parse(readFileSync(resolve(import.meta.dirname, '../../package.json'), 'utf8')) as { engines: { node: string } }).engines.node;
    const major = process.version.slice(1).split('.')[0]!;
    // `engines.node` lists the supported majors as `^20.x || ^24.x`-style alternatives.
    const majors = engines.split('||').map((alt) => /\^?(\d+)/.exec(alt.trim())?.[1]);
    expect(majors).toContain(major);
  });

  it('bin/clusterdns spawned by the tests runs on the same Node', () => {
    const r = runCommand(['-version']);
    expect(r.status).toBe(0);
    expect(r.stdout.split('\n')[1]).toContain(`, ${expected},`);
  });
});
