/**
 * Differential: root and on against CoreDNS 1.15.0 — a block whose root does not exist (so its
 * relative zone file is not found there, though it is in the working directory, where another
 * block finds it), and startup hooks that succeed and fail. The replies are compared, then the
 * lines both servers write for them (root's warning, Caddy's hook lines with the hook IDs masked,
 * the command's own output).
 */
import { afterAll, describe, expect, it } from 'vitest';
import {
  assertResult,
  generate,
  missingBinaries,
  newResult,
  runQueries,
  startPair,
  totalCompared,
  type Proc,
} from './harness.js';

const ZONE = `@  3600 IN SOA ns hostmaster 1 7200 3600 1209600 300
@  3600 IN NS  ns
ns 3600 IN A   192.0.2.53
`;

const COREFILE = `example.org:{{DNS}} {
  root /nonexistent-clusterdns-root
  file db.example.org
}
example.net:{{DNS}} {
  file db.example.org example.net
}
.:{{DNS}} {
  on startup echo on-startup-ran
  on STARTUP false
  on startup nosuch-command-for-clusterdns-tests &
  whoami
}
`;

const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g;

/** The lines of interest, IDs masked, sorted (hooks of one event run in no fixed order in CoreDNS). */
function lines(p: Proc): string[] {
  return p.output
    .filter((l) => /plugin\/root|Command "|hook: |^on-startup-ran$/.test(l))
    .map((l) => l.replace(UUID, 'ID'))
    .sort();
}

describe('differential: root and on', () => {
  const missing = missingBinaries();
  it('has CoreDNS 1.15.0 and a build to compare', () => {
    expect(missing).toBeNull();
  });
  afterAll(() => {
    const t = totalCompared();
    process.stdout.write(`differential root-on: ${t.compared} queries compared in ${t.cases} cases\n`);
  });

  it('root-missing-folder-and-startup-hooks', async () => {
    expect(missing).toBeNull();
    const pair = await startPair({ corefile: COREFILE, files: { 'db.example.org': ZONE } });
    try {
      const result = newResult('root-missing-folder-and-startup-hooks');
      const queries = generate(['ns.example.org', 'ns.example.net', 'example.net'], ['A', 'SOA'], undefined, 7);
      await runQueries(pair, result, queries, ['root', 'file', 'on', 'whoami']);
      assertResult(result, queries.length);
      for (const p of [pair.ref, pair.cand]) await p.waitFor(/hook: exec: /);
      const ref = lines(pair.ref);
      expect(ref).toContain('on-startup-ran');
      expect(ref).toContain('[WARNING] plugin/root: Root path does not exist: /nonexistent-clusterdns-root');
      expect(lines(pair.cand)).toEqual(ref);
    } finally {
      await pair.stop();
    }
  }, 120_000);
});
