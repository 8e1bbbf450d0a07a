/**
 * The shed stack's overload rule (src/server/shed.ts) on an injected clock: a burst the server
 * clears within OVERLOAD_MS is served whole, newest first; once the stack has not emptied for
 * that long, queries that waited over STALE_MS are dropped and counted, and fresh ones served.
 */
import { describe, expect, it } from 'vitest';
import type * as dgram from 'node:dgram';
import { ShedStack, type ShedItem } from './shed.js';

const item = (port: number): ShedItem => ({
  sock: null as unknown as dgram.Socket,
  msg: Buffer.alloc(0),
  address: '127.0.0.1',
  port,
  family: 1,
  localPort: 53,
});

/** Let the stack's scheduled turns run (each is a setImmediate). */
const turns = async (n: number): Promise<void> => {
  for (let i = 0; i < n; i++) await new Promise((ok) => setImmediate(ok));
};

describe('ShedStack', () => {
  it('serves a short burst whole, newest first, however long its queries waited', async () => {
    let now = 1000;
    const served: number[] = [];
    let dropped = 0;
    const stack = new ShedStack(
      'dns://:0-burst',
      (i) => served.push(i.port),
      () => dropped++,
      () => now,
    );
    for (let p = 1; p <= 40; p++) stack.push(item(p));
    // 50 ms later (under OVERLOAD_MS since the stack filled): every query is stale but served.
    now += 50;
    await turns(5);
    expect(served).toEqual(Array.from({ length: 40 }, (_, i) => 40 - i));
    expect(dropped).toBe(0);
  });

  it('under a lasting overload drops what waited too long and serves what is fresh', async () => {
    let now = 1000;
    const served: number[] = [];
    let dropped = 0;
    const stack = new ShedStack(
      'dns://:0-overload',
      (i) => served.push(i.port),
      () => dropped++,
      () => now,
    );
    for (let p = 1; p <= 100; p++) stack.push(item(p));
    // The stack has held queries for 150 ms without emptying; then 3 fresh ones arrive.
    now += 150;
    for (let p = 101; p <= 103; p++) stack.push(item(p));
    now += 1;
    await turns(10);
    expect(served).toEqual([103, 102, 101]);
    expect(dropped).toBe(100);
    expect(stack.pending).toBe(0);
    // Emptied: the next burst is a burst again.
    for (let p = 201; p <= 203; p++) stack.push(item(p));
    now += 50;
    await turns(3);
    expect(served.slice(3)).toEqual([203, 202, 201]);
    expect(dropped).toBe(100);
  });
});
