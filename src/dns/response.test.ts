import { describe, expect, it } from 'vitest';
import { classify, typify } from './response.js';

describe('response.Classify', () => {
  it('success / denial / error like response.Classify', () => {
    expect(classify(0, 1, false)).toBe('success');
    expect(classify(0, 2, true)).toBe('success');
    expect(classify(0, 0, true)).toBe('denial');
    expect(classify(0, 0, false)).toBe('success');
    expect(classify(3, 0, true)).toBe('denial');
    expect(classify(3, 0, false)).toBe('denial');
    expect(classify(3, 1, false)).toBe('error');
    for (const rc of [1, 2, 4, 5, 9, 16]) expect(classify(rc, 0, false), String(rc)).toBe('error');
  });
});

describe("response.Typify (the log's {/log/type}, the cache's buckets)", () => {
  it('names like response.Typify', () => {
    expect(typify({ rcode: 0, answers: 1, authoritySoa: false, authorityNs: 0, opcode: 0, qtype: 1 })).toBe('NOERROR');
    expect(typify({ rcode: 0, answers: 0, authoritySoa: false, authorityNs: 0, opcode: 0, qtype: 1 })).toBe('NOERROR');
    expect(typify({ rcode: 0, answers: 0, authoritySoa: true, authorityNs: 0, opcode: 0, qtype: 1 })).toBe('NODATA');
    expect(typify({ rcode: 3, answers: 0, authoritySoa: true, authorityNs: 0, opcode: 0, qtype: 1 })).toBe('NXDOMAIN');
    expect(typify({ rcode: 3, answers: 0, authoritySoa: false, authorityNs: 0, opcode: 0, qtype: 1 })).toBe(
      'OTHERERROR',
    );
    expect(typify({ rcode: 2, answers: 0, authoritySoa: false, authorityNs: 0, opcode: 0, qtype: 1 })).toBe(
      'SERVERERROR',
    );
    expect(typify({ rcode: 4, answers: 0, authoritySoa: false, authorityNs: 0, opcode: 0, qtype: 1 })).toBe(
      'SERVERERROR',
    );
    expect(typify({ rcode: 5, answers: 0, authoritySoa: false, authorityNs: 0, opcode: 0, qtype: 1 })).toBe(
      'OTHERERROR',
    );
    expect(typify({ rcode: 0, answers: 0, authoritySoa: false, authorityNs: 2, opcode: 0, qtype: 1 })).toBe(
      'DELEGATION',
    );
    expect(typify({ rcode: 0, answers: 0, authoritySoa: false, authorityNs: 0, opcode: 0, qtype: 252 })).toBe('META');
    expect(typify({ rcode: 0, answers: 0, authoritySoa: false, authorityNs: 0, opcode: 0, qtype: 251 })).toBe('META');
    expect(typify({ rcode: 0, answers: 0, authoritySoa: false, authorityNs: 0, opcode: 4, qtype: 6 })).toBe('META');
    expect(typify({ rcode: 0, answers: 0, authoritySoa: false, authorityNs: 0, opcode: 5, qtype: 6 })).toBe('UPDATE');
  });
});

describe("response.Typify: the cache's extra facts", () => {
  it('an expired signature is OTHERERROR; an answer that misses the question is NODATA with an SOA, else OTHERERROR', () => {
    const base = { rcode: 0, answers: 1, authoritySoa: false, authorityNs: 0, opcode: 0, qtype: 1 };
    expect(typify({ ...base, expiredSignature: true })).toBe('OTHERERROR');
    expect(typify({ ...base, answerMissesQuestion: true })).toBe('OTHERERROR');
    expect(typify({ ...base, answerMissesQuestion: true, authoritySoa: true })).toBe('NODATA');
    expect(typify({ ...base, rcode: 3, authoritySoa: true })).toBe('NXDOMAIN');
    expect(typify({ ...base, qtype: 252, expiredSignature: true })).toBe('META');
  });
});
