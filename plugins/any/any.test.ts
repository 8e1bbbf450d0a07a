import { describe, expect, it } from 'vitest';
import { any } from './index.js';
import { decode } from '../../src/dns/message.js';
import { makeQuery, rcode } from '../../test/helpers/dns.js';
import { configError, dispenserFor, setupContext as fakeSetupContext, handlerOf } from '../../test/helpers/setup.js';
import { FakeNext } from '../../test/helpers/upstream.js';

describe('any', () => {
  it.each([
    [
      'any x',
      "plugin/any: Corefile:1 - Error during parsing: Wrong argument count or unexpected line ending after 'x'",
    ],
    ['any {\n foo\n}', "plugin/any: Corefile:1 - Error during parsing: Unexpected token '{', expecting argument"],
  ])('setup error %j', (text, message) => {
    expect(configError(() => any.setup(dispenserFor(text, 'any'), fakeSetupContext()), text).describe()).toBe(message);
  });

  it('answers ANY with one HINFO record, owner as asked, TTL 8482', () => {
    const next = new FakeNext(() => 2);
    const h = handlerOf(any, 'any', next);
    const q = makeQuery('Example.ORG', 'ANY', { id: 99 });
    expect(h.serve(q)).toBe(0);
    expect(next.calls).toBe(0);
    const m = decode(q.reply!.wire());
    expect(m.id).toBe(99);
    expect(rcode(m)).toBe(0);
    expect(m.flag_aa).toBe(false);
    expect(m.flag_rd).toBe(true);
    expect(m.answers).toEqual([
      {
        name: 'Example.ORG',
        type: 'HINFO',
        class: 'IN',
        ttl: 8482,
        flush: false,
        data: { cpu: 'ANY obsoleted', os: 'See RFC 8482' },
      },
    ]);
  });

  it('passes every other type on', () => {
    const next = new FakeNext(() => 3);
    const h = handlerOf(any, 'any', next);
    expect(h.serve(makeQuery('example.org', 'A'))).toBe(3);
    expect(h.serve(makeQuery('example.org', 'TXT'))).toBe(3);
    expect(next.calls).toBe(2);
  });
});
