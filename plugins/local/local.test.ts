import { describe, expect, it } from 'vitest';
import { local } from './index.js';
import { localhostRequests } from './metrics.js';
import { decode } from '../../src/dns/message.js';
import { makeQuery, rcode } from '../../test/helpers/dns.js';
import { rrLines } from '../../test/helpers/records.js';
import { configError, dispenserFor, setupContext as fakeSetupContext, handlerOf } from '../../test/helpers/setup.js';
import { FakeNext } from '../../test/helpers/upstream.js';
import type { Handler } from '../../src/plugin.js';

function build(text = 'local'): { h: Handler; next: FakeNext } {
  const next = new FakeNext(() => 2);
  return { h: handlerOf(local, text, next), next };
}

const SOA = (owner: string): string => `${owner} 604800 IN SOA localhost. root.localhost. 1 0 0 0 604800`;

function ask(h: Handler, name: string, type: string): { rcode: number; answer: string[]; authority: string[] } | null {
  const q = makeQuery(name, type);
  void h.serve(q);
  if (!q.reply) return null;
  const m = decode(q.reply.wire());
  return { rcode: rcode(m), answer: rrLines(m.answers), authority: rrLines(m.authorities) };
}

describe('local: setup', () => {
  it.each([
    [
      'local x',
      "plugin/local: Corefile:1 - Error during parsing: Wrong argument count or unexpected line ending after 'x'",
    ],
    [
      'local {\n localhost_prefix maybe\n}',
      "plugin/local: Corefile:2 - Error during parsing: localhost_prefix expects 'on' or 'off', got \"maybe\"",
    ],
    [
      'local {\n localhost_prefix\n}',
      "plugin/local: Corefile:2 - Error during parsing: Wrong argument count or unexpected line ending after 'localhost_prefix'",
    ],
    ['local {\n foo\n}', "plugin/local: Corefile:2 - Error during parsing: unknown property 'foo'"],
  ])('%j', (text, message) => {
    expect(configError(() => local.setup(dispenserFor(text, 'local'), fakeSetupContext()), text).describe()).toBe(
      message,
    );
  });
});

describe('local: answers', () => {
  const { h, next } = build();

  it('localhost. itself', () => {
    expect(ask(h, 'localhost', 'A')).toEqual({ rcode: 0, answer: ['localhost. 604800 IN A 127.0.0.1'], authority: [] });
    expect(ask(h, 'LocalHost', 'AAAA')).toEqual({ rcode: 0, answer: ['LocalHost. 604800 IN AAAA ::1'], authority: [] });
    expect(ask(h, 'localhost', 'SOA')!.answer).toEqual([SOA('localhost.')]);
    expect(ask(h, 'localhost', 'NS')!.answer).toEqual(['localhost. 604800 IN NS localhost.']);
    expect(ask(h, 'localhost', 'MX')).toEqual({ rcode: 0, answer: [], authority: [SOA('localhost.')] });
  });

  it('subdomains of localhost. and names starting with localhost.', () => {
    expect(ask(h, 'foo.localhost', 'A')!.answer).toEqual(['foo.localhost. 604800 IN A 127.0.0.1']);
    expect(ask(h, 'a.b.localhost', 'AAAA')!.answer).toEqual(['a.b.localhost. 604800 IN AAAA ::1']);
    expect(ask(h, 'foo.localhost', 'TXT')).toEqual({ rcode: 0, answer: [], authority: [SOA('foo.localhost.')] });
    expect(ask(h, 'localhost.example.org', 'A')!.answer).toEqual(['localhost.example.org. 604800 IN A 127.0.0.1']);
  });

  it('the reverse zones', () => {
    expect(ask(h, '1.0.0.127.in-addr.arpa', 'PTR')!.answer).toEqual([
      '1.0.0.127.in-addr.arpa. 604800 IN PTR localhost.',
    ]);
    expect(ask(h, '1.0.0.127.in-addr.arpa', 'A')).toEqual({
      rcode: 0,
      answer: [],
      authority: [SOA('127.in-addr.arpa.')],
    });
    expect(ask(h, '2.0.0.127.in-addr.arpa', 'PTR')).toEqual({
      rcode: 3,
      answer: [],
      authority: [SOA('127.in-addr.arpa.')],
    });
    expect(ask(h, '1.0.0.127.IN-ADDR.arpa', 'MX')!.authority).toEqual([SOA('127.IN-ADDR.arpa.')]);
    for (const z of ['0.in-addr.arpa', '127.in-addr.arpa', '255.in-addr.arpa']) {
      expect(ask(h, z, 'SOA')!.answer).toEqual([SOA(`${z}.`)]);
      expect(ask(h, z, 'NS')!.answer).toEqual([`${z}. 604800 IN NS localhost.`]);
      expect(ask(h, z, 'A')).toEqual({ rcode: 0, answer: [], authority: [SOA(`${z}.`)] });
    }
    expect(ask(h, '5.255.in-addr.arpa', 'PTR')).toEqual({
      rcode: 3,
      answer: [],
      authority: [SOA('255.in-addr.arpa.')],
    });
  });

  it('passes everything else on', () => {
    const before = next.calls;
    expect(ask(h, 'example.org', 'A')).toBeNull();
    expect(ask(h, '1.0.0.10.in-addr.arpa', 'PTR')).toBeNull();
    expect(ask(h, 'notlocalhost', 'A')).toBeNull();
    expect(next.calls).toBe(before + 3);
  });

  it('localhost_prefix off passes localhost.<name> on', () => {
    const off = build('local {\n localhost_prefix off\n}');
    expect(ask(off.h, 'localhost.example.org', 'A')).toBeNull();
    expect(ask(off.h, 'foo.localhost', 'A')!.answer).toEqual(['foo.localhost. 604800 IN A 127.0.0.1']);
  });

  it('counts the subdomain and prefix answers, not the apex', async () => {
    const value = async (): Promise<number> => (await localhostRequests.get()).values[0]?.value ?? 0;
    const before = await value();
    ask(h, 'localhost', 'A');
    ask(h, 'x.localhost', 'A');
    ask(h, 'localhost.example.org', 'A');
    expect(await value()).toBe(before + 2);
  });
});
