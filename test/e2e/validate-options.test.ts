/**
 * `-validate` with declared options (docs/corefile.md §8.3): the generic option parser collects
 * every bad option of an occurrence, and the core every error of every plugin, so one run lists
 * them all, each with its file:line, in line order. Requires `npm run build` (done by `npm test`).
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCommand } from '../helpers/spawn.js';

describe('-validate reports every bad option of every plugin', () => {
  it('lists several bad options per plugin, across plugins and blocks, with file:line', () => {
    const dir = mkdtempSync(join(tmpdir(), 'clusterdns-valopt-'));
    const bad = join(dir, 'Corefile');
    writeFileSync(
      bad,
      [
        'a.org {', //                        1
        '  cache {',
        '    success x', //                  3
        '    prefetch -1', //                4
        '    bogus', //                      5
        '    keepttl',
        '  }',
        '  forward . 127.0.0.1 {',
        '    max_fails x', //                9
        '    policy fastest', //             10
        '    expire 10', //                  11
        '    force_tcp',
        '  }',
        '  kubernetes {',
        '    ttl 4000', //                   15
        '    pods maybe', //                 16
        '  }',
        '  health {',
        '    lameduck 5', //                 19
        '  }',
        '  log . {',
        '    class nope', //                 22
        '  }',
        '  log example.org {',
        '    json extra', //                 25
        '  }',
        '}',
        'b.org {',
        '  shadow 127.0.0.1 {',
        '    fraction 2', //                 30
        '    timeout 0s', //                 31
        '  }',
        '  whoami',
        '}',
        '',
      ].join('\n'),
    );
    const r = runCommand(['-validate', '-conf', bad]);
    expect(r.status).toBe(1);
    expect(r.stderr.trim().split('\n')).toEqual([
      `plugin/cache: ${bad}:3 - Error during parsing: strconv.Atoi: parsing "x": invalid syntax`,
      `plugin/cache: ${bad}:4 - Error during parsing: prefetch amount should be positive: -1`,
      `plugin/cache: ${bad}:5 - Error during parsing: Wrong argument count or unexpected line ending after 'bogus'`,
      `plugin/forward: ${bad}:9 - Error during parsing: strconv.ParseUint: parsing "x": invalid syntax`,
      `plugin/forward: ${bad}:10 - Error during parsing: unknown policy 'fastest'`,
      `plugin/forward: ${bad}:11 - Error during parsing: time: missing unit in duration "10"`,
      `plugin/kubernetes: ${bad}:15 - Error during parsing: ttl must be in range [0, 3600]: 4000`,
      `plugin/kubernetes: ${bad}:16 - Error during parsing: wrong value for pods: maybe,  must be one of: disabled, verified, insecure`,
      `plugin/health: ${bad}:19 - Error during parsing: unable to parse lameduck duration value: '5' : time: missing unit in duration "5"`,
      `plugin/log: ${bad}:22 - Error during parsing: invalid Class: nope`,
      `plugin/log: ${bad}:25 - Error during parsing: Wrong argument count or unexpected line ending after 'extra'`,
      `plugin/shadow: ${bad}:30 - Error during parsing: fraction must be a number between 0 and 1, got '2'`,
      `plugin/shadow: ${bad}:31 - Error during parsing: timeout must be positive, got '0s'`,
      `Configuration has 13 errors: ${bad}`,
    ]);
  });

  it('a normal start reports the first of them and exits 1', () => {
    const dir = mkdtempSync(join(tmpdir(), 'clusterdns-valopt-'));
    const bad = join(dir, 'Corefile');
    writeFileSync(bad, '.:0 {\n  cache {\n    success x\n    denial y\n  }\n  whoami\n}\n');
    const r = runCommand(['-conf', bad]);
    expect(r.status).toBe(1);
    expect(r.stderr).toContain(
      `plugin/cache: ${bad}:3 - Error during parsing: strconv.Atoi: parsing "x": invalid syntax`,
    );
    expect(r.stderr).not.toContain(`${bad}:4`);
  });
});
