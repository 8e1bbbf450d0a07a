import type { Answer } from 'dns-packet';
import * as dnsPacket from 'dns-packet';
import { describe, expect, it } from 'vitest';
import { Qtype } from './constants.js';
import { ipv6ToBytes } from './name.js';
import { copyBytes, WireName, WireRecordBatch } from './recordbatch.js';

/** What dns-packet's own codec writes for `rr` (the bytes the transfer plugin sends for objects). */
function reference(rr: Answer): Buffer {
  const codec = (dnsPacket as unknown as { answer: { encode(a: Answer): Buffer } }).answer;
  return Buffer.from(codec.encode(rr));
}

function recordBytes(b: WireRecordBatch, i: number): Buffer {
  return Buffer.from(b.buffer.subarray(b.start(i), b.end(i)));
}

describe('WireRecordBatch', () => {
  const zone = new WireName().set('cluster.local');
  const base = new WireName().setPrefixed('svc.ns.svc', zone);

  it('writes A, AAAA, SRV and CNAME records byte for byte as dns-packet encodes them', () => {
    const b = new WireRecordBatch();
    const port = new WireName().setPrefixed('_http._tcp', base);
    const host = new WireName().setPrefixed('web-0', base);
    const target = new WireName().set('example.org');
    b.beginRecord(base, Qtype.A, 5);
    b.ipv4(0x0a600014);
    b.endRecord();
    b.beginRecord(host, Qtype.AAAA, 4294967295);
    b.bytes(ipv6ToBytes('fd00::1')!);
    b.endRecord();
    b.beginRecord(port, Qtype.SRV, 5);
    b.uint16(0);
    b.uint16(33);
    b.uint16(8080);
    b.name(host);
    b.endRecord();
    b.beginRecord(base, Qtype.CNAME, 0);
    b.name(target);
    b.endRecord();
    const expected: Answer[] = [
      { name: 'svc.ns.svc.cluster.local', type: 'A', class: 'IN', ttl: 5, data: '10.96.0.20' },
      { name: 'web-0.svc.ns.svc.cluster.local', type: 'AAAA', class: 'IN', ttl: 4294967295, data: 'fd00::1' },
      {
        name: '_http._tcp.svc.ns.svc.cluster.local',
        type: 'SRV',
        class: 'IN',
        ttl: 5,
        data: { priority: 0, weight: 33, port: 8080, target: 'web-0.svc.ns.svc.cluster.local' },
      },
      { name: 'svc.ns.svc.cluster.local', type: 'CNAME', class: 'IN', ttl: 0, data: 'example.org' },
    ];
    expect(b.count).toBe(4);
    expected.forEach((rr, i) => expect(recordBytes(b, i), rr.type).toEqual(reference(rr)));
    expect(b.byteLength).toBe(expected.reduce((n, rr) => n + reference(rr).length, 0));
    expect(b.answers().map((a) => a.name)).toEqual(expected.map((a) => a.name));
  });

  it('names dns-packet writes its own way (non-ASCII, the root) come out as dns-packet writes them', () => {
    const b = new WireRecordBatch();
    const root = new WireName().set('.');
    const odd = new WireName().setPrefixed('ünï', new WireName().set('cöde'));
    b.beginRecord(root, Qtype.NS, 5);
    b.name(odd);
    b.endRecord();
    b.beginRecord(odd, Qtype.A, 5);
    b.ipv4(0x0a000001);
    b.endRecord();
    expect(recordBytes(b, 0)).toEqual(reference({ name: '.', type: 'NS', class: 'IN', ttl: 5, data: 'ünï.cöde' }));
    expect(recordBytes(b, 1)).toEqual(
      reference({ name: 'ünï.cöde', type: 'A', class: 'IN', ttl: 5, data: '10.0.0.1' }),
    );
  });

  it('grows past its first buffer and record table, and starts over after reset', () => {
    const b = new WireRecordBatch(64, 2);
    const one = reference({ name: 'svc.ns.svc.cluster.local', type: 'A', class: 'IN', ttl: 5, data: '10.0.0.1' });
    for (let i = 0; i < 1000; i++) {
      b.beginRecord(base, Qtype.A, 5);
      b.ipv4(0x0a000001);
      b.endRecord();
    }
    expect(b.count).toBe(1000);
    expect(recordBytes(b, 0)).toEqual(one);
    expect(recordBytes(b, 999)).toEqual(one);
    expect(b.byteLength).toBe(1000 * one.length);
    b.reset();
    expect(b.count).toBe(0);
    expect(b.byteLength).toBe(0);
    b.beginRecord(base, Qtype.A, 5);
    b.ipv4(0x0a000002);
    b.endRecord();
    expect(b.answers()).toMatchObject([{ name: 'svc.ns.svc.cluster.local', data: '10.0.0.2' }]);
  });

  it('assembles names from labels, underscore labels (lower-cased) and a suffix as the dotted text would be', () => {
    const text = (w: WireName): Buffer => Buffer.from(w.bytes.subarray(0, w.length));
    const asText = (t: string): Buffer => text(new WireName().set(t));
    expect(text(new WireName().clear().underscoreLabel('HTTP').underscoreLabel('Tcp').end(base))).toEqual(
      asText('_http._tcp.svc.ns.svc.cluster.local'),
    );
    // A dot, a space or an empty name: the dotted text's labels, as the string path wrote them.
    expect(text(new WireName().clear().underscoreLabel('a.B').end(zone))).toEqual(asText('_a.b.cluster.local'));
    expect(text(new WireName().clear().underscoreLabel('').end(zone))).toEqual(asText('_.cluster.local'));
    expect(text(new WireName().clear().labels('pod.with.dots').labels('svc').end(zone))).toEqual(
      asText('pod.with.dots.svc.cluster.local'),
    );
  });

  it('copies short ranges in place and long ones natively, the same bytes either way', () => {
    const src = Buffer.from(Array.from({ length: 400 }, (_, i) => i & 255));
    for (const len of [0, 1, 60, 128, 129, 300]) {
      const dst = Buffer.alloc(420, 0xee);
      expect(copyBytes(src, 7, len, dst, 11)).toBe(len);
      expect(dst.subarray(11, 11 + len)).toEqual(src.subarray(7, 7 + len));
      expect(dst[10]).toBe(0xee);
      expect(dst[11 + len]).toBe(0xee);
    }
  });
});
