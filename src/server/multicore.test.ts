/**
 * The pieces of the query-thread mode that need no sockets (docs/multicore.md): sizing from the
 * cgroup CPU quota, the metrics totals, and the replication hub's ordering.
 */
import { describe, expect, it } from 'vitest';
import { aggregateMetrics, client, type MetricsJson } from '../metrics/registry.js';
import { ReplicaClient, ReplicationHub, type ReplicationChannel } from './replication.js';
import { parseFromThread, parseToThread, type ToThread } from './threads-protocol.js';
import { cgroupCpuLimit, resolveWorkers, threadsFor, threadsForMemory } from '../util/cpus.js';
import { fakeCgroupRoot as fakeRoot } from '../../test/helpers/cgroup.js';

describe('query threads are sized from the container CPU', () => {
  it('reads cgroup v2 cpu.max along the cgroup path (the smallest quota wins) and v1 cfs quota', () => {
    expect(cgroupCpuLimit(fakeRoot({ 'cpu.max': '200000 100000' }), null)).toBe(2);
    expect(cgroupCpuLimit(fakeRoot({ 'cpu.max': 'max 100000' }), null)).toBeNull();
    const nested = fakeRoot({ 'cpu.max': '400000 100000', 'kubepods/pod1/cpu.max': '150000 100000' });
    expect(cgroupCpuLimit(nested, '0::/kubepods/pod1\n')).toBe(1.5);
    expect(cgroupCpuLimit(fakeRoot({ 'cpu/cpu.cfs_quota_us': '50000', 'cpu/cpu.cfs_period_us': '100000' }), null)).toBe(
      0.5,
    );
    expect(
      cgroupCpuLimit(fakeRoot({ 'cpu/cpu.cfs_quota_us': '-1', 'cpu/cpu.cfs_period_us': '100000' }), null),
    ).toBeNull();
    expect(cgroupCpuLimit(fakeRoot({}), null)).toBeNull();
  });

  it('rounds the quota up, at most the usable CPUs, at least one', () => {
    expect(threadsFor(1.5, 8)).toBe(2);
    expect(threadsFor(0.5, 8)).toBe(1);
    expect(threadsFor(2, 8)).toBe(2);
    expect(threadsFor(16, 4)).toBe(4);
    expect(threadsFor(null, 3)).toBe(3);
  });

  it('leaves room in the memory limit: 160 MiB for the main thread, 96 MiB for each further thread', () => {
    const MiB = 1048576;
    expect(threadsForMemory(null)).toBe(Number.POSITIVE_INFINITY);
    // kubeadm's CoreDNS Deployment (170Mi): one thread.
    expect(threadsForMemory(170 * MiB)).toBe(1);
    expect(threadsForMemory(255 * MiB)).toBe(1);
    // The chart's default (256Mi): two.
    expect(threadsForMemory(256 * MiB)).toBe(2);
    expect(threadsForMemory(512 * MiB)).toBe(4);
    expect(threadsForMemory(64 * MiB)).toBe(1);
    // Sized by the smaller of the CPU quota and the memory room.
    const cpu4mem512 = fakeRoot({ 'cpu.max': '400000 100000', 'memory.max': String(512 * MiB) });
    expect(resolveWorkers(0, { CLUSTERDNS_CGROUP_ROOT: cpu4mem512 })).toBe(Math.min(4, threadsFor(4)));
    const cpu2 = fakeRoot({ 'cpu.max': '150000 100000', 'memory.max': 'max' });
    expect(resolveWorkers(0, { CLUSTERDNS_CGROUP_ROOT: cpu2 })).toBe(threadsFor(1.5));
  });

  it('sizes the threads from the CPU quota; -workers overrides the default', () => {
    const root = fakeRoot({ 'cpu.max': '100000 100000' });
    expect(resolveWorkers(0, { CLUSTERDNS_CGROUP_ROOT: root })).toBe(1);
    expect(resolveWorkers(3, { CLUSTERDNS_CGROUP_ROOT: root })).toBe(3);
    expect(resolveWorkers(3, {})).toBe(3);
    const four = fakeRoot({ 'cpu.max': '400000 100000' });
    expect(resolveWorkers(0, { CLUSTERDNS_CGROUP_ROOT: four })).toBe(threadsFor(4));
  });
});

/** A registry with the metric shapes a thread has, filled with `n`. */
async function threadMetrics(n: number): Promise<MetricsJson> {
  const r = new client.Registry();
  const c = new client.Counter({
    name: 'coredns_dns_requests_total',
    help: 'h',
    labelNames: ['server', 'type'],
    registers: [r],
  });
  c.labels('dns://:53', 'A').inc(n);
  const h = new client.Histogram({
    name: 'coredns_dns_request_duration_seconds',
    help: 'h',
    labelNames: ['server'],
    buckets: [0.001, 0.01],
    registers: [r],
  });
  for (let i = 0; i < n; i++) h.labels('dns://:53').observe(0.005);
  new client.Gauge({ name: 'coredns_cache_entries', help: 'h', registers: [r] }).set(n * 10);
  new client.Gauge({ name: 'coredns_build_info', help: 'h', labelNames: ['version'], registers: [r] })
    .labels('0.1.0')
    .set(1);
  new client.Gauge({ name: 'process_resident_memory_bytes', help: 'h', registers: [r] }).set(1000 + n);
  return (await r.getMetricsAsJSON()) as MetricsJson;
}

describe('one scrape for every thread', () => {
  it('sums counters, histograms and per-thread gauges; shared facts and process metrics are counted once', async () => {
    const text = await aggregateMetrics(await threadMetrics(3), [
      await threadMetrics(4),
      await threadMetrics(5),
    ]).metrics();
    expect(text).toContain('coredns_dns_requests_total{server="dns://:53",type="A"} 12');
    expect(text).toContain('coredns_dns_request_duration_seconds_bucket{le="0.01",server="dns://:53"} 12');
    expect(text).toContain('coredns_dns_request_duration_seconds_bucket{le="0.001",server="dns://:53"} 0');
    expect(text).toContain('coredns_dns_request_duration_seconds_count{server="dns://:53"} 12');
    expect(text).toContain('coredns_cache_entries 120');
    expect(text).toContain('coredns_build_info{version="0.1.0"} 1');
    // The main thread's (the first list's) process metrics only.
    expect(text).toContain('process_resident_memory_bytes 1003');
  });
});

describe('index replication', () => {
  it('a subscriber gets the snapshot, then every later change, in order; one before the offer waits for it', () => {
    const hub = new ReplicationHub();
    const toThread: ToThread[] = [];
    const peer = { postMessage: (m: ToThread) => toThread.push(m) };
    const got: string[] = [];
    // Each direction crosses as a structured clone and is checked where it arrives.
    const replica = new ReplicaClient({
      postMessage: (m: unknown) => {
        const f = parseFromThread(structuredClone(m));
        if (f.t === 'sub' || f.t === 'unsub') hub.handle(peer, f);
      },
    });
    const channel = (key: string): ReplicationChannel<string> => ({
      key,
      parse: (m) => {
        if (typeof m !== 'string') throw new Error('not a string');
        return m;
      },
    });
    const unsubscribe = replica.subscribe(channel('k'), (m) => got.push(m));
    expect(hub.subscriberCount('k')).toBe(1);
    let state = ['a'];
    const offer = hub.offer(channel('k'), () => [...state]);
    state = ['a', 'b'];
    offer.publish('b');
    hub.offer(channel('other'), () => []).publish('x');
    const deliver = (): void => {
      for (const m of toThread.splice(0)) {
        const t = parseToThread(structuredClone(m));
        if (t.t === 'feed') replica.handle(t);
      }
    };
    deliver();
    expect(got).toEqual(['a', 'b']);
    // A withdrawn offer publishes nothing; a new offer of the key sends its snapshot to the subscriber.
    offer.withdraw();
    offer.publish('after the withdrawal');
    hub.offer(channel('k'), () => ['c']);
    deliver();
    expect(got).toEqual(['a', 'b', 'c']);
    unsubscribe();
    expect(hub.subscriberCount('k')).toBe(0);
  });

  it("a thread leaving one key does not count as having applied another key's change", async () => {
    const hub = new ReplicationHub();
    const peer = { postMessage: (_m: ToThread) => undefined };
    const channel = (key: string): ReplicationChannel<string> => ({
      key,
      parse: (m) => {
        if (typeof m !== 'string') throw new Error('not a string');
        return m;
      },
    });
    hub.handle(peer, { t: 'sub', key: 'a', id: 1 });
    hub.handle(peer, { t: 'sub', key: 'b', id: 2 });
    hub.offer(channel('a'), () => []);
    const b = hub.offer(channel('b'), () => []);
    let applied = false;
    const pending = b.publishApplied('change of b').then(() => {
      applied = true;
    });
    hub.handle(peer, { t: 'unsub', key: 'a' });
    await Promise.resolve();
    expect(applied).toBe(false);
    hub.handle(peer, { t: 'unsub', key: 'b' });
    await pending;
    expect(applied).toBe(true);
  });

  it("a replica's ask reaches the current offer of its key, checked by the channel; without one it is dropped", () => {
    const hub = new ReplicationHub();
    const peer = { postMessage: () => undefined };
    // The wire as threads.ts carries it: cloned, checked by parseFromThread, handed to the hub.
    const replica = new ReplicaClient({
      postMessage: (m: unknown) => {
        const f = parseFromThread(structuredClone(m));
        if (f.t === 'sub' || f.t === 'unsub' || f.t === 'ask') hub.handle(peer, f);
      },
    });
    const channel: ReplicationChannel<string, number> = {
      key: 'z',
      parse: (m) => String(m),
      parseAsk: (m) => {
        if (typeof m !== 'number') throw new Error('ask is not a number');
        return m;
      },
    };
    const asked: number[] = [];
    replica.ask(channel, 1); // no offer yet: dropped
    const offer = hub.offer(
      channel,
      () => [],
      (n) => asked.push(n),
    );
    replica.ask(channel, 2);
    expect(asked).toEqual([2]);
    expect(() => hub.handle(peer, { t: 'ask', key: 'z', msg: 'two' })).toThrow('ask is not a number');
    offer.withdraw();
    replica.ask(channel, 3);
    expect(asked).toEqual([2]);
  });

  it('a second subscription in a thread gets its own snapshot; a withdrawn new offer gives the key back to the old one', () => {
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
    const channel: ReplicationChannel<string> = { key: 'k', parse: (m) => String(m) };
    const old = hub.offer(channel, () => ['old']);
    const first: string[] = [];
    const second: string[] = [];
    replica.subscribe(channel, (m) => first.push(m));
    deliver();
    // A reload's new configuration subscribes while the old one still is: only it gets a snapshot.
    replica.subscribe(channel, (m) => second.push(m));
    deliver();
    expect(first).toEqual(['old']);
    expect(second).toEqual(['old']);
    expect(hub.subscriberCount('k')).toBe(1);
    // A new offer (a reload in the main thread) goes to every subscription; its start fails and it
    // is withdrawn: the old offer is current again, and the threads rebuild from it.
    const fresh = hub.offer(channel, () => ['new']);
    fresh.withdraw();
    old.publish('changed');
    deliver();
    expect(first).toEqual(['old', 'new', 'old', 'changed']);
    expect(second).toEqual(['old', 'new', 'old', 'changed']);
  });

  it('a request gets the answer of the current offer, checked where it arrives; without one it fails', async () => {
    const hub = new ReplicationHub();
    const toThread: ToThread[] = [];
    const peer = { postMessage: (m: ToThread) => toThread.push(m) };
    const replica = new ReplicaClient({
      postMessage: (m: unknown) => {
        const f = parseFromThread(structuredClone(m));
        if (f.t === 'req') hub.handle(peer, f);
      },
    });
    const deliver = async (): Promise<void> => {
      await new Promise((r) => setImmediate(r));
      for (const m of toThread.splice(0)) {
        const t = parseToThread(structuredClone(m));
        if (t.t === 'res') replica.handle(t);
      }
    };
    const channel: ReplicationChannel<string, number, number> = {
      key: 'q',
      parse: (m) => String(m),
      parseAsk: (m) => Number(m),
      parseReply: (m) => {
        if (typeof m !== 'number') throw new Error('reply is not a number');
        return m;
      },
    };
    const none = replica.request(channel, 1);
    await deliver();
    await expect(none).rejects.toThrow('no answer for q in the main thread');
    const offer = hub.offer(
      channel,
      () => [],
      undefined,
      (n) => Promise.resolve(n * 2),
    );
    const doubled = replica.request(channel, 21);
    await deliver();
    await expect(doubled).resolves.toBe(42);
    offer.withdraw();
    hub.offer(
      channel,
      () => [],
      undefined,
      () => Promise.resolve('not a number' as unknown as number),
    );
    const bad = replica.request(channel, 1);
    await deliver();
    await expect(bad).rejects.toThrow('reply is not a number');
  });

  it('a message that is not what its channel carries is refused where it arrives', () => {
    const replica = new ReplicaClient({ postMessage: () => undefined });
    const strict: ReplicationChannel<number> = {
      key: 'n',
      parse: (m) => {
        if (typeof m !== 'number') throw new Error('not a number');
        return m;
      },
    };
    replica.subscribe(strict, () => undefined);
    expect(() => replica.handle({ t: 'feed', key: 'n', msgs: ['1'] })).toThrow('not a number');
    expect(() => parseToThread({ t: 'reload', id: 1, source: { path: 'Corefile' }, ports: {} })).toThrow(
      'text is not a string',
    );
    expect(() => parseFromThread({ t: 'bogus' })).toThrow('unknown type');
  });
});
