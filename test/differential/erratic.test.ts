/**
 * Differential: erratic against CoreDNS 1.15.0 — the same queries sent one at a time in the same
 * order to both servers (erratic counts them), so that each query number is dropped, truncated or
 * answered alike: A, AAAA, other types (SERVFAIL) and AXFR (with and without its closing SOA).
 * clusterdns runs one query thread here, since erratic's count is per thread.
 */
import { afterAll, describe, expect, it } from 'vitest';
import {
  assertResult,
  missingBinaries,
  newResult,
  runQueries,
  startPair,
  totalCompared,
  type QuerySpec,
} from './harness.js';

const COREFILE = `trunc.example:{{DNS}} {
  erratic {
    truncate 3
  }
}
drop.example:{{DNS}} {
  erratic {
    drop 3
    delay 2 1ms
  }
}
large.example:{{DNS}} {
  erratic {
    drop 0
    large
  }
}
`;

function series(zone: string, types: readonly string[], proto: 'udp' | 'tcp', first: number): QuerySpec[] {
  return types.map((type, i) => ({ name: `www.${zone}`, type, proto, id: first + i, edns: i % 2 ? 1232 : undefined }));
}

describe('differential: erratic', () => {
  const missing = missingBinaries();
  it('has CoreDNS 1.15.0 and a build to compare', () => {
    expect(missing).toBeNull();
  });
  afterAll(() => {
    const t = totalCompared();
    process.stdout.write(`differential erratic: ${t.compared} queries compared in ${t.cases} cases\n`);
  });

  it('erratic-drop-delay-truncate-axfr', async () => {
    expect(missing).toBeNull();
    const pair = await startPair({ corefile: COREFILE, oneThread: true });
    try {
      const result = newResult('erratic-drop-delay-truncate-axfr');
      const queries = [
        ...series('trunc.example', ['A', 'AAAA', 'A', 'MX', 'A', 'TXT', 'AAAA', 'A', 'A'], 'udp', 1),
        ...series('trunc.example', ['AXFR', 'AXFR', 'AXFR', 'AXFR'], 'tcp', 20),
        ...series('drop.example', ['A', 'A', 'AAAA', 'MX', 'A', 'A'], 'udp', 40),
        ...series('large.example', ['A', 'AAAA'], 'udp', 60),
        ...series('large.example', ['A'], 'tcp', 70),
      ];
      // One at a time: the servers number the queries in arrival order.
      await runQueries(pair, result, queries, ['erratic'], { concurrency: 1 });
      assertResult(result, queries.length);
    } finally {
      await pair.stop();
    }
  }, 120_000);
});
