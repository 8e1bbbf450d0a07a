import { hostname } from 'node:os';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hasOption, nsid, NSID_CODE } from './index.js';
import { replyTo } from '../../src/dns/message.js';
import { runCorefile, type CorefileRun } from '../../test/helpers/corefile.js';
import { makeQuery } from '../../test/helpers/dns.js';
import { handlerOf } from '../../test/helpers/setup.js';
import { FakeNext } from '../../test/helpers/upstream.js';
import type { Handler } from '../../src/plugin.js';

interface Opt {
  udpPayloadSize: number;
  flags: number;
  options: { code: number; data: Buffer }[];
}

function build(
  text: string,
  next = new FakeNext((q) => {
    q.write(replyTo(q.request), 'fake');
    return 0;
  }),
): Handler {
  return handlerOf(nsid, text, next);
}

const NSID = [{ code: NSID_CODE, data: Buffer.alloc(0) }];

describe('nsid', () => {
  it('finds an option in OPT RDATA', () => {
    const rdata = Buffer.from([0, 10, 0, 2, 1, 2, 0, 3, 0, 0]);
    expect(hasOption(rdata, 3)).toBe(true);
    expect(hasOption(rdata, 10)).toBe(true);
    expect(hasOption(rdata, 8)).toBe(false);
    expect(hasOption(Buffer.from([0, 3, 0]), 3)).toBe(false);
  });

  it('attaches the identifier only when the query asked for it', () => {
    const h = build('nsid edge one');
    const asked = makeQuery('example.org', 'A', { edns: 1232, options: NSID });
    void h.serve(asked);
    expect(asked.reply!.ednsOptions).toEqual([{ code: 3, data: Buffer.from('edge one') }]);
    const plain = makeQuery('example.org', 'A', { edns: 1232 });
    void h.serve(plain);
    expect(plain.reply!.ednsOptions).toBeNull();
    const none = makeQuery('example.org', 'A');
    void h.serve(none);
    expect(none.reply!.ednsOptions).toBeNull();
  });

  it('defaults to the host name; nothing without a reply', () => {
    const h = build('nsid', new FakeNext(() => 2));
    const q = makeQuery('example.org', 'A', { edns: 1232, options: NSID });
    expect(h.serve(q)).toBe(2);
    expect(q.reply).toBeNull();
    const h2 = build('nsid');
    const q2 = makeQuery('example.org', 'A', { edns: 1232, options: NSID });
    void h2.serve(q2);
    expect(q2.reply!.ednsOptions![0]!.data.toString()).toBe(hostname());
  });
});

describe('nsid: through the whole server (UDP)', () => {
  let srv: CorefileRun;
  beforeAll(async () => {
    srv = await runCorefile('. {\n  nsid ns-test\n  whoami\n}\n');
  });
  afterAll(async () => {
    await srv.stop();
  });

  it('the reply OPT carries NSID (and DO, as in CoreDNS) with the client size', async () => {
    const m = await srv.ask('example.org', 'A', { edns: 1400, options: NSID });
    const opt = m.additionals.find((r) => r.type === 'OPT') as unknown as Opt;
    expect(opt.udpPayloadSize).toBe(1400);
    expect(opt.flags & 0x8000).toBe(0x8000);
    expect(opt.options.map((o) => [o.code, o.data.toString()])).toEqual([[3, 'ns-test']]);
    const plain = await srv.ask('example.org', 'A', { edns: 1400 });
    const popt = plain.additionals.find((r) => r.type === 'OPT') as unknown as Opt;
    expect(popt.options).toEqual([]);
    expect(popt.flags & 0x8000).toBe(0);
  });
});
