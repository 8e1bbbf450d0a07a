/** The README's Syntax block and the parser must not drift apart (docs/plugins.md, "Plugin READMEs"). */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { dispenserFor } from '../../test/helpers/setup.js';
import { parseForward } from './setup.js';

function syntaxKeywords(readme: string, opener: RegExp): string[] {
  const blocks = readme.split('~~~');
  const block = blocks.find((b) => opener.test(b) && b.includes('{'));
  if (!block) throw new Error('syntax block not found');
  return block
    .split('\n')
    .slice(1)
    .filter((l) => !l.trim().endsWith('{'))
    .map((l) => l.trim().split(/\s+/)[0]!)
    .filter((w) => /^[a-z_]+$/.test(w));
}

const FORWARD_SAMPLES: Record<string, string> = {
  except: 'except example.com',
  force_tcp: 'force_tcp',
  prefer_udp: 'prefer_udp',
  expire: 'expire 10s',
  max_age: 'max_age 1m',
  max_idle_conns: 'max_idle_conns 2',
  read_timeout: 'read_timeout 1s',
  max_fails: 'max_fails 3',
  max_connect_attempts: 'max_connect_attempts 4',
  health_check: 'health_check 1s no_rec domain example.org',
  policy: 'policy sequential',
  max_concurrent: 'max_concurrent 10',
  tls: 'tls',
  tls_servername: 'tls_servername dns.example',
  next: 'next NXDOMAIN',
  next_on_nodata: 'next_on_nodata',
  failover: 'failover SERVFAIL',
  failfast_all_unhealthy_upstreams: 'failfast_all_unhealthy_upstreams',
  source_address: 'source_address 127.0.0.1',
  resolver: 'resolver 127.0.0.1',
  doh_method: 'doh_method GET',
};

describe('README syntax block', () => {
  it('forward: every documented option parses', () => {
    const words = syntaxKeywords(
      readFileSync(new URL('./README.md', import.meta.url), 'utf8'),
      /forward FROM TO\.\.\. \{/,
    );
    expect(words.sort()).toEqual(Object.keys(FORWARD_SAMPLES).sort());
    for (const w of words)
      expect(
        () => parseForward(dispenserFor(`forward . 127.0.0.1 {\n ${FORWARD_SAMPLES[w]}\n}`, 'forward')),
        w,
      ).not.toThrow();
  });
});
