/**
 * ConnectionAdmission, the one admission rule of plain TCP, DoT and DoH listeners: a source at its
 * cap is refused, the listener's cap evicts the connection idle the longest, activity reorders,
 * and the sweep's timer runs only while connections are open. (The listeners' own tests,
 * tcp-limits.test.ts and doh.test.ts, check the rule on real sockets.)
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { ConnectionAdmission } from './admission.js';

interface Conn {
  readonly id: number;
  readonly source: string;
}

function make(): { a: ConnectionAdmission<Conn>; closed: number[]; sweeps: () => number } {
  const closed: number[] = [];
  let sweeps = 0;
  const a = new ConnectionAdmission<Conn>(
    (c) => c.source,
    (c) => void closed.push(c.id),
    () => void sweeps++,
  );
  return { a, closed, sweeps: () => sweeps };
}

afterEach(() => {
  vi.useRealTimers();
});

describe('ConnectionAdmission', () => {
  it('refuses a source at its cap and counts it; other sources still come in', () => {
    const { a } = make();
    for (let i = 0; i < 2; i++) {
      expect(a.admit('10.0.0.1', 2, 100)).toBe(true);
      a.add({ id: i, source: '10.0.0.1' }, 1000);
    }
    expect(a.admit('10.0.0.1', 2, 100)).toBe(false);
    expect(a.refused).toBe(1);
    expect(a.admit('10.0.0.2', 2, 100)).toBe(true);
    expect(a.countFrom('10.0.0.1')).toBe(2);
    expect(a.countFrom('10.0.0.2')).toBe(1);
    a.stop();
  });

  it('evicts the connection idle the longest at the listener cap; touch moves one to the end', () => {
    const { a, closed } = make();
    const conns = [0, 1, 2].map((id) => ({ id, source: `10.0.0.${id}` }));
    for (const c of conns) {
      a.admit(c.source, 0, 3);
      a.add(c, 1000);
    }
    a.touch(conns[0]!);
    expect(a.admit('10.0.0.9', 0, 3)).toBe(true);
    // Connection 1 was idle the longest once 0 had activity; it is closed and forgotten even
    // though its close did not report back.
    expect(closed).toEqual([1]);
    expect(a.evicted).toBe(1);
    expect([...a.values()].map((c) => c.id)).toEqual([2, 0]);
    expect(a.countFrom('10.0.0.1')).toBe(0);
    a.stop();
  });

  it('runs the sweep only while connections are open', () => {
    vi.useFakeTimers();
    const { a, sweeps } = make();
    const c = { id: 1, source: 's' };
    a.admit('s', 0, 10);
    a.add(c, 100);
    vi.advanceTimersByTime(250);
    expect(sweeps()).toBe(2);
    expect(a.remove(c)).toBe(true);
    expect(a.remove(c)).toBe(false);
    vi.advanceTimersByTime(1000);
    expect(sweeps()).toBe(2);
    expect(a.size).toBe(0);
  });
});
