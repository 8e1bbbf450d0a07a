/**
 * dynupdate with query threads (zone.ts, docs/multicore.md §2): the main thread owns the zone, a
 * query thread passes the UPDATEs it receives to it, and an UPDATE's reply (from any thread)
 * waits until every thread installed the change. The threads here are the real hub and replica
 * clients wired as src/server/threads.ts wires them (each message cloned and checked where it
 * arrives), with each direction of each thread's port held in a queue the test delivers by hand,
 * so "not before every thread has it" is checked step by step, with no timing.
 */
import { describe, expect, it } from 'vitest';
import { Rcode } from '../../src/dns/constants.js';
import { parseZoneRecords } from '../../src/dns/zonefile/parser.js';
import type { ZoneRecord } from '../../src/dns/zonefile/record.js';
import { logger } from '../../src/log.js';
import { ReplicaClient, ReplicationHub } from '../../src/server/replication.js';
import { parseFromThread, parseToThread } from '../../src/server/threads-protocol.js';
import { DEFAULT_LIMITS } from './engine.js';
import type { DynupdateConfig } from './setup.js';
import { captureLogs } from '../../test/helpers/logs.js';
import { UpdatableZone } from './zone.js';

const ORIGIN = 'example.org.';
const SEED = `$ORIGIN example.org.
@ 60 IN SOA ns hostmaster 1 3600 600 86400 60
@ 60 IN NS ns
ns 60 IN A 192.0.2.53
`;
const CFG: DynupdateConfig = {
  zone: ORIGIN,
  seed: 'db.example.org',
  database: null,
  permissions: [{ key: 'k.', name: '*', types: new Set(), allTypes: true }],
  limits: DEFAULT_LIMITS,
};
const KEY = 'dynupdate:test';
const log = logger('dynupdate');

function seed(): ZoneRecord[] {
  const { records, error } = parseZoneRecords(SEED, { origin: ORIGIN, file: 'seed' });
  if (error) throw error;
  return records;
}

function wireName(name: string): Buffer {
  const labels = name.split('.').filter((l) => l !== '');
  return Buffer.concat([...labels.map((l) => Buffer.concat([Buffer.of(l.length), Buffer.from(l)])), Buffer.of(0)]);
}

/** An UPDATE of example.org. adding `NAME 60 IN A 192.0.2.1`, as the chain sees it (TSIG removed). */
function update(name: string): Buffer {
  const head = Buffer.alloc(12);
  head.writeUInt16BE(5 << 11, 2);
  head.writeUInt16BE(1, 4);
  head.writeUInt16BE(1, 8);
  return Buffer.concat([
    head,
    wireName(ORIGIN),
    Buffer.from([0, 6, 0, 1]),
    wireName(name),
    Buffer.from([0, 1, 0, 1, 0, 0, 0, 60, 0, 4, 192, 0, 2, 1]),
  ]);
}

const has = (z: UpdatableZone, name: string): boolean => z.state.records.some((r) => r.name === name);
const serial = (z: UpdatableZone): number | undefined => z.state.data.soa?.serial;

/** A query thread's two port directions, each a queue delivered by hand. */
interface Port {
  readonly replica: ReplicaClient;
  readonly peer: { postMessage(m: unknown): void };
  /** Main → thread messages not delivered yet. */
  readonly toThread: (() => void)[];
  /** Thread → main messages not delivered yet. */
  readonly toMain: (() => void)[];
}

function wire(hub: ReplicationHub): Port {
  const toThread: (() => void)[] = [];
  const toMain: (() => void)[] = [];
  const peer = {
    postMessage: (m: unknown) => {
      const c = structuredClone(m);
      toThread.push(() => {
        const t = parseToThread(c);
        if (t.t === 'feed' || t.t === 'res') replica.handle(t);
      });
    },
  };
  const replica = new ReplicaClient({
    postMessage: (m: unknown) => {
      const c = structuredClone(m);
      toMain.push(() => {
        const f = parseFromThread(c);
        if (f.t === 'sub' || f.t === 'unsub' || f.t === 'ask' || f.t === 'req' || f.t === 'applied')
          hub.handle(peer, f);
      });
    },
  });
  return { replica, peer, toThread, toMain };
}

/** Deliver what is queued (and what that sends) until nothing is left; microtasks run between. */
async function drain(ports: readonly Port[], which: 'toThread' | 'toMain' | 'both' = 'both'): Promise<void> {
  for (;;) {
    await new Promise((r) => setImmediate(r));
    const queues = ports.flatMap((p) =>
      which === 'both' ? [p.toThread, p.toMain] : [which === 'toThread' ? p.toThread : p.toMain],
    );
    const batch = queues.flatMap((q) => q.splice(0));
    if (batch.length === 0) return;
    for (const fn of batch) fn();
  }
}

async function setup(): Promise<{
  hub: ReplicationHub;
  main: UpdatableZone;
  ports: Port[];
  threads: UpdatableZone[];
  changes: () => number;
}> {
  const hub = new ReplicationHub();
  let changed = 0;
  const main = UpdatableZone.owner(CFG, seed(), log, hub, KEY, () => changed++);
  main.start();
  const ports = [wire(hub), wire(hub)];
  const following = ports.map((p) => UpdatableZone.follow(CFG, log, p.replica, KEY));
  await drain(ports);
  const threads = await Promise.all(following);
  return { hub, main, ports, threads, changes: () => changed };
}

describe('dynupdate with query threads', () => {
  it('a thread starts from the main thread’s zone as it is, not from the seed', async () => {
    const hub = new ReplicationHub();
    const main = UpdatableZone.owner(CFG, seed(), log, hub, KEY, () => undefined);
    main.start();
    expect(await main.update('k.', update('early.example.org.'))).toBe(Rcode.NOERROR);
    const port = wire(hub);
    const following = UpdatableZone.follow(CFG, log, port.replica, KEY);
    await drain([port]);
    const thread = await following;
    expect(has(thread, 'early.example.org.')).toBe(true);
    expect(serial(thread)).toBe(2);
  });

  it('a thread whose zone the main thread does not offer fails its start and leaves the channel', async () => {
    const hub = new ReplicationHub();
    const port = wire(hub);
    // The key of a configuration the main thread no longer runs: nothing will be offered.
    const following = UpdatableZone.follow(CFG, log, port.replica, 'dynupdate:withdrawn', 50);
    await drain([port]);
    expect(hub.subscriberCount('dynupdate:withdrawn')).toBe(1);
    await expect(following).rejects.toThrow('dynupdate: the main thread did not send zone example.org. within 0.05s');
    await drain([port]);
    expect(hub.subscriberCount('dynupdate:withdrawn')).toBe(0);
  });

  it("the main thread's UPDATE is answered only once every thread installed it; then NOTIFY", async () => {
    const { main, ports, threads, changes } = await setup();
    let rcode: number | null = null;
    const reply = main.update('k.', update('host.example.org.'));
    expect(typeof reply).not.toBe('number');
    void Promise.resolve(reply).then((r) => (rcode = r));
    // Applied in the main thread's own copy before anything else.
    expect(has(main, 'host.example.org.')).toBe(true);
    expect(serial(main)).toBe(2);
    // Thread 1 installs it and acknowledges: the reply still waits for thread 2.
    await drain([ports[0]!]);
    expect(has(threads[0]!, 'host.example.org.')).toBe(true);
    expect(has(threads[1]!, 'host.example.org.')).toBe(false);
    expect(rcode).toBeNull();
    expect(changes()).toBe(0);
    // Thread 2 has it but its acknowledgement has not reached the main thread.
    await drain([ports[1]!], 'toThread');
    expect(has(threads[1]!, 'host.example.org.')).toBe(true);
    expect(rcode).toBeNull();
    await drain([ports[1]!], 'toMain');
    expect(rcode).toBe(Rcode.NOERROR);
    expect(serial(threads[1]!)).toBe(2);
    expect(changes()).toBe(1);
  });

  it("a query thread's UPDATE is applied by the main thread and answered after every thread has it", async () => {
    const { main, ports, threads, changes } = await setup();
    let rcode: number | null = null;
    void Promise.resolve(threads[1]!.update('k.', update('t.example.org.'))).then((r) => (rcode = r));
    // Nothing changes in the thread itself: it asks the main thread.
    expect(has(threads[1]!, 't.example.org.')).toBe(false);
    await drain([ports[1]!], 'toMain');
    expect(has(main, 't.example.org.')).toBe(true);
    expect(rcode).toBeNull();
    await drain(ports);
    expect(rcode).toBe(Rcode.NOERROR);
    for (const z of [main, ...threads]) expect(serial(z)).toBe(2);
    expect(changes()).toBe(1);
    // A refused UPDATE (a key without a rule) changes nothing and is answered at once.
    void Promise.resolve(threads[0]!.update('other.', update('r.example.org.'))).then((r) => (rcode = r));
    await drain(ports);
    expect(rcode).toBe(Rcode.REFUSED);
    for (const z of [main, ...threads]) expect(has(z, 'r.example.org.')).toBe(false);
  });

  it('a thread that ends does not hold a reply; without the main thread the UPDATE fails', async () => {
    const { hub, main, ports, threads } = await setup();
    let rcode: number | null = null;
    void Promise.resolve(main.update('k.', update('gone.example.org.'))).then((r) => (rcode = r));
    await drain([ports[0]!]);
    expect(rcode).toBeNull();
    hub.forget(ports[1]!.peer as never);
    await drain([]);
    expect(rcode).toBe(Rcode.NOERROR);
    // The main thread's configuration is gone (shutdown): a thread's UPDATE gets SERVFAIL.
    main.close();
    const logs = captureLogs();
    try {
      void Promise.resolve(threads[0]!.update('k.', update('late.example.org.'))).then((r) => (rcode = r));
      await drain(ports);
      expect(rcode).toBe(Rcode.SERVFAIL);
      expect(logs.lines).toEqual([
        `[ERROR] plugin/dynupdate: UPDATE for example.org. failed: no answer for ${KEY} in the main thread`,
      ]);
    } finally {
      logs.restore();
    }
  });
});
