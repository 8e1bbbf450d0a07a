import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Answer } from 'dns-packet';
import { ConfigError } from '../../src/corefile/types.js';
import { Flag } from '../../src/dns/constants.js';
import { decode, replyTo, setFlag } from '../../src/dns/message.js';
import type { Handler } from '../../src/plugin.js';
import { Query } from '../../src/query.js';
import { parseRequest } from '../../src/dns/wire.js';
import {
  encodeQuery,
  makeQuery,
  rcode,
  tcpQueries,
  TEST_TRANSPORT,
  udpExchange,
  udpExchangeFrom,
} from '../../test/helpers/dns.js';
import { startServer } from '../../test/helpers/server.js';
import { spawnServer } from '../../test/helpers/spawn.js';
import { FakeNext, soa } from '../../test/helpers/upstream.js';
import { COMBINED_FORMAT, COMMON_FORMAT, compileFormat, formatFlags, formatSeconds, render } from './format.js';
import { log } from './index.js';
import { configError, dispenserFor, factoryOf, setupContext } from '../../test/helpers/setup.js';
import { captureLogs, type LogCapture } from '../../test/helpers/logs.js';

const DURATION = String.raw`\d+(\.\d+)?s`;
const esc = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

let lines: string[] = [];
let capture: LogCapture | null = null;

/** Capture log lines in the calling describe (the previous sink is restored after each test). */
function captureLogsEachTest(): void {
  beforeEach(() => {
    capture = captureLogs();
    lines = capture.lines;
  });
  afterEach(() => {
    capture?.restore();
    capture = null;
  });
}

function build(text: string, next: Handler | null): Handler {
  const ctx = setupContext();
  const f = factoryOf(log.setup(dispenserFor(text, 'log'), ctx));
  return f(next, ctx.block);
}

function setupErr(text: string): ConfigError {
  return configError(() => log.setup(dispenserFor(text, 'log'), setupContext()), text);
}

type Kind = 'success' | 'nxdomain' | 'nodata' | 'empty' | 'servfail' | 'refused' | 'nxanswer' | 'nowrite';

/** A next handler answering per first label of the name. */
function scripted(): FakeNext {
  return new FakeNext((q) => {
    const kind = q.lname.split('.')[0] as Kind;
    const m = replyTo(q.request, 0, true);
    const a: Answer = { name: q.name.replace(/\.$/, ''), type: 'A', class: 'IN', ttl: 30, data: '192.0.2.1' };
    switch (kind) {
      case 'success':
        m.answers = [a];
        break;
      case 'nxdomain':
        m.flags = (m.flags ?? 0) | 3;
        m.authorities = [soa('example.org')];
        break;
      case 'nodata':
        m.authorities = [soa('example.org')];
        break;
      case 'empty':
        break;
      case 'servfail':
        m.flags = (m.flags ?? 0) | 2;
        break;
      case 'refused':
        m.flags = (m.flags ?? 0) | 5;
        break;
      case 'nxanswer':
        m.flags = (m.flags ?? 0) | 3;
        m.answers = [a];
        break;
      case 'nowrite':
        return q.fail(new Error('nothing written'), 2);
      default:
        throw new Error(`unscripted ${q.lname}`);
    }
    q.write(m, 'fake');
    return (m.flags ?? 0) & 0xf;
  });
}

describe('log: formatSeconds', () => {
  it('shortest decimal seconds with s suffix', () => {
    expect(formatSeconds(0n)).toBe('0s');
    expect(formatSeconds(1n)).toBe('0.000000001s');
    expect(formatSeconds(211_377n)).toBe('0.000211377s');
    expect(formatSeconds(37_990_251n)).toBe('0.037990251s');
    expect(formatSeconds(100_000_000n)).toBe('0.1s');
    expect(formatSeconds(1_000_000_000n)).toBe('1s');
    expect(formatSeconds(1_500_000_000n)).toBe('1.5s');
    expect(formatSeconds(12_000_000_001n)).toBe('12.000000001s');
  });
});

describe('log: formatFlags and formats', () => {
  it('flags in the order qr,aa,tc,rd,ra,z,ad,cd; - when no reply', () => {
    expect(formatFlags(-1)).toBe('-');
    expect(formatFlags(0)).toBe('');
    expect(formatFlags(Flag.QR | Flag.AA | Flag.RD)).toBe('qr,aa,rd');
    expect(formatFlags(0xffff & ~0x780f)).toBe('qr,aa,tc,rd,ra,z,ad,cd');
    expect(formatFlags(Flag.CD | Flag.QR | Flag.RA)).toBe('qr,ra,cd');
  });

  it('the common and combined formats', () => {
    expect(COMMON_FORMAT).toBe(
      '{remote}:{port} - {>id} "{type} {class} {name} {proto} {size} {>do} {>bufsize}" {rcode} {>rflags} {rsize} {duration}',
    );
    expect(COMBINED_FORMAT).toBe(`${COMMON_FORMAT} "{>opcode}"`);
  });

  it('renders placeholders, copies unknown ones literally', () => {
    const q = makeQuery('Mixed.Example.ORG', 'AAAA', {
      id: 99,
      edns: 1400,
      do: true,
      transport: { remoteAddress: '2001:db8::7', remotePort: 5300, localAddress: '::1' },
    });
    q.meta.set('foo/bar', 'baz');
    const segs = compileFormat(
      '{type}|{class}|{name}|{proto}|{remote}|{local}|{port}|{size}|{>id}|{>opcode}|{>do}|{>bufsize}|{rcode}|{>rflags}|{rsize}|{duration}|{/log/class}|{/log/type}|{/foo/bar}|{/absent}|{unknown}|{>nope}|{}|{ {type}',
    );
    const out = render(segs, {
      q,
      recorded: { rcode: 3, flags: Flag.QR | Flag.RD, size: 77, durationNs: 1_500n },
      klass: 'denial',
      rtype: 'NXDOMAIN',
    });
    expect(out).toBe(
      `AAAA|IN|mixed.example.org.|udp|[2001:db8::7]|[::1]|5300|${q.raw.length}|99|0|true|1400|NXDOMAIN|qr,rd|77|0.0000015s|denial|NXDOMAIN|baz|-|{unknown}|{>nope}|{}|{ AAAA`,
    );
  });

  it('unknown type and rcode numbers; TYPE mnemonic', () => {
    const raw = encodeQuery('x.org', 'A');
    raw.writeUInt16BE(65534, raw.length - 4);
    const parsed = parseRequest(raw);
    if (parsed.kind !== 'query') throw new Error('query rejected');
    const q = new Query(raw, parsed.req, TEST_TRANSPORT);
    expect(
      render(compileFormat('{type} {rcode}'), {
        q,
        recorded: { rcode: 3841, flags: 0x8000, size: 1, durationNs: 0n },
        klass: 'error',
        rtype: 'OTHERERROR',
      }),
    ).toBe('TYPE65534 3841');
  });
});

describe('log: handler (setup + fake next)', () => {
  captureLogsEachTest();

  it('default rule logs the common line after the chain answered', async () => {
    const h = build('log', scripted());
    const q = makeQuery('Success.Example.ORG', 'A', {
      id: 29008,
      transport: { remoteAddress: '10.244.2.7', remotePort: 50759 },
    });
    expect(await h.serve(q)).toBe(0);
    expect(lines).toHaveLength(1);
    const rsize = q.reply!.wire().length;
    expect(lines[0]).toMatch(
      new RegExp(
        `^${esc(`[INFO] 10.244.2.7:50759 - 29008 "A IN success.example.org. udp ${q.raw.length} false 512" NOERROR qr,aa,rd ${rsize} `)}${DURATION}$`,
      ),
    );
  });

  it('is transparent: returns the chain RCODE, keeps its reply', async () => {
    const next = scripted();
    const h = build('log', next);
    const q = makeQuery('nxdomain.example.org', 'A');
    expect(await h.serve(q)).toBe(3);
    expect(next.seen[0]).toBe(q);
    expect(decode(q.reply!.wire()).flags! & 0xf).toBe(3);
  });

  it('async next is logged after it resolves', async () => {
    const h = build(
      'log . "{name} {rcode}"',
      new FakeNext(async (q) => {
        await new Promise((r) => setTimeout(r, 1));
        const m = replyTo(q.request, 0, false);
        q.write(m, 'fake');
        return 0;
      }),
    );
    await h.serve(makeQuery('async.example.org', 'A'));
    expect(lines).toEqual(['[INFO] async.example.org. NOERROR']);
  });

  it('nothing written (chain returned SERVFAIL): the bare reply the server sends, as CoreDNS logs it', async () => {
    const h = build('log . "{rcode} {>rflags} {rsize} {/log/class} {/log/type}"', scripted());
    expect(await h.serve(makeQuery('nowrite.example.org', 'A'))).toBe(2);
    // 12 (header) + 21 (name) + 4: the question, no OPT; QR and the request's RD.
    expect(lines).toEqual(['[INFO] SERVFAIL qr,rd 37 error SERVERERROR']);
  });

  it('nothing written with CD set: CD is copied; REFUSED is OTHERERROR', async () => {
    const h = build('log . "{rcode} {>rflags} {rsize} {/log/class} {/log/type}"', new FakeNext(() => 5));
    await h.serve(makeQuery('cd.example.org', 'A', { cd: true }));
    expect(lines).toEqual(['[INFO] REFUSED qr,rd,cd 32 error OTHERERROR']);
  });

  it('nothing written and a code the handler writes itself (NOERROR): -, -, 0 as in CoreDNS', async () => {
    const h = build('log . "{rcode} {>rflags} {rsize}"', new FakeNext(() => 0));
    await h.serve(makeQuery('none.example.org', 'A'));
    expect(lines).toEqual(['[INFO] - - 0']);
  });

  it('flags of the written reply', async () => {
    const h = build(
      'log . {>rflags}',
      new FakeNext((q) => {
        const m = replyTo(q.request);
        setFlag(m, Flag.RA, true);
        setFlag(m, Flag.AD, true);
        q.write(m, 'fake');
        return 0;
      }),
    );
    await h.serve(makeQuery('x.example.org', 'A', { cd: true }));
    expect(lines).toEqual(['[INFO] qr,rd,ra,ad,cd']);
  });

  it('{combined} adds the opcode', async () => {
    const h = build('log . {combined}', scripted());
    await h.serve(makeQuery('success.example.org', 'A'));
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(new RegExp(`NOERROR qr,aa,rd \\d+ ${DURATION} "0"$`));
  });

  it('{common} inside a custom format is expanded', async () => {
    const h = build('log . "pre {common} post"', scripted());
    await h.serve(makeQuery('success.example.org', 'A', { id: 5 }));
    expect(lines[0]).toMatch(
      new RegExp(
        `^\\[INFO\\] pre 10\\.244\\.2\\.7:40000 - 5 "A IN success\\.example\\.org\\. udp \\d+ false 512" NOERROR qr,aa,rd \\d+ ${DURATION} post$`,
      ),
    );
  });

  it('{>bufsize}: 512 without EDNS, the EDNS size (min 512), 65535 for TCP; {>do}', async () => {
    const h = build('log . "{proto} {>bufsize} {>do}"', scripted());
    await h.serve(makeQuery('empty.example.org', 'A'));
    await h.serve(makeQuery('empty.example.org', 'A', { edns: 1232, do: true }));
    await h.serve(makeQuery('empty.example.org', 'A', { edns: 100 }));
    await h.serve(makeQuery('empty.example.org', 'A', { transport: { proto: 'tcp' } }));
    await h.serve(makeQuery('empty.example.org', 'A', { edns: 1232, transport: { proto: 'tcp' } }));
    expect(lines).toEqual([
      '[INFO] udp 512 false',
      '[INFO] udp 1232 true',
      '[INFO] udp 512 false',
      '[INFO] tcp 65535 false',
      '[INFO] tcp 65535 false',
    ]);
  });

  it('one argument is a NAME: `log {combined}` logs nothing for normal names', async () => {
    const h = build('log {combined}', scripted());
    await h.serve(makeQuery('success.example.org', 'A'));
    await h.serve(makeQuery('success.combined', 'A'));
    await h.serve(makeQuery('success', 'A'));
    expect(lines).toEqual([]);
    // The rule is for the zone `{combined}.` with the default format.
    await h.serve(makeQuery('success.{combined}', 'A'));
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(
      /^\[INFO\] 10\.244\.2\.7:40000 - \d+ "A IN success\.\{combined\}\. udp \d+ false 512" NOERROR /,
    );
  });

  it('one plain argument is a zone with the default format', async () => {
    const h = build('log Example.ORG', scripted());
    await h.serve(makeQuery('success.example.org', 'A'));
    await h.serve(makeQuery('success.example.com', 'A'));
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain('"A IN success.example.org. udp');
  });

  it('several names without a format: all names, default format', async () => {
    const h = build('log example.org example.net', scripted());
    await h.serve(makeQuery('success.example.org', 'A'));
    await h.serve(makeQuery('success.example.net', 'A'));
    await h.serve(makeQuery('success.example.com', 'A'));
    expect(lines.map((l) => l.replace(/^.*"A IN (\S+) .*$/, '$1'))).toEqual([
      'success.example.org.',
      'success.example.net.',
    ]);
  });

  it('names + format: the last argument containing { is the format', async () => {
    const h = build('log example.org example.net "{name}"', scripted());
    await h.serve(makeQuery('success.example.org', 'A'));
    await h.serve(makeQuery('Success.Example.NET', 'A'));
    await h.serve(makeQuery('success.example.com', 'A'));
    expect(lines).toEqual(['[INFO] success.example.org.', '[INFO] success.example.net.']);
  });

  it('the zone itself matches; a name that only shares a suffix string does not', async () => {
    const h = build(
      'log example.org "{name}"',
      new FakeNext((q) => {
        q.write(replyTo(q.request), 'f');
        return 0;
      }),
    );
    await h.serve(makeQuery('Example.org', 'A'));
    await h.serve(makeQuery('badexample.org', 'A'));
    await h.serve(makeQuery('org', 'A'));
    expect(lines).toEqual(['[INFO] example.org.']);
  });

  it('a CIDR name covers every reverse zone it expands to', async () => {
    const h = build(
      'log 10.0.0.0/20 "{name}"',
      new FakeNext((q) => {
        q.write(replyTo(q.request), 'f');
        return 0;
      }),
    );
    await h.serve(makeQuery('1.0.0.10.in-addr.arpa', 'PTR'));
    await h.serve(makeQuery('1.15.0.10.in-addr.arpa', 'PTR'));
    await h.serve(makeQuery('1.16.0.10.in-addr.arpa', 'PTR'));
    expect(lines).toEqual(['[INFO] 1.0.0.10.in-addr.arpa.', '[INFO] 1.15.0.10.in-addr.arpa.']);
  });

  it('first matching rule wins; only one line per query', async () => {
    const h = build(
      'log sub.example.org "first {name}"\nlog example.org "second {name}"\nlog . "third {name}"',
      scripted(),
    );
    await h.serve(makeQuery('success.sub.example.org', 'A'));
    await h.serve(makeQuery('success.example.org', 'A'));
    await h.serve(makeQuery('success.example.com', 'A'));
    expect(lines).toEqual([
      '[INFO] first success.sub.example.org.',
      '[INFO] second success.example.org.',
      '[INFO] third success.example.com.',
    ]);
  });

  it('the first rule wins even if its class filter drops the line', async () => {
    const h = build('log example.org "A {name}" {\n class denial\n}\nlog . "B {name}"', scripted());
    await h.serve(makeQuery('success.example.org', 'A'));
    await h.serve(makeQuery('nxdomain.example.org', 'A'));
    expect(lines).toEqual(['[INFO] A nxdomain.example.org.']);
  });

  const all: Kind[] = ['success', 'nxdomain', 'nodata', 'empty', 'servfail', 'refused', 'nxanswer', 'nowrite'];
  const expectClass: Record<string, Kind[]> = {
    success: ['success', 'empty'],
    denial: ['nxdomain', 'nodata'],
    error: ['servfail', 'refused', 'nxanswer', 'nowrite'],
    all,
    'success denial': ['success', 'nxdomain', 'nodata', 'empty'],
  };
  for (const [cls, kinds] of Object.entries(expectClass)) {
    it(`class ${cls}`, async () => {
      const h = build(`log . "{name} {/log/class}" {\n class ${cls}\n}`, scripted());
      for (const k of all) await h.serve(makeQuery(`${k}.example.org`, 'A'));
      expect(lines.map((l) => l.slice(7).split('.')[0])).toEqual(kinds);
    });
  }

  it('classes from several class lines are OR-ed', async () => {
    const h = build('log . "{name}" {\n class success\n class error\n}', scripted());
    for (const k of all) await h.serve(makeQuery(`${k}.example.org`, 'A'));
    expect(lines.map((l) => l.slice(7).split('.')[0])).toEqual([
      'success',
      'empty',
      'servfail',
      'refused',
      'nxanswer',
      'nowrite',
    ]);
  });

  it('{/log/class} without a class filter', async () => {
    const h = build('log . "{/log/class}"', scripted());
    for (const k of all) await h.serve(makeQuery(`${k}.example.org`, 'A'));
    expect(lines).toEqual(
      ['success', 'denial', 'denial', 'success', 'error', 'error', 'error', 'error'].map((c) => `[INFO] ${c}`),
    );
  });

  it('{/log/type} from the written reply', async () => {
    const h = build('log . "{/log/type}"', scripted());
    for (const k of all) await h.serve(makeQuery(`${k}.example.org`, 'A'));
    const deleg = build(
      'log . "{/log/type}"',
      new FakeNext((q) => {
        const m = replyTo(q.request);
        m.authorities = [{ name: 'sub.example.org', type: 'NS', class: 'IN', ttl: 60, data: 'ns.sub.example.org' }];
        q.write(m, 'fake');
        return 0;
      }),
    );
    await deleg.serve(makeQuery('a.sub.example.org', 'A'));
    // nowrite: CoreDNS types the bare SERVFAIL the server sends (SERVERERROR).
    expect(lines).toEqual(
      [
        'NOERROR',
        'NXDOMAIN',
        'NODATA',
        'NOERROR',
        'SERVERERROR',
        'OTHERERROR',
        'OTHERERROR',
        'SERVERERROR',
        'DELEGATION',
      ].map((t) => `[INFO] ${t}`),
    );
  });

  it('no next plugin: SERVFAIL', async () => {
    const h = build('log', null);
    const q = makeQuery('x.example.org', 'A');
    expect(await h.serve(q)).toBe(2);
    expect(q.error).not.toBeNull();
  });
});

describe('log: setup errors', () => {
  it('unknown class', () => {
    expect(setupErr('log {\n class bogus\n}').message).toContain('bogus');
    expect(setupErr('log . {\n class success nope\n}').message).toContain('nope');
  });

  it('class without argument', () => {
    expect(setupErr('log {\n class\n}')).toBeInstanceOf(ConfigError);
  });

  it('unknown property', () => {
    expect(setupErr('log {\n bogus\n}').message).toContain('bogus');
  });

  it('json takes no argument', () => {
    expect(setupErr('log {\n json yes\n}')).toBeInstanceOf(ConfigError);
  });

  it('accepted forms', () => {
    for (const text of [
      'log',
      'log .',
      'log . {common}',
      'log a.org b.org',
      'log {\n class all\n}',
      'log {\n class success denial error\n json\n}',
      'log 10.0.0.0/24 "{name}"',
    ]) {
      expect(typeof factoryOf(log.setup(dispenserFor(text, 'log'), setupContext())), text).toBe('function');
    }
  });
});

describe('log: end to end (in-process server)', () => {
  it('default {common} line, exactly', async () => {
    const srv = await startServer('. {\n log\n whoami\n}\n');
    try {
      const packet = encodeQuery('Who.Example.ORG', 'A', { id: 4321 });
      const { reply, localPort } = await udpExchangeFrom(srv.port, packet);
      const line = srv.logs.find((l) => l.startsWith('[INFO] 127.0.0.1:'));
      expect(line, srv.logs.join('\n')).toBeDefined();
      expect(line).toMatch(
        new RegExp(
          `^${esc(`[INFO] 127.0.0.1:${localPort} - 4321 "A IN who.example.org. udp ${packet.length} false 512" NOERROR qr,aa,rd ${reply.length} `)}${DURATION}$`,
        ),
      );
    } finally {
      await srv.stop();
    }
  });

  it('TCP: proto tcp and bufsize 65535; EDNS over UDP: its size and DO', async () => {
    const srv = await startServer(
      '. {\n log . "{proto} {>bufsize} {>do} {type} {rcode} {/log/type} {/log/class}"\n whoami\n}\n',
    );
    try {
      await tcpQueries(srv.port, [encodeQuery('a.example.org', 'MX')]);
      await udpExchange(srv.port, encodeQuery('a.example.org', 'TXT', { edns: 1232, do: true }));
      expect(srv.logs.filter((l) => /^\[INFO\] (udp|tcp) /.test(l))).toEqual([
        '[INFO] tcp 65535 false MX NOERROR NOERROR success',
        '[INFO] udp 1232 true TXT NOERROR NOERROR success',
      ]);
    } finally {
      await srv.stop();
    }
  });

  it('server-written reply (chain returned SERVFAIL without writing): SERVFAIL qr,rd SIZE, class error', async () => {
    const srv = await startServer(
      '. {\n log . "Q {name} {rcode} {>rflags} {rsize} {/log/class}"\n forward . 127.0.0.1:9 {\n  expire 1s\n }\n}\n',
    );
    try {
      const m = decode(await udpExchange(srv.port, encodeQuery('fail.example.org', 'A'), 15000));
      expect(rcode(m)).toBe(2);
      expect(srv.logs.filter((l) => l.startsWith('[INFO] Q '))).toEqual([
        '[INFO] Q fail.example.org. SERVFAIL qr,rd 34 error',
      ]);
    } finally {
      await srv.stop();
    }
  });

  it('`log {combined}` logs nothing for normal names', async () => {
    const srv = await startServer('. {\n log {combined}\n whoami\n}\n');
    try {
      const m = decode(await udpExchange(srv.port, encodeQuery('example.org', 'A')));
      expect(rcode(m)).toBe(0);
      expect(srv.logs.filter((l) => l.includes('example.org'))).toEqual([]);
    } finally {
      await srv.stop();
    }
  });

  it('unknown class rejects the Corefile', async () => {
    await expect(startServer('. {\n log {\n  class nosuch\n }\n whoami\n}\n')).rejects.toThrow(/nosuch/);
  });
});

describe('log: json (spawned bin/clusterdns)', () => {
  it('one JSON object per query on stdout', async () => {
    const s = await spawnServer('. {\n log {\n  json\n }\n whoami\n}\n');
    try {
      // The startup banner is printed once the listeners are up.
      await s.waitFor(/^clusterdns-/);
      const reply = await udpExchange(s.port, encodeQuery('Json.Example.ORG', 'AAAA', { id: 777 }));
      const line = await s.waitFor(/"name":"json\.example\.org\."/);
      const obj = JSON.parse(line) as Record<string, unknown>;
      expect(obj).toMatchObject({
        remote: '127.0.0.1',
        id: 777,
        type: 28,
        name: 'json.example.org.',
        proto: 'udp',
        do: false,
        bufsize: 512,
        rcode: 0,
        rflags: 'qr,aa,rd',
        rsize: reply.length,
        class: 'success',
      });
      expect(typeof obj.port).toBe('number');
      expect(typeof obj.duration).toBe('number');
      expect(s.output.filter((l) => l.includes('json.example.org'))).toHaveLength(1);
    } finally {
      await s.stop();
    }
  });
});
