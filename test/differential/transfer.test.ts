/**
 * Differential: the transfer plugin against CoreDNS 1.15.0 — AXFR of a file zone large enough for
 * several messages and of cluster.local from the kubernetes plugin (the sandbox's cluster), the
 * record sets compared in canonical order; IXFR for the current and an older serial; the serial
 * and the records following a change in the cluster; REFUSED over UDP and for a client not in
 * `to`; SERVFAIL for an IXFR without SOA; the transfer log lines; NOTIFY to the `to` secondaries at
 * start.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { recordText, type WireMessage } from '../../src/dnscompare/index.js';
import { Qtype } from '../../src/dns/constants.js';
import { waitFor } from '../helpers/wait.js';
import { axfrQuery, transferMessages } from './transfer-client.js';
import {
  assertResult,
  missingBinaries,
  newResult,
  runQueries,
  startPair,
  totalCompared,
  type Pair,
  type QuerySpec,
} from './harness.js';

const ZONE = `$ORIGIN example.org.
$TTL 3600
@ IN SOA ns1.example.org. hostmaster.example.org. 2024010101 7200 3600 1209600 300
  IN NS ns1
  IN NS ns2.example.org.
  IN MX 10 mail
ns1 IN A 192.0.2.53
ns2 IN AAAA 2001:db8::53
mail IN A 192.0.2.25
www IN CNAME web
web 60 IN A 192.0.2.80
_sip._tcp IN SRV 10 60 5060 sip
txt IN TXT "one" "two"
*.wild IN A 192.0.2.100
sub IN NS ns.sub
ns.sub IN A 192.0.2.201
$GENERATE 1-2500 host-$ A 10.1.0.1
$GENERATE 1-400 long-$ TXT "${'x'.repeat(200)}"
`;

/** The records of a transfer in presentation form, sorted (canonical order); the SOA serial set aside unless `keepSerial`. */
function recordSet(msgs: readonly WireMessage[], keepSerial = true): string[] {
  const out: string[] = [];
  for (const m of msgs)
    for (const r of m.answer) {
      const text = recordText(r);
      out.push(keepSerial || r.type !== Qtype.SOA ? text : text.replace(/^(.*\tSOA\t\S+ \S+ )\d+/, '$1SERIAL'));
    }
  return out.sort();
}

function soaSerial(msgs: readonly WireMessage[]): number {
  const soa = msgs[0]?.answer[0];
  if (soa?.type !== Qtype.SOA) throw new Error('transfer does not start with the SOA');
  return Number(soa.rdata.split(' ')[2]);
}

/** What every message of a transfer carries besides its records: rcode, flags, question, EDNS, other sections. */
function shape(m: WireMessage): string {
  const q = m.questions[0];
  return `flags=${m.flags.toString(16)} q=${q?.name} ${q?.type} opt=${m.opt ? `${m.opt.udpSize}/${m.opt.do}` : 'none'} authority=${m.authority.length} additional=${m.additional.length}`;
}

const COREFILE = `example.org:{{DNS}} {
  file db.example.org
  transfer {
    to *
  }
}
example.net:{{DNS}} {
  file db.example.net example.net
  transfer {
    to 192.0.2.99 [2001:db8::99]:5300
  }
}
cluster.local:{{DNS}} {
  kubernetes {
    endpoint {{API}}
  }
  transfer {
    to 127.0.0.1
  }
}
notify.test:{{DNS}} {
  file db.notify notify.test
  transfer {
    to {{UPSTREAM}}
  }
}
`;

const NET_ZONE = `$TTL 300
@ IN SOA ns.example.net. h.example.net. 3 3600 600 86400 60
  IN NS ns
ns IN A 192.0.2.3
www IN A 192.0.2.4
`;

const NOTIFY_ZONE = `$TTL 300
@ IN SOA ns.notify.test. h.notify.test. 7 3600 600 86400 60
  IN NS ns
ns IN A 192.0.2.1
`;

describe('differential: transfer', () => {
  const missing = missingBinaries();
  let pair: Pair | null = null;
  const start = async (): Promise<Pair> => {
    if (missing) throw new Error(missing);
    pair ??= await startPair(
      {
        corefile: COREFILE,
        files: { 'db.example.org': ZONE, 'db.example.net': NET_ZONE, 'db.notify': NOTIFY_ZONE },
        cluster: ['examples/cluster.yaml'],
        perServerUpstreams: true,
        upstream: (u) => {
          u.on('notify.test', { rcode: 0 });
        },
      },
      { name: 'svc1.testns.svc.cluster.local', type: 'A' },
    );
    return pair;
  };
  afterAll(async () => {
    await pair?.stop();
    const t = totalCompared();
    process.stdout.write(`differential transfer: ${t.compared} replies compared in ${t.cases} cases\n`);
  });

  it('has CoreDNS 1.15.0 and a build to compare', () => {
    expect(missing).toBeNull();
  });

  it('AXFR of a file zone: the same records, messages and message shapes', async () => {
    const p = await start();
    for (const edns of [undefined, 4096]) {
      const q = axfrQuery('example.org', 'AXFR', undefined, edns);
      const [ref, cand] = await Promise.all([transferMessages(p.ref.dns, q), transferMessages(p.cand.dns, q)]);
      expect(ref.length).toBeGreaterThan(1);
      expect(cand.length).toBe(ref.length);
      expect(cand.map(shape)).toEqual(ref.map(shape));
      expect(recordSet(cand)).toEqual(recordSet(ref));
      // Each message holds the same number of records (the same 63,000-byte packing).
      expect(cand.map((m) => m.answer.length)).toEqual(ref.map((m) => m.answer.length));
      // Written uncompressed as CoreDNS writes them: the same bytes per message.
      expect(cand.map((m) => m.size)).toEqual(ref.map((m) => m.size));
      expect(cand[0]!.answer[0]!.type).toBe(Qtype.SOA);
      expect(cand.at(-1)!.answer.at(-1)!.type).toBe(Qtype.SOA);
    }
  }, 120_000);

  it('AXFR of cluster.local: the records CoreDNS 1.15.0 transfers', async () => {
    const p = await start();
    const q = axfrQuery('cluster.local', 'AXFR');
    const [ref, cand] = await Promise.all([transferMessages(p.ref.dns, q), transferMessages(p.cand.dns, q)]);
    expect(cand.map(shape)).toEqual(ref.map(shape));
    // The serials are each process's time of the last change: compared apart.
    expect(recordSet(cand, false)).toEqual(recordSet(ref, false));
    expect(Math.abs(soaSerial(cand) - soaSerial(ref))).toBeLessThan(120);
    expect(cand.map((m) => m.size)).toEqual(ref.map((m) => m.size));
    const lines = async (proc: Pair['ref']): Promise<string> =>
      proc.waitFor(/plugin\/transfer: Outgoing transfer of \d+ records of zone "cluster\.local\."/);
    const norm = (l: string): string => l.replace(/for \d+ SOA serial/, 'for SERIAL SOA serial');
    expect(norm(await lines(p.cand))).toBe(norm(await lines(p.ref)));
  }, 120_000);

  it('IXFR: the SOA alone for the current serial, the whole zone for an older one', async () => {
    const p = await start();
    const cur = await Promise.all([
      transferMessages(p.ref.dns, axfrQuery('example.org', 'IXFR', 2024010101)),
      transferMessages(p.cand.dns, axfrQuery('example.org', 'IXFR', 2024010101)),
    ]);
    expect(cur[1].map(shape)).toEqual(cur[0].map(shape));
    expect(recordSet(cur[1])).toEqual(recordSet(cur[0]));
    expect(recordSet(cur[1])).toHaveLength(1);
    const noop =
      /Outgoing noop, incremental transfer for up to date zone "example\.org\." to 127\.0\.0\.1 for 2024010101 SOA serial/;
    await Promise.all([p.ref.waitFor(noop), p.cand.waitFor(noop)]);
    const old = await Promise.all([
      transferMessages(p.ref.dns, axfrQuery('example.org', 'IXFR', 2024010100)),
      transferMessages(p.cand.dns, axfrQuery('example.org', 'IXFR', 2024010100)),
    ]);
    expect(old[1].length).toBe(old[0].length);
    expect(recordSet(old[1])).toEqual(recordSet(old[0]));
    // kubernetes: its serial from the SOA it transfers.
    const k8s = await transferMessages(p.cand.dns, axfrQuery('cluster.local', 'AXFR'));
    const k8sRef = await transferMessages(p.ref.dns, axfrQuery('cluster.local', 'AXFR'));
    const [kr, kc] = await Promise.all([
      transferMessages(p.ref.dns, axfrQuery('cluster.local', 'IXFR', soaSerial(k8sRef))),
      transferMessages(p.cand.dns, axfrQuery('cluster.local', 'IXFR', soaSerial(k8s))),
    ]);
    expect(kc.map(shape)).toEqual(kr.map(shape));
    expect(recordSet(kc, false)).toEqual(recordSet(kr, false));
  }, 120_000);

  it('a change in the cluster moves the serial and shows in the next transfer', async () => {
    const p = await start();
    const before = await Promise.all([
      transferMessages(p.ref.dns, axfrQuery('cluster.local', 'AXFR')),
      transferMessages(p.cand.dns, axfrQuery('cluster.local', 'AXFR')),
    ]);
    p.sandbox!.apply({
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'added', namespace: 'testns' },
      spec: {
        clusterIP: '10.96.0.99',
        clusterIPs: ['10.96.0.99'],
        ports: [{ name: 'http', port: 80, protocol: 'TCP' }],
      },
    });
    const has = (msgs: WireMessage[]): boolean =>
      recordSet(msgs).some((r) => r.startsWith('added.testns.svc.cluster.local.\t'));
    let after: WireMessage[][] = [];
    await waitFor(
      () => 'both servers to transfer the added Service',
      async () => {
        after = await Promise.all([
          transferMessages(p.ref.dns, axfrQuery('cluster.local', 'AXFR')),
          transferMessages(p.cand.dns, axfrQuery('cluster.local', 'AXFR')),
        ]);
        return has(after[0]!) && has(after[1]!);
      },
      { everyMs: 200 },
    );
    expect(recordSet(after[1]!, false)).toEqual(recordSet(after[0]!, false));
    // The serial is the time of the last change: never older than before the change.
    expect(soaSerial(after[1]!)).toBeGreaterThanOrEqual(soaSerial(before[1]));
    expect(soaSerial(after[0]!)).toBeGreaterThanOrEqual(soaSerial(before[0]));
  }, 120_000);

  it('refusals and errors: UDP, a client not in `to`, IXFR without SOA, a name inside the zone', async () => {
    const p = await start();
    const result = newResult('transfer-errors');
    const queries: QuerySpec[] = [];
    let id = 100;
    for (const proto of ['udp', 'tcp'] as const)
      for (const edns of [undefined, 1232])
        for (const [name, type] of [
          ['example.org', 'AXFR'],
          ['example.org', 'IXFR'],
          ['example.net', 'AXFR'],
          ['www.example.org', 'AXFR'],
          ['cluster.local', 'IXFR'],
          ['svc1.testns.svc.cluster.local', 'AXFR'],
        ] as const)
          if (!(proto === 'tcp' && type === 'AXFR' && name === 'example.org'))
            queries.push({ name, type, proto, id: id++, edns });
    await runQueries(p, result, queries, ['transfer', 'file', 'kubernetes']);
    assertResult(result, queries.length);
  }, 120_000);

  it('NOTIFY at start goes to the `to` address of the file zone, once per process', async () => {
    const p = await start();
    const notified = (server: 'coredns' | 'clusterdns'): number =>
      p.upstreamsOf[server][0]!.received.filter((r) => r.name.toLowerCase() === 'notify.test.' && r.type === 'SOA')
        .length;
    await waitFor(
      () => `both servers to notify: coredns ${notified('coredns')}, clusterdns ${notified('clusterdns')}`,
      () => notified('coredns') > 0 && notified('clusterdns') > 0,
    );
    // Once both processes have ended nothing more can arrive: clusterdns's query threads (it runs
    // one per CPU here) must not have notified besides the main thread.
    await p.stop();
    pair = null;
    expect(notified('clusterdns')).toBe(notified('coredns'));
  }, 60_000);
});
