/**
 * `-validate` with CoreDNS plugins clusterdns does not implement: every such directive of the
 * Corefile is listed at once, in line order, worded as one (not as a typo), beside the other parse
 * and setup errors; the blocks of foreign directives are skipped whole. Requires `npm run build`.
 */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DIRECTIVE_ORDER, isForeignDirective, pluginByName } from '../../plugins/index.js';
import { runCommand } from '../helpers/spawn.js';

const FOREIGN = '(a CoreDNS plugin clusterdns does not implement)';

describe('-validate: CoreDNS plugins clusterdns does not implement', () => {
  it('lists every foreign directive of every block and imported file at once, in line order, with the other errors', () => {
    const dir = mkdtempSync(join(tmpdir(), 'clusterdns-foreign-'));
    mkdirSync(join(dir, 'conf.d'));
    writeFileSync(join(dir, 'conf.d', 'extra.conf'), 'clouddns example.org.:p:z\nazure example.org:rg\n');
    const conf = join(dir, 'Corefile');
    writeFileSync(
      conf,
      [
        '.:53 {', //                                       1
        '  trace zipkin 192.0.2.1:9411', //                2  foreign
        '  route53 example.org.:Z1 {', //                  3  foreign, with a block
        '    credentials default', //                      4  (inside the foreign block: not a directive)
        '    fallthrough', //                              5
        '  }', //                                          6
        '  bufsize 100', //                                7  setup error of an implemented plugin
        '  frobnicate', //                                 8  a typo: not a CoreDNS plugin
        '  forward . 192.0.2.53', //                       9
        '}', //                                            10
        'example.org {', //                                11
        '  tsig', //                                       12 foreign
        '  dnssec', //                                     13 foreign
        '  import conf.d/*.conf', //                       14 two more in the imported file
        '  acl {', //                                      15 implemented now
        '    block type AXFR', //                          16
        '  }', //                                          17
        '  whoami', //                                     18
        '}', //                                            19
        '',
      ].join('\n'),
    );
    const r = runCommand(['-validate', '-conf', conf]);
    expect(r.status).toBe(1);
    const extra = join(dir, 'conf.d', 'extra.conf');
    expect(r.stderr.trim().split('\n')).toEqual([
      `${conf}:2 - Error during parsing: Unknown directive 'trace' ${FOREIGN}`,
      `${conf}:3 - Error during parsing: Unknown directive 'route53' ${FOREIGN}`,
      `plugin/bufsize: ${conf}:7 - Error during parsing: Wrong argument count or unexpected line ending after '100'`,
      `${conf}:8 - Error during parsing: Unknown directive 'frobnicate'`,
      `${conf}:12 - Error during parsing: Unknown directive 'tsig' ${FOREIGN}`,
      `${conf}:13 - Error during parsing: Unknown directive 'dnssec' ${FOREIGN}`,
      `${extra}:1 - Error during parsing: Unknown directive 'clouddns' ${FOREIGN}`,
      `${extra}:2 - Error during parsing: Unknown directive 'azure' ${FOREIGN}`,
      `Configuration has 8 errors: ${conf}`,
    ]);
    expect(r.stdout).not.toContain('Configuration OK');
  });

  it('a normal start stops at the first foreign directive with the same wording and exit code 1', () => {
    const dir = mkdtempSync(join(tmpdir(), 'clusterdns-foreign-'));
    const conf = join(dir, 'Corefile');
    writeFileSync(conf, '.:0 {\n  whoami\n  nomad\n  route53\n}\n');
    const r = runCommand(['-conf', conf, '-dns.port', '0']);
    expect(r.status).toBe(1);
    expect(r.stderr).toContain(`${conf}:3 - Error during parsing: Unknown directive 'nomad' ${FOREIGN}`);
    expect(r.stderr).not.toContain("'route53'");
  });

  it('the plugins added for issue #15 validate as implemented, not foreign', () => {
    const added = [
      'rewrite',
      'template',
      'k8s_external',
      'file',
      'acl',
      'bufsize',
      'minimal',
      'any',
      'header',
      'local',
      'chaos',
      'nsid',
      'dns64',
      'metadata',
      'cancel',
      'timeouts',
      'debug',
      'pprof',
    ];
    for (const name of added) {
      expect(pluginByName(name), name).toBeDefined();
      expect(isForeignDirective(name), name).toBe(false);
      expect(DIRECTIVE_ORDER).toContain(name);
    }
    const dir = mkdtempSync(join(tmpdir(), 'clusterdns-foreign-'));
    const conf = join(dir, 'Corefile');
    writeFileSync(
      conf,
      [
        '.:1053 {',
        '  nsid ns1',
        '  bufsize 1232',
        '  local',
        '  dns64 64:ff9b::/96',
        '  any',
        '  chaos v1 ops',
        '  acl {',
        '    allow net 10.0.0.0/8',
        '    drop',
        '  }',
        '  header {',
        '    response set ra',
        '  }',
        '  minimal',
        '  forward . 192.0.2.53',
        '}',
        '',
      ].join('\n'),
    );
    const r = runCommand(['-validate', '-conf', conf]);
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(/^Configuration OK/);
  });
});
