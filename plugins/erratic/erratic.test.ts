/**
 * erratic: its answers (A, AAAA, AXFR, SERVFAIL), which queries it drops, delays and truncates as
 * CoreDNS 1.15.0 counts them, its ready flip, its search path, and CoreDNS's setup errors.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { erratic } from './index.js';
import { parseErratic } from './setup.js';
import { Flag } from '../../src/dns/constants.js';
import { decode } from '../../src/dns/message.js';
import type { ReadinessProbe } from '../../src/plugin.js';
import { SEARCH_PATH } from '../../src/searchpath.js';
import { runCorefile, type CorefileRun } from '../../test/helpers/corefile.js';
import { encodeQuery, makeQuery } from '../../test/helpers/dns.js';
import { rrLines } from '../../test/helpers/records.js';
import { configError, dispenserFor, factoryOf, setupContext } from '../../test/helpers/setup.js';

let run: CorefileRun | null = null;
afterEach(async () => {
  await run?.stop();
  run = null;
});

/** The replies to `n` A queries for example.org (null: dropped). */
async function replies(
  corefile: string,
  n: number,
  type = 'A',
  name = 'Example.ORG.',
): Promise<(ReturnType<typeof decode> | null)[]> {
  run = await runCorefile(corefile);
  const out: (ReturnType<typeof decode> | null)[] = [];
  for (let i = 0; i < n; i++) {
    const b = await run.exchange(encodeQuery(name, type));
    out.push(b === null ? null : decode(b));
  }
  return out;
}

describe('erratic: answers', () => {
  it('A and AAAA: the documentation addresses, owner as asked, TTL 0, authoritative', async () => {
    const [a] = await replies('example.org {\n  erratic {\n    drop 0\n  }\n}', 1);
    expect(rrLines(a!.answers)).toEqual(['Example.ORG. 0 IN A 192.0.2.53']);
    expect(a!.flags! & Flag.AA).toBe(Flag.AA);
    const m = await run!.ask('example.org.', 'AAAA');
    expect(rrLines(m.answers)).toEqual(['example.org. 0 IN AAAA 2001:db8::53']);
    expect((await run!.ask('example.org.', 'MX')).flags! & 0xf).toBe(2);
  });

  it('AXFR: the small zone in one message, the closing SOA left out when truncated', async () => {
    const [x] = await replies('example.org {\n  erratic {\n    drop 0\n  }\n}', 1, 'AXFR', 'example.org.');
    const soa = 'example.org. 0 IN SOA sns.dns.icann.org. noc.dns.icann.org. 2018050825 7200 3600 1209600 3600';
    expect(rrLines(x!.answers)).toEqual([
      soa,
      'example.org. 0 IN NS b.example.org.',
      'example.org. 0 IN NS a.example.org.',
      'a.example.org. 0 IN AAAA 2001:bd8::53',
      'b.example.org. 0 IN AAAA 2001:500::54',
      soa,
    ]);
    await run!.stop();
    const [t] = await replies('example.org {\n  erratic {\n    truncate\n  }\n}', 1, 'AXFR');
    expect(t!.answers).toHaveLength(5);
    expect(t!.flags! & Flag.TC).toBe(0);
  });

  it('large: 30 A records', async () => {
    const [a] = await replies('example.org {\n  erratic {\n    drop 0\n    large\n  }\n}', 1);
    expect(a!.answers).toHaveLength(30);
  });
});

describe('erratic: 1 in N', () => {
  it('drops every second query by default, starting with the first', async () => {
    const r = await replies('example.org {\n  erratic\n}', 5);
    expect(r.map((m) => m !== null)).toEqual([false, true, false, true, false]);
  });

  it('drops 1 in 3 and SERVFAILs other types in between', async () => {
    const r = await replies('example.org {\n  erratic {\n    drop 3\n  }\n}', 4, 'TXT');
    expect(r.map((m) => (m === null ? null : m.flags! & 0xf))).toEqual([null, 2, 2, null]);
  });

  it('truncates where query number AND amount is 0 (CoreDNS 1.15.0), never drops then', async () => {
    const r = await replies('example.org {\n  erratic {\n    truncate 2\n  }\n}', 6);
    expect(r.map((m) => (m!.flags! & Flag.TC) !== 0)).toEqual([true, true, false, false, true, true]);
    expect(r[0]!.answers).toHaveLength(1);
  });

  it('delays 1 in N and still answers', async () => {
    const r = await replies('example.org {\n  erratic {\n    delay 1 1ms\n  }\n}', 2);
    expect(r.map((m) => m!.answers.length)).toEqual([1, 1]);
  });
});

describe('erratic: ready and autopath', () => {
  it('ready while 3 or 4 queries were seen', async () => {
    const ctx = setupContext({ plugin: 'erratic' });
    const probes: ReadinessProbe[] = [];
    ctx.registerReady = (name, probe) => {
      expect(name).toBe('erratic');
      probes.push(probe);
    };
    const factory = factoryOf(erratic.setup(dispenserFor('erratic', 'erratic'), ctx));
    ctx.seal();
    const h = factory(null, ctx.block);
    const ready: boolean[] = [];
    for (let i = 0; i < 7; i++) {
      ready.push(probes[0]!() === true);
      await h.serve(makeQuery('example.org', 'A'));
    }
    expect(ready).toEqual([false, false, false, true, true, false, false]);
    expect(ctx.lookup(SEARCH_PATH)?.autoPath(makeQuery('x', 'A'))).toEqual(['a.example.org.', 'b.example.org.', '']);
  });
});

describe('erratic: options and setup errors, as CoreDNS', () => {
  it.each([
    ['erratic', 2, 0, 0],
    ['erratic {\n drop 2\n delay 3 1ms\n}', 2, 3, 0],
    ['erratic {\n truncate 2\n delay 3 1ms\n}', 0, 3, 2],
    ['erratic {\n drop 3\n delay\n}', 3, 2, 0],
    ['erratic {\n drop 3\n truncate\n}', 3, 0, 2],
  ])('%j', (text, drop, delay, truncate) => {
    expect(parseErratic(dispenserFor(text, 'erratic'))).toMatchObject({ drop, delay, truncate });
  });

  it.each([
    ['erratic {\n drop -1\n}', 'plugin/erratic: illegal amount value given "-1"'],
    ['erratic {\n delay -1\n}', 'plugin/erratic: illegal amount value given "-1"'],
    [
      'erratic {\n delay 1 2 4\n}',
      "plugin/erratic: Corefile:2 - Error during parsing: Wrong argument count or unexpected line ending after '4'",
    ],
    ['erratic {\n delay 15.a\n}', 'plugin/erratic: strconv.ParseInt: parsing "15.a": invalid syntax'],
    ['erratic {\n drop 3\n delay 3 bla\n}', 'plugin/erratic: time: invalid duration "bla"'],
    [
      'erratic {\n truncate 9999999999\n}',
      'plugin/erratic: strconv.ParseInt: parsing "9999999999": value out of range',
    ],
    [
      'erratic {\n something-else\n}',
      "plugin/erratic: Corefile:2 - Error during parsing: unknown property 'something-else'",
    ],
  ])('%j', (text, message) => {
    expect(configError(() => erratic.setup(dispenserFor(text, 'erratic'), setupContext()), text).describe()).toBe(
      message,
    );
  });
});
