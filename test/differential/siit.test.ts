/**
 * Differential: siit against CoreDNS 1.15.0 — A answers synthesized from the AAAA records of a
 * zone served by *file* below it (well-known and custom RFC 6052 prefixes, an explicit mapping,
 * CNAMEs, names with A records, no mappable address, NXDOMAIN), over UDP and TCP, with and without
 * EDNS; then the translated-requests counter.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { httpRequest } from '../helpers/http.js';
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

const ZONE = `@       3600 IN SOA ns.example.org. hostmaster.example.org. 1 7200 3600 1209600 300
@       3600 IN NS  ns.example.org.
ns      3600 IN A   192.0.2.53
v6      7200 IN AAAA 64:ff9b::c000:221
custom  3600 IN AAAA 2001:db8:122:344::c000:221
custom  3600 IN AAAA 2001:db8:122:344:100::1
eam     600  IN AAAA 2001:db8::10
mixed   3600 IN AAAA 64:ff9b::c633:6401
mixed   3600 IN AAAA 2001:db8::99
nomap   3600 IN AAAA 2001:db8::99
hasa    3600 IN A    192.0.2.1
hasa    3600 IN AAAA 64:ff9b::102:304
alias   3600 IN CNAME v6.example.org.
alias2  3600 IN CNAME custom.example.org.
mapped  3600 IN AAAA ::ffff:192.0.2.9
`;

const COREFILE = `example.org:{{DNS}} {
  prometheus 127.0.0.1:{{METRICS}}
  siit {
    eam 192.0.2.10 2001:db8::10
  }
  file db.example.org
}
example.net:{{DNS}} {
  prometheus 127.0.0.1:{{METRICS}}
  siit {
    ipv6_prefix 2001:db8:122:344::/96
  }
  file db.example.org example.net
}
`;

const NAMES = ['v6', 'custom', 'eam', 'mixed', 'nomap', 'hasa', 'alias', 'alias2', 'mapped', 'missing', 'ns'].flatMap(
  (n) => [`${n}.example.org`, `${n}.example.net`],
);

async function translated(p: Proc): Promise<string[]> {
  const body = (await httpRequest(p.metrics, '/metrics')).body;
  return body
    .split('\n')
    .filter((l) => l.startsWith('coredns_siit_requests_translated_total') || l.startsWith('# HELP coredns_siit'))
    .map((l) => l.replace(/:\d+"/, ':PORT"'));
}

describe('differential: siit', () => {
  const missing = missingBinaries();
  it('has CoreDNS 1.15.0 and a build to compare', () => {
    expect(missing).toBeNull();
  });
  afterAll(() => {
    const t = totalCompared();
    process.stdout.write(`differential siit: ${t.compared} queries compared in ${t.cases} cases\n`);
  });

  it('siit-prefixes-eam-cname', async () => {
    expect(missing).toBeNull();
    const pair = await startPair({ corefile: COREFILE, files: { 'db.example.org': ZONE } });
    try {
      const result = newResult('siit-prefixes-eam-cname');
      const queries = generate(NAMES, ['A', 'AAAA'], undefined, 29);
      await runQueries(pair, result, queries, ['siit', 'file', 'prometheus']);
      assertResult(result, queries.length);
      const ref = await translated(pair.ref);
      expect(ref.some((l) => /^coredns_siit_requests_translated_total\{server="dns:\/\/:PORT"\} [1-9]/.test(l))).toBe(
        true,
      );
      expect(await translated(pair.cand)).toEqual(ref);
    } finally {
      await pair.stop();
    }
  }, 120_000);
});
