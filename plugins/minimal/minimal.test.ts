import type { Answer } from 'dns-packet';
import { describe, expect, it } from 'vitest';
import { minimal } from './index.js';
import { decode, replyTo, setRcode, type Message } from '../../src/dns/message.js';
import { encodeMessage } from '../../src/dns/encode.js';
import { makeQuery } from '../../test/helpers/dns.js';
import { configError, dispenserFor, setupContext as fakeSetupContext, handlerOf } from '../../test/helpers/setup.js';
import { FakeNext } from '../../test/helpers/upstream.js';
import type { Query } from '../../src/query.js';

const A: Answer = { name: 'www.example.org', type: 'A', class: 'IN', ttl: 60, data: '192.0.2.1' };
const NS: Answer = { name: 'example.org', type: 'NS', class: 'IN', ttl: 60, data: 'ns1.example.org' };
const GLUE: Answer = { name: 'ns1.example.org', type: 'A', class: 'IN', ttl: 60, data: '192.0.2.53' };
const SOA: Answer = {
  name: 'example.org',
  type: 'SOA',
  class: 'IN',
  ttl: 60,
  data: { mname: 'ns1.example.org', rname: 'h.example.org', serial: 1, refresh: 1, retry: 1, expire: 1, minimum: 30 },
};
const OPT = { type: 'OPT', name: '.', udpPayloadSize: 1232, flags: 0, options: [] } as unknown as Answer;

/** Serve `q` through minimal in front of a plugin that writes `shape(reply)` (as a message or as wire bytes). */
function through(q: Query, shape: (m: Message) => void, wire = false): Message {
  const next = new FakeNext((x) => {
    const m = replyTo(x.request);
    shape(m);
    if (wire) x.writeWire(encodeMessage(m), 'fake');
    else x.write(m, 'fake');
    return 0;
  });
  const h = handlerOf(minimal, 'minimal', next);
  const rc = h.serve(q);
  expect(rc).toBe(0);
  return decode(q.reply!.wire());
}

describe('minimal', () => {
  it('setup takes no arguments', () => {
    expect(
      configError(() => minimal.setup(dispenserFor('minimal x', 'minimal'), fakeSetupContext()), 'x').describe(),
    ).toBe(
      "plugin/minimal: Corefile:1 - Error during parsing: Wrong argument count or unexpected line ending after 'x'",
    );
  });

  for (const wire of [false, true]) {
    const how = wire ? 'wire' : 'message';
    it(`drops authority and additional (OPT too) from a positive answer (${how})`, () => {
      const m = through(
        makeQuery('www.example.org', 'A', { edns: 1232 }),
        (r) => {
          r.answers = [A];
          r.authorities = [NS];
          r.additionals = [GLUE, OPT];
        },
        wire,
      );
      expect(m.answers).toHaveLength(1);
      expect(m.authorities).toEqual([]);
      expect(m.additionals).toEqual([]);
    });

    it(`keeps denials, NODATA and referrals as written (${how})`, () => {
      const nx = through(
        makeQuery('nx.example.org', 'A'),
        (r) => {
          setRcode(r, 3);
          r.authorities = [SOA];
          r.additionals = [GLUE];
        },
        wire,
      );
      expect(nx.authorities).toHaveLength(1);
      expect(nx.additionals).toHaveLength(1);
      const nodata = through(
        makeQuery('www.example.org', 'MX'),
        (r) => {
          r.authorities = [SOA];
        },
        wire,
      );
      expect(nodata.authorities).toHaveLength(1);
      const referral = through(
        makeQuery('sub.example.org', 'A'),
        (r) => {
          r.authorities = [NS];
          r.additionals = [GLUE];
        },
        wire,
      );
      expect(referral.authorities).toHaveLength(1);
      expect(referral.additionals).toHaveLength(1);
      const servfail = through(
        makeQuery('www.example.org', 'A'),
        (r) => {
          setRcode(r, 2);
          r.additionals = [GLUE];
        },
        wire,
      );
      expect(servfail.additionals).toHaveLength(1);
    });
  }

  it('an empty NOERROR with only additional records counts as an answer, as in CoreDNS', () => {
    const m = through(makeQuery('example.org', 'A'), (r) => {
      r.additionals = [GLUE];
    });
    expect(m.additionals).toEqual([]);
  });

  it('passes a failure without a reply through', () => {
    const h = handlerOf(minimal, 'minimal', new FakeNext(() => 2));
    const q = makeQuery('example.org', 'A');
    expect(h.serve(q)).toBe(2);
    expect(q.reply).toBeNull();
  });
});
