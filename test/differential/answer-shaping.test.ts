/**
 * Differential: the answer-shaping plugins (acl, bufsize, minimal, any, header, local, chaos, nsid,
 * dns64) against CoreDNS 1.15.0, each in front of a scripted upstream (test/helpers/upstream.ts)
 * or hosts, with Corefiles of the kind clusters use.
 */
import * as dnsPacket from 'dns-packet';
import type { Answer } from 'dns-packet';
import { afterAll, describe, expect, it } from 'vitest';
import { a, aaaa, type TestUpstream } from '../helpers/upstream.js';
import {
  assertResult,
  encode,
  exchange,
  generate,
  judge,
  missingBinaries,
  newResult,
  runQueries,
  startPair,
  totalCompared,
  type QuerySpec,
  type Variant,
} from './harness.js';

const soa = (zone: string, ttl = 60): Answer => ({
  name: zone,
  type: 'SOA',
  class: 'IN',
  ttl,
  data: {
    mname: `ns.${zone}`,
    rname: `hostmaster.${zone}`,
    serial: 2026112401,
    refresh: 7200,
    retry: 1800,
    expire: 86400,
    minimum: 30,
  },
});

/** The scripted upstream: one behaviour per name (the same records whatever the qtype). */
function script(u: TestUpstream): void {
  u.defaultBehaviour = { rcode: 3, authorities: [soa('example.org')] };
  u.on('a.example.org', { answers: [a('a.example.org', '192.0.2.1', 300)], aa: true });
  u.on('v6.example.org', { answers: [aaaa('v6.example.org', '2001:db8::1', 120)] });
  u.on('multi.example.org', {
    answers: ['192.0.2.10', '192.0.2.11', '192.0.2.12'].map((ip) => a('multi.example.org', ip, 60)),
  });
  u.on('cname.example.org', {
    answers: [
      { name: 'cname.example.org', type: 'CNAME', class: 'IN', ttl: 100, data: 'a.example.org' },
      a('a.example.org', '192.0.2.1', 300),
    ],
  });
  u.on('mx.example.org', {
    answers: [
      {
        name: 'mx.example.org',
        type: 'MX',
        class: 'IN',
        ttl: 50,
        data: { preference: 10, exchange: 'mail.example.org' },
      },
    ],
    additionals: [a('mail.example.org', '192.0.2.25', 50)],
  });
  u.on('txt.example.org', {
    answers: [{ name: 'txt.example.org', type: 'TXT', class: 'IN', ttl: 50, data: ['v=spf1 -all'] }],
  });
  u.on('nodata.example.org', { authorities: [soa('example.org', 45)] });
  u.on('servfail.example.org', { rcode: 2 });
  u.on('withextra.example.org', {
    answers: [a('withextra.example.org', '192.0.2.5', 60)],
    authorities: [{ name: 'example.org', type: 'NS', class: 'IN', ttl: 60, data: 'ns1.example.org' }],
    additionals: [a('ns1.example.org', '192.0.2.53', 60)],
  });
  u.on('referral.example.org', {
    authorities: [{ name: 'referral.example.org', type: 'NS', class: 'IN', ttl: 60, data: 'ns.elsewhere.net' }],
  });
  // 45 A records: about 750 bytes, more than 512 and less than 1232.
  u.on('mid.example.org', {
    answers: Array.from({ length: 45 }, (_, i) => a('mid.example.org', `198.51.100.${i + 1}`, 60)),
  });
  u.on('srv.example.org', {
    answers: [
      {
        name: 'srv.example.org',
        type: 'SRV',
        class: 'IN',
        ttl: 30,
        data: { priority: 0, weight: 0, port: 53, target: 'a.example.org' },
      },
    ],
  });
}

const VARIANTS: readonly Variant[] = [
  { proto: 'udp' },
  { proto: 'udp', edns: 1232 },
  { proto: 'udp', edns: 4096, do: true, mixed: true },
  { proto: 'tcp' },
];
const PROBE = { name: 'a.example.org', type: 'A' };

interface CaseOptions {
  readonly probe?: { name: string; type: string } | null;
  readonly files?: Record<string, string>;
  readonly timeoutMs?: number;
}

async function runCase(
  id: string,
  corefile: string,
  plugins: string[],
  queries: QuerySpec[],
  o: CaseOptions = {},
): Promise<void> {
  const pair = await startPair(
    { corefile, upstream: script, files: o.files },
    o.probe === null ? undefined : (o.probe ?? PROBE),
  );
  try {
    const result = newResult(id);
    await runQueries(pair, result, queries, plugins, { timeoutMs: o.timeoutMs });
    assertResult(result, queries.length);
  } finally {
    await pair.stop();
  }
}

const NSID_OPTION = [{ code: 3, data: Buffer.alloc(0) }];

describe('differential: answer-shaping plugins', () => {
  const missing = missingBinaries();
  it('has CoreDNS 1.15.0 and a build to compare', () => {
    expect(missing).toBeNull();
  });
  afterAll(() => {
    const t = totalCompared();
    process.stdout.write(`differential answer-shaping: ${t.compared} queries compared in ${t.cases} cases\n`);
  });
  if (missing) return;

  it('acl: block a type, filter a type, allow a network, per-zone rules', async () => {
    const corefile = `.:{{DNS}} {
    acl {
        block type MX ANY
        filter type TXT
    }
    acl example.org {
        allow type A net 127.0.0.0/8
        block type A
        block net 10.0.0.0/8 192.0.2.0/24
        filter net 127.0.0.1
    }
    acl example.net {
        allow net ::1 127.0.0.1
        block
    }
    forward . {{UPSTREAM}}
}
`;
    const names = ['a.example.org', 'mx.example.org', 'txt.example.org', 'nodata.example.org', 'v6.example.net'];
    await runCase(
      'acl',
      corefile,
      ['acl', 'forward'],
      generate(names, ['A', 'AAAA', 'MX', 'TXT', 'ANY'], VARIANTS, 11),
    );
  }, 120_000);

  it('acl: drop sends nothing, other types still answered', async () => {
    const corefile = `.:{{DNS}} {
    acl {
        drop type SRV AXFR
        block type NS net 127.0.0.0/8
    }
    forward . {{UPSTREAM}}
}
`;
    const queries = [
      ...generate(['srv.example.org'], ['SRV'], [{ proto: 'udp' }, { proto: 'udp', edns: 1232 }, { proto: 'tcp' }], 12),
      ...generate(['a.example.org'], ['A', 'NS'], VARIANTS, 13),
    ];
    await runCase('acl-drop', corefile, ['acl', 'forward'], queries, { timeoutMs: 1500 });
  }, 120_000);

  it('bufsize and minimal: authority and additional dropped from answers only', async () => {
    const corefile = `.:{{DNS}} {
    bufsize 512
    minimal
    forward . {{UPSTREAM}}
}
`;
    const names = [
      'a.example.org',
      'withextra.example.org',
      'mx.example.org',
      'nodata.example.org',
      'referral.example.org',
      'nx.example.org',
      'servfail.example.org',
    ];
    const variants: Variant[] = [...VARIANTS, { proto: 'udp', edns: 4096 }, { proto: 'udp', edns: 600, do: true }];
    await runCase(
      'bufsize-minimal',
      corefile,
      ['bufsize', 'minimal', 'forward'],
      generate(names, ['A', 'MX'], variants, 21),
    );
  }, 120_000);

  it('bufsize: replies fitted to the lowered size (hosts answers of about 750 octets)', async () => {
    const many = Array.from({ length: 45 }, (_, i) => `198.51.100.${i + 1} mid.example.org`).join('\n');
    const corefile = `.:{{DNS}} {
    bufsize
    hosts {{DIR}}/hosts {
        fallthrough
    }
    forward . {{UPSTREAM}}
}
example.net:{{DNS}} {
    bufsize 600
    hosts {{DIR}}/hosts
}
`;
    const variants: Variant[] = [
      { proto: 'udp', edns: 4096 },
      { proto: 'udp', edns: 1400, do: true },
      { proto: 'udp', edns: 700 },
      { proto: 'udp', edns: 520 },
      { proto: 'udp' },
      { proto: 'tcp', edns: 4096 },
    ];
    const files = {
      hosts: `${many}\n${many.replaceAll('example.org', 'example.net')}\n192.0.2.44 small.example.net\n`,
    };
    await runCase(
      'bufsize-hosts',
      corefile,
      ['bufsize', 'hosts', 'forward'],
      generate(['mid.example.org', 'mid.example.net', 'small.example.net', 'a.example.org'], ['A'], variants, 22),
      { files, probe: { name: 'small.example.net', type: 'A' } },
    );
  }, 120_000);

  it('any: HINFO for ANY, everything else forwarded', async () => {
    const corefile = `.:{{DNS}} {
    any
    forward . {{UPSTREAM}}
}
`;
    await runCase(
      'any',
      corefile,
      ['any', 'forward'],
      generate(['a.example.org', 'nx.example.org', '.'], ['ANY', 'A'], VARIANTS, 31),
    );
  }, 120_000);

  it('header: response and query rules', async () => {
    const corefile = `.:{{DNS}} {
    header {
        response set aa
        response clear ra
        query clear rd
    }
    forward . {{UPSTREAM}}
}
example.net:{{DNS}} {
    header {
        response set ra
        query set rd
    }
    hosts {
        192.0.2.80 www.example.net
    }
}
`;
    const queries = [
      ...generate(['a.example.org', 'nx.example.org', 'servfail.example.org'], ['A'], VARIANTS, 41),
      ...generate(['www.example.net', 'nx.example.net'], ['A', 'AAAA'], VARIANTS, 42),
      ...generate(['a.example.org', 'www.example.net'], ['A'], VARIANTS, 43).map((q) => ({ ...q, rd: false })),
    ];
    await runCase('header', corefile, ['header', 'forward', 'hosts'], queries);
  }, 120_000);

  it('local: localhost, its subdomains and prefix, the reverse zones', async () => {
    const corefile = `.:{{DNS}} {
    local
    forward . {{UPSTREAM}}
}
example.net:{{DNS}} {
    local {
        localhost_prefix off
    }
    forward . {{UPSTREAM}}
}
`;
    const names = [
      'localhost',
      'foo.localhost',
      'a.b.localhost',
      'localhost.example.org',
      'localhost.example.net',
      '0.in-addr.arpa',
      '127.in-addr.arpa',
      '255.in-addr.arpa',
      '1.0.0.127.in-addr.arpa',
      '2.0.0.127.in-addr.arpa',
      '1.255.in-addr.arpa',
      'a.example.org',
    ];
    await runCase(
      'local',
      corefile,
      ['local', 'forward'],
      generate(names, ['A', 'AAAA', 'SOA', 'NS', 'PTR', 'MX'], VARIANTS, 51),
    );
  }, 180_000);

  it('chaos: configured version and authors, host name, CH routing', async () => {
    const corefile = `.:{{DNS}} {
    chaos "DNS 1.0" alice bob alice
    forward . {{UPSTREAM}}
}
`;
    const ch = (name: string, type = 'TXT'): QuerySpec[] =>
      generate([name], [type], VARIANTS, 61).map((q) => ({ ...q, klass: 'CH' as const }));
    const pair = await startPair({ corefile, upstream: script }, PROBE);
    try {
      const result = newResult('chaos');
      await runQueries(
        pair,
        result,
        [
          ...ch('version.bind'),
          ...ch('version.server'),
          ...ch('hostname.bind'),
          ...ch('id.server'),
          ...generate(['a.example.org'], ['A', 'TXT'], VARIANTS, 62),
        ],
        ['chaos', 'forward'],
      );
      // authors.bind: one record per author in random order; compare the sets.
      for (const q of ch('authors.bind')) {
        const [ref, cand] = await Promise.all([
          exchange(pair.ref.dns, encode(q), q.proto),
          exchange(pair.cand.dns, encode(q), q.proto),
        ]);
        const texts = (b: Buffer | null): string[] =>
          (b ? (dnsPacket.decode(b).answers ?? []) : [])
            .map((r) => Buffer.concat((r as { data: Buffer[] }).data).toString())
            .sort();
        expect(texts(cand)).toEqual(texts(ref));
        expect(texts(cand)).toEqual(['alice', 'bob']);
      }
      assertResult(result);
    } finally {
      await pair.stop();
    }
  }, 120_000);

  it('chaos: the default version differs only in the product name', async () => {
    const corefile = `.:{{DNS}} {
    chaos
    whoami
}
`;
    const pair = await startPair({ corefile });
    try {
      const result = newResult('chaos-default');
      for (const q of generate(['version.bind', 'version.server'], ['TXT'], VARIANTS, 63).map((x) => ({
        ...x,
        klass: 'CH' as const,
      }))) {
        const [ref, cand] = await Promise.all([
          exchange(pair.ref.dns, encode(q), q.proto),
          exchange(pair.cand.dns, encode(q), q.proto),
        ]);
        expect(ref).not.toBeNull();
        expect(cand).not.toBeNull();
        const text = (b: Buffer): string =>
          Buffer.concat((dnsPacket.decode(b).answers![0] as { data: Buffer[] }).data).toString();
        expect(text(ref!)).toBe('CoreDNS-1.15.0');
        expect(text(cand!)).toMatch(/^clusterdns-\d+\.\d+\.\d+/);
        // The same structure once the text is the same: rewrite clusterdns's TXT to CoreDNS's.
        const m = dnsPacket.decode(cand!);
        (m.answers![0] as { data: unknown }).data = ['CoreDNS-1.15.0'];
        judge(result, q, ref, dnsPacket.encode(m), ['chaos', 'whoami']);
      }
      // Not CH TXT: chaos passes the query to whoami, which writes owner names in full as
      // CoreDNS's does (94 bytes for version.bind. CH A without EDNS). The replies are equal byte
      // for byte once the ids and the SRV record's client port are set aside.
      for (const q of generate(['version.bind', 'hostname.bind'], ['A', 'AAAA', 'NS'], VARIANTS, 64).map((x) => ({
        ...x,
        klass: 'CH' as const,
      }))) {
        const [ref, cand] = await Promise.all([
          exchange(pair.ref.dns, encode(q), q.proto),
          exchange(pair.cand.dns, encode(q), q.proto),
        ]);
        expect(ref).not.toBeNull();
        expect(cand).not.toBeNull();
        expect(cand!.length).toBe(ref!.length);
        if (q.name === 'version.bind' && q.type === 'A' && q.edns === undefined) expect(ref!.length).toBe(94);
        const portless = (b: Buffer): Buffer => {
          const m = dnsPacket.decode(b);
          for (const r of m.additionals ?? []) if (r.type === 'SRV') r.data.port = 0;
          return dnsPacket.encode(m);
        };
        expect(portless(cand!).subarray(2)).toEqual(portless(ref!).subarray(2));
      }
      assertResult(result, 8);
    } finally {
      await pair.stop();
    }
  }, 120_000);

  it('nsid: the identifier only for queries that ask for it', async () => {
    const corefile = `.:{{DNS}} {
    nsid clusterdns test
    forward . {{UPSTREAM}}
}
`;
    const withNsid = generate(
      ['a.example.org', 'nx.example.org', 'servfail.example.org', 'withextra.example.org'],
      ['A'],
      [
        { proto: 'udp', edns: 1232 },
        { proto: 'udp', edns: 4096, do: true },
        { proto: 'tcp', edns: 4096, mixed: true },
      ],
      71,
    ).map((q) => ({ ...q, options: NSID_OPTION }));
    const without = generate(['a.example.org', 'nx.example.org'], ['A'], VARIANTS, 72);
    await runCase('nsid', corefile, ['nsid', 'forward'], [...withNsid, ...without]);
  }, 120_000);

  it('dns64: synthesis from the upstream A records, NXDOMAIN and AAAA kept, RCODE of the A reply', async () => {
    const corefile = `.:{{DNS}} {
    dns64 {
        prefix 64:ff9b::/96
        allow_ipv4
    }
    forward . {{UPSTREAM}}
}
example.net:{{DNS}} {
    dns64 {
        prefix 2001:db8:64::/48
        translate_all
        allow_ipv4
    }
    forward . {{UPSTREAM}}
}
`;
    const names = [
      'a.example.org',
      'multi.example.org',
      'cname.example.org',
      'v6.example.org',
      'nodata.example.org',
      'nx.example.org',
      'servfail.example.org',
      'mx.example.org',
      'v6.example.net',
      'x.example.net',
    ];
    await runCase('dns64', corefile, ['dns64', 'forward'], generate(names, ['AAAA', 'A'], VARIANTS, 81));
  }, 120_000);

  it('dns64: in front of hosts; IPv4 clients left alone without allow_ipv4', async () => {
    const corefile = `.:{{DNS}} {
    dns64 64:ff9b::/64
    hosts {
        192.0.2.7 v4.example.org
        2001:db8::7 v6.example.org
        fallthrough
    }
    forward . {{UPSTREAM}}
}
example.net:{{DNS}} {
    dns64 {
        allow_ipv4
    }
    hosts {
        192.0.2.8 v4.example.net
        2001:db8::8 both.example.net
        192.0.2.9 both.example.net
    }
}
`;
    const names = [
      'v4.example.org',
      'v6.example.org',
      'a.example.org',
      'v4.example.net',
      'both.example.net',
      'none.example.net',
    ];
    await runCase(
      'dns64-hosts',
      corefile,
      ['dns64', 'hosts', 'forward'],
      generate(names, ['AAAA', 'A'], VARIANTS, 82),
      { probe: { name: 'v4.example.org', type: 'A' } },
    );
  }, 120_000);
});
