/**
 * The cloud zones' replication (replicate.ts) between a ReplicationHub and a ReplicaClient wired
 * in process, every message crossing as a structured clone as between threads: a thread's zones
 * are the main thread's (the same transfer, record for record), after the snapshot and after each
 * publish; malformed messages are refused where they arrive.
 */
import { describe, expect, it } from 'vitest';
import { ReplicaClient, ReplicationHub } from '../server/replication.js';
import { parseFromThread, parseToThread, type ToThread } from '../server/threads-protocol.js';
import type { ZoneData } from '../zone/zone.js';
import { FetchedZone } from './fetched.js';
import { HostedZones } from './hosted.js';
import { recordFromText } from './records.js';
import { followZones, offerZones, parseZonesFeed, zonesKey } from './replicate.js';

function zone(origin: string, lines: readonly string[]): FetchedZone {
  const z = new FetchedZone(origin);
  for (const l of lines) {
    const r = recordFromText(l);
    try {
      if (r !== null) z.insert(r);
    } catch {
      // An NSEC3 record: refused by the zone, and so not kept for the threads either.
    }
  }
  z.seal();
  return z;
}

/** What answering reads of a zone: its transfer (every record, in order) and its lookup structure. */
function served(z: ZoneData): unknown {
  return {
    transfer: z.soa === null ? [] : [...z.transferRecords(0)],
    apex: [z.soa, z.ns, z.sigSoa, z.sigNs],
    elems: z.elems,
  };
}

/** A hub and one replica, each direction a structured clone checked where it arrives. */
function wire(): { hub: ReplicationHub; replica: ReplicaClient; deliver: () => void } {
  const hub = new ReplicationHub();
  const toThread: ToThread[] = [];
  const peer = { postMessage: (m: ToThread) => toThread.push(m) };
  const replica = new ReplicaClient({
    postMessage: (m: unknown) => {
      const f = parseFromThread(structuredClone(m));
      if (f.t === 'sub' || f.t === 'unsub') hub.handle(peer, f);
    },
  });
  const deliver = (): void => {
    for (const m of toThread.splice(0)) {
      const t = parseToThread(structuredClone(m));
      if (t.t === 'feed') replica.handle(t);
    }
  };
  return { hub, replica, deliver };
}

function hosted(): HostedZones {
  const h = new HostedZones();
  h.add('example.org.', 'ZPRIV');
  h.add('example.org.', 'ZPUB');
  h.add('example.net.', 'ZNET');
  return h;
}

describe('cloud zone replication', () => {
  it("a thread's zones are the main thread's after the snapshot and after each publish", async () => {
    const { hub, replica, deliver } = wire();
    const main = hosted();
    const [priv, pub, net] = main.all();
    priv!.data = zone('example.org.', [
      'example.org. 900 IN SOA ns. hostmaster.example.org. 1 7200 900 1209600 86400',
      'www.example.org. 60 IN TXT "private"',
    ]);
    pub!.data = zone('example.org.', [
      'example.org. 900 IN SOA ns. hostmaster.example.org. 2 7200 900 1209600 86400',
      'example.org. 900 IN NS ns.example.org.',
      'www.example.org. 300 IN CNAME web.example.com.',
      '*.w.example.org. 60 IN A 192.0.2.7',
      'sub.example.org. 60 IN NS ns.sub.example.org.',
      'ns.sub.example.org. 60 IN A 192.0.2.53',
      'x.example.org. 60 IN NSEC3 1 0 0 - 2T7B4G4VSA5SMI47K61MV5BV1A22BOJR A',
    ]);
    // example.net's hosted zone was never listed: empty, SERVFAIL in every thread.
    const key = zonesKey('route53', [['example.org'], '53'], 0, ['config']);
    const offer = offerZones(hub, key, main);
    const thread = hosted();
    const followed = followZones(replica, key, thread);
    deliver();
    const unsubscribe = await followed;
    const same = (): void => {
      main.all().forEach((h, i) => expect(served(thread.all()[i]!.data), h.id).toEqual(served(h.data)));
      expect(thread.all()[2]!.data.soa).toBeNull();
    };
    same();
    expect(pub!.data.elems.size).toBe(4);
    expect(net!.data.soa).toBeNull();
    pub!.data = zone('example.org.', [
      'example.org. 900 IN SOA ns. hostmaster.example.org. 3 7200 900 1209600 86400',
      'www.example.org. 300 IN A 192.0.2.1',
    ]);
    offer.publish();
    deliver();
    same();
    unsubscribe();
    offer.withdraw();
  });

  it('refuses a message that is not zones of records, and a thread whose zones do not match', async () => {
    expect(() => parseZonesFeed({ op: 'zone', zones: [] })).toThrow('cloud zone feed: message is not zones');
    expect(() => parseZonesFeed({ op: 'zones', zones: [[{ name: 'a.', type: 1 }]] })).toThrow(
      'cloud zone feed: a record is not a zone record',
    );
    const { hub, replica, deliver } = wire();
    const key = zonesKey('clouddns', [], 0, []);
    offerZones(hub, key, hosted());
    const one = new HostedZones();
    one.add('example.org.', 'p:z');
    const followed = followZones(replica, key, one);
    deliver();
    await expect(followed).rejects.toThrow('cloud zone feed: 3 zones for 1');
  });
});
