/**
 * Differential: view against CoreDNS 1.15.0 — server blocks sharing a zone and port, told apart by
 * their views (client address, query type and name, and a view on a sub-zone falling back to the
 * root), with an unfiltered fallback; queried from 127.0.0.1 and 127.0.0.2. The replies are
 * compared, then the `view` label of the requests counter (`coredns_dns_requests_total`).
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
  type QuerySpec,
} from './harness.js';

/** Two views by client address, one by type and name, and the fallback; `view/name` as metadata. */
const COREFILE = `.:{{DNS}} {
  view one {
    expr incidr(client_ip(), '127.0.0.1/32')
    expr type() in ['A', 'TXT']
  }
  metadata
  prometheus 127.0.0.1:{{METRICS}}
  template IN A {
    answer "{{ .Name }} 60 IN A 192.0.2.1"
  }
  template IN TXT {
    answer "{{ .Name }} 60 IN TXT \\"view={{ .Meta \\"view/name\\" }}\\""
  }
}
.:{{DNS}} {
  view two {
    expr incidr(client_ip(), '127.0.0.2/32') && name() matches '^[a-z]+\\\\.example\\\\.org\\\\.$'
  }
  metadata
  prometheus 127.0.0.1:{{METRICS}}
  template IN ANY {
    answer "{{ .Name }} 60 IN TXT \\"view={{ .Meta \\"view/name\\" }}\\""
  }
}
example.org:{{DNS}} {
  view never {
    expr client_ip() == '192.0.2.99'
  }
  template IN ANY {
    answer "{{ .Name }} 60 IN A 192.0.2.99"
  }
}
.:{{DNS}} {
  prometheus 127.0.0.1:{{METRICS}}
  template IN ANY {
    answer "{{ .Name }} 60 IN A 192.0.2.3"
  }
}
`;

const NAMES = ['www.example.org', 'a.b.example.org', 'example.org', 'test', 'deep.sub.example.net'];

function from(source: string, seed: number): QuerySpec[] {
  return generate(NAMES, ['A', 'AAAA', 'TXT', 'MX'], [{ proto: 'udp' }, { proto: 'tcp', edns: 1232 }], seed).map(
    (q) => ({ ...q, source }),
  );
}

/** The `coredns_dns_requests_total` samples of the view blocks, without values: which labels exist. */
async function requestSeries(p: Proc): Promise<string[]> {
  const body = (await httpRequest(p.metrics, '/metrics')).body;
  return body
    .split('\n')
    .filter((l) => l.startsWith('coredns_dns_requests_total{'))
    .map((l) => {
      const labels = l.slice(l.indexOf('{') + 1, l.indexOf('}')).split(',');
      return labels
        .filter((x) => /^(zone|view|proto|type)=/.test(x))
        .sort()
        .join(',');
    })
    .sort();
}

describe('differential: view', () => {
  const missing = missingBinaries();
  it('has CoreDNS 1.15.0 and a build to compare', () => {
    expect(missing).toBeNull();
  });
  afterAll(() => {
    const t = totalCompared();
    process.stdout.write(`differential view: ${t.compared} queries compared in ${t.cases} cases\n`);
  });

  it('view-client-address-and-fallback', async () => {
    expect(missing).toBeNull();
    const pair = await startPair({ corefile: COREFILE });
    try {
      const result = newResult('view-client-address-and-fallback');
      const queries = [...from('127.0.0.1', 301), ...from('127.0.0.2', 302)];
      await runQueries(pair, result, queries, ['view', 'template', 'metadata', 'prometheus']);
      assertResult(result, queries.length);
      const ref = await requestSeries(pair.ref);
      expect(ref.some((l) => l.includes('view="one"'))).toBe(true);
      expect(ref.some((l) => l.includes('view="two"'))).toBe(true);
      expect(await requestSeries(pair.cand)).toEqual(ref);
    } finally {
      await pair.stop();
    }
  }, 180_000);
});
