/**
 * The lock-free shared table (sharedtable.ts): one writer, readers in other threads reading while
 * it writes.
 */
import { Worker } from 'node:worker_threads';
import { describe, expect, it } from 'vitest';
import { SharedTableReader, SharedTableWriter } from './sharedtable.js';

describe('shared table', () => {
  it('sets, replaces, deletes and reads back; non-ASCII keys and values survive', () => {
    const w = new SharedTableWriter(1024, 4096);
    const r = new SharedTableReader(w.generation);
    expect(w.set('s:a', '{"x":1}')).toBe(true);
    expect(w.set('s:ü-ключ', '"värde 値"')).toBe(true);
    expect(r.get('s:a')).toBe('{"x":1}');
    expect(r.get('s:ü-ключ')).toBe('"värde 値"');
    expect(w.set('s:a', '2')).toBe(true);
    expect(r.get('s:a')).toBe('2');
    expect(w.delete('s:a')).toBe(true);
    expect(r.get('s:a')).toBeUndefined();
    expect(r.get('s:b')).toBeUndefined();
    expect(w.set('', '')).toBe(true);
    expect(r.get('')).toBe('');
    expect(w.stats.keys).toBe(3);
  });

  it('says when the arena or the slots are full; a rebuild starts a new generation the readers adopt', () => {
    const w = new SharedTableWriter(1024, 256);
    let i = 0;
    while (w.set(`k${i}`, 'v'.repeat(20))) i++;
    expect(i).toBeGreaterThan(0);
    expect(i).toBeLessThan(20);
    const r = new SharedTableReader(w.generation);
    const old = w.generation;
    w.rebuild(1000, 100, (set) => {
      for (let j = 0; j < 1000; j++) set(`k${j}`, String(j));
    });
    expect(w.generation.sab).not.toBe(old.sab);
    // The old generation is unchanged for a reader that has not adopted the new one yet.
    expect(r.get('k0')).toBe('v'.repeat(20));
    expect(r.get('k999')).toBeUndefined();
    r.adopt(w.generation);
    expect(r.get('k999')).toBe('999');
    expect(w.stats.keys).toBe(1000);
    // Slots stay under half full.
    expect(w.stats.slots).toBeGreaterThanOrEqual(2000);
  });

  it('a reader in another thread never sees a torn or unknown value while the writer rewrites it', async () => {
    const w = new SharedTableWriter(1024, 64 << 20);
    // Each version of each key is a text whose tail repeats its head: a torn read breaks that.
    const value = (key: number, version: number): string => {
      const head = `${key}:${version}:`;
      return head + head.repeat(1 + ((key * 7 + version) % 40));
    };
    const KEYS = 64;
    for (let k = 0; k < KEYS; k++) w.set(`k${k}`, value(k, 0));
    // vitest runs the TypeScript source; the worker imports the built module (npm test builds first).
    const url = new URL('../../dist/src/util/sharedtable.js', import.meta.url).href;
    const src = `
      const { workerData, parentPort } = require('node:worker_threads');
      import(workerData.url).then(({ SharedTableReader }) => {
        const r = new SharedTableReader({ sab: workerData.sab });
        let reads = 0, bad = [], lastVersion = new Array(${KEYS}).fill(0), backwards = 0, last = false;
        for (;;) {
          for (let k = 0; k < ${KEYS}; k++) {
            const v = r.get('k' + k);
            reads++;
            const m = v === undefined ? null : /^(\\d+):(\\d+):/.exec(v);
            if (!m || Number(m[1]) !== k) { bad.push(String(v).slice(0, 40)); continue; }
            const head = m[0], body = v.slice(head.length);
            if (body.length === 0 || body.length % head.length !== 0 || body !== head.repeat(body.length / head.length)) bad.push(v.slice(0, 40));
            const ver = Number(m[2]);
            if (ver < lastVersion[k]) backwards++;
            lastVersion[k] = ver;
          }
          // One more pass after 'done': it was written after every last version.
          if (last) break;
          last = r.get('done') === '1';
        }
        parentPort.postMessage({ reads, bad: bad.slice(0, 5), badCount: bad.length, backwards, final: lastVersion });
      });
    `;
    const worker = new Worker(src, { eval: true, workerData: { sab: w.generation.sab, url } });
    const result = new Promise<{ reads: number; bad: string[]; badCount: number; backwards: number; final: number[] }>(
      (resolve, reject) => {
        worker.once('message', resolve);
        worker.once('error', reject);
      },
    );
    // Wait until the reader runs, so the writes below overlap its reads.
    await new Promise<void>((resolve) => worker.once('online', () => resolve()));
    const VERSIONS = 300;
    for (let v = 1; v <= VERSIONS; v++) for (let k = 0; k < KEYS; k++) expect(w.set(`k${k}`, value(k, v))).toBe(true);
    w.set('done', '1');
    const r = await result;
    await worker.terminate();
    expect(r.badCount, r.bad.join(' | ')).toBe(0);
    expect(r.backwards).toBe(0);
    // After `done` was seen, every key's last read is the last version written before it.
    expect(r.final).toEqual(new Array(KEYS).fill(VERSIONS));
  });
});
