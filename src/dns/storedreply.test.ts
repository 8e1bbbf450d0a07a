import * as dnsPacket from 'dns-packet';
import { describe, expect, it } from 'vitest';
import { Flag } from './constants.js';
import { replayStored, setTtls } from './storedreply.js';
import { forEachRecord, storeBytes } from './wire.js';

function reply(name: string): Buffer {
  return dnsPacket.encode({
    id: 0,
    type: 'response',
    flags: dnsPacket.AUTHORITATIVE_ANSWER,
    questions: [{ name, type: 'A', class: 'IN' }],
    answers: [{ name, type: 'A', class: 'IN', ttl: 30, data: '10.0.0.1' }],
  });
}

describe('replayStored', () => {
  const stored = reply('svc.cluster.local');
  const questionEnd = 12 + 'svc.cluster.local'.length + 2 + 4;

  it('patches id, flags and the question as the client spelled it, on a fresh copy', () => {
    const asked = dnsPacket.encode({
      id: 0x1234,
      type: 'query',
      flags: dnsPacket.RECURSION_DESIRED,
      questions: [{ name: 'SvC.Cluster.LOCAL', type: 'A', class: 'IN' }],
    });
    const s = storeBytes(stored);
    const out = replayStored(s, 0x1234, Flag.QR | Flag.AA | Flag.RD, asked, questionEnd, questionEnd);
    const m = dnsPacket.decode(out);
    expect(m.id).toBe(0x1234);
    expect(out.readUInt16BE(2)).toBe(Flag.QR | Flag.AA | Flag.RD);
    expect(m.questions![0]!.name).toBe('SvC.Cluster.LOCAL');
    expect(m.answers!.map((a) => a.name)).toEqual(['svc.cluster.local']);
    // The stored bytes are not touched.
    expect(Buffer.from(s, 'latin1').equals(stored)).toBe(true);
  });

  it('keeps the stored question when the client asked a name of another length', () => {
    const asked = dnsPacket.encode({
      id: 7,
      type: 'query',
      questions: [{ name: 'other.cluster.local', type: 'A', class: 'IN' }],
    });
    const out = replayStored(storeBytes(stored), 7, Flag.QR, asked, questionEnd + 2, questionEnd);
    expect(dnsPacket.decode(out).questions![0]!.name).toBe('svc.cluster.local');
  });

  it('setTtls writes every listed TTL', () => {
    const out = Buffer.from(stored);
    const ttlOffsets: number[] = [];
    forEachRecord(out, (_section, _rr, typeOff) => void ttlOffsets.push(typeOff + 4));
    setTtls(out, ttlOffsets, 7);
    expect((dnsPacket.decode(out).answers![0] as { ttl?: number }).ttl).toBe(7);
  });
});
