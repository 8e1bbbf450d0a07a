import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bufsize, parseBufsize } from './index.js';
import { decode } from '../../src/dns/message.js';
import { parseRequest } from '../../src/dns/wire.js';
import { encodeQuery, makeQuery, udpExchange } from '../../test/helpers/dns.js';
import { startServer, type TestServer } from '../../test/helpers/server.js';
import { configError, dispenserFor, setupContext as fakeSetupContext, handlerOf } from '../../test/helpers/setup.js';
import { FakeNext } from '../../test/helpers/upstream.js';
import type { Query } from '../../src/query.js';

function setupErr(text: string): string {
  return configError(() => bufsize.setup(dispenserFor(text, 'bufsize'), fakeSetupContext()), text).describe();
}

describe('bufsize: setup', () => {
  it('defaults to 1232 and takes 512..4096', () => {
    expect(parseBufsize(dispenserFor('bufsize', 'bufsize'))).toBe(1232);
    expect(parseBufsize(dispenserFor('bufsize 512', 'bufsize'))).toBe(512);
    expect(parseBufsize(dispenserFor('bufsize 4096', 'bufsize'))).toBe(4096);
    expect(parseBufsize(dispenserFor('bufsize 1400\nbufsize 600', 'bufsize'))).toBe(1400);
  });

  it.each([
    [
      'bufsize 1 2',
      "plugin/bufsize: Corefile:1 - Error during parsing: Wrong argument count or unexpected line ending after '2'",
    ],
    [
      'bufsize x',
      "plugin/bufsize: Corefile:1 - Error during parsing: Wrong argument count or unexpected line ending after 'x'",
    ],
    [
      '\nbufsize 511',
      "plugin/bufsize: Corefile:2 - Error during parsing: Wrong argument count or unexpected line ending after '511'",
    ],
    [
      'bufsize 4097',
      "plugin/bufsize: Corefile:1 - Error during parsing: Wrong argument count or unexpected line ending after '4097'",
    ],
    // CoreDNS 1.15.0 reads this block as further bufsize lines and starts; clusterdns rejects it as it rejects any block on a directive without options.
    [
      'bufsize {\n size 1\n}',
      "plugin/bufsize: Corefile:1 - Error during parsing: Unexpected token '{', expecting argument",
    ],
  ])('%j', (text, message) => {
    expect(setupErr(text)).toBe(message);
  });
});

describe('bufsize: handler', () => {
  const seen = (): { next: FakeNext; run: (q: Query) => Query } => {
    const next = new FakeNext(() => 2);
    const h = handlerOf(bufsize, 'bufsize 1000', next);
    return {
      next,
      run: (q) => {
        void h.serve(q);
        return next.seen[next.seen.length - 1]!;
      },
    };
  };

  it('lowers a larger advertised size in the request and its packet, on a copy', () => {
    const { run } = seen();
    const q = makeQuery('example.org', 'A', { edns: 4096, do: true });
    const original = Buffer.from(q.raw);
    const raw = q.raw;
    const after = run(q);
    expect(after.req.edns!.udpSize).toBe(1000);
    expect(after.req.edns!.do).toBe(true);
    expect(after.bufsize).toBe(1000);
    const reparsed = parseRequest(after.raw);
    expect(reparsed.kind === 'query' && reparsed.req.edns!.udpSize).toBe(1000);
    expect(raw.equals(original)).toBe(true); // the client's packet bytes are untouched
  });

  it('leaves smaller sizes and queries without EDNS alone', () => {
    const { run } = seen();
    const small = makeQuery('example.org', 'A', { edns: 800 });
    const raw = small.raw;
    expect(run(small).raw).toBe(raw);
    expect(small.req.edns!.udpSize).toBe(800);
    const plain = makeQuery('example.org', 'A');
    expect(run(plain).req.edns).toBeNull();
  });
});

describe('bufsize: over UDP', () => {
  let srv: TestServer;
  beforeAll(async () => {
    const hosts = Array.from({ length: 45 }, (_, i) => `198.51.100.${i + 1} mid.example.org`).join('\n');
    srv = await startServer(`. {\n  bufsize 512\n  hosts {\n${hosts}\n  }\n}\n`);
  });
  afterAll(async () => {
    await srv.stop();
  });

  it('fits the reply into the lowered size and advertises it', async () => {
    const buf = await udpExchange(srv.port, encodeQuery('mid.example.org', 'A', { edns: 4096 }));
    expect(buf.length).toBeLessThanOrEqual(512);
    const m = decode(buf);
    expect(m.flag_tc).toBe(true);
    expect((m.additionals.find((r) => r.type === 'OPT') as unknown as { udpPayloadSize: number }).udpPayloadSize).toBe(
      512,
    );
  });
});
