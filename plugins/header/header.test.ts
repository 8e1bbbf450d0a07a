import { describe, expect, it } from 'vitest';
import { header } from './index.js';
import { Flag } from '../../src/dns/constants.js';
import { decode, replyTo } from '../../src/dns/message.js';
import { encodeMessage } from '../../src/dns/encode.js';
import { parseRequest } from '../../src/dns/wire.js';
import { makeQuery } from '../../test/helpers/dns.js';
import { configError, dispenserFor, setupContext as fakeSetupContext, handlerOf } from '../../test/helpers/setup.js';
import { FakeNext } from '../../test/helpers/upstream.js';

function setupErr(text: string): string {
  return configError(() => header.setup(dispenserFor(text, 'header'), fakeSetupContext()), text).describe();
}

describe('header: setup', () => {
  it.each([
    [
      'header',
      "plugin/header: Corefile:1 - Error during parsing: Wrong argument count or unexpected line ending after 'header'",
    ],
    [
      'header {\n}',
      "plugin/header: Corefile:2 - Error during parsing: Wrong argument count or unexpected line ending after '}'",
    ],
    [
      'header {\n foo set aa\n}',
      'plugin/header: Corefile:2 - Error during parsing: setting up rule: invalid selector=foo should be query or response',
    ],
    [
      'header {\n set aa\n}',
      'plugin/header: Corefile:2 - Error during parsing: setting up rule: invalid selector=set should be query or response',
    ],
    [
      'header {\n QUERY set aa\n}',
      "plugin/header: Corefile:2 - Error during parsing: setting up rule: invalid selector=QUERY should be query or response (write 'query' in lower case)",
    ],
    [
      'header {\n query\n}',
      'plugin/header: Corefile:2 - Error during parsing: setting up rule: no flag action provided',
    ],
    [
      'header {\n query set\n}',
      'plugin/header: Corefile:2 - Error during parsing: setting up rule: invalid length for flags, at least one should be provided',
    ],
    [
      'header {\n query set aa\n response Toggle aa\n}',
      'plugin/header: Corefile:3 - Error during parsing: setting up rule: unknown flag action=toggle, should be set or clear',
    ],
    [
      'header {\n response set ra AD\n}',
      'plugin/header: Corefile:2 - Error during parsing: setting up rule: unknown/unsupported flag=ad',
    ],
  ])('%j', (text, message) => {
    expect(setupErr(text)).toBe(message);
  });
});

describe('header: handler', () => {
  it('query rules change the request the next plugins see (flags word and packet), on a copy', () => {
    const next = new FakeNext(() => 2);
    const h = handlerOf(header, 'header {\n query clear rd\n query set aa\n}', next);
    const q = makeQuery('example.org', 'A', { rd: true });
    const raw = q.raw;
    void h.serve(q);
    const seen = next.seen[0]!;
    expect(seen.req.flags & Flag.RD).toBe(0);
    expect(seen.req.flags & Flag.AA).toBe(Flag.AA);
    const reparsed = parseRequest(seen.raw);
    expect(reparsed.kind === 'query' && reparsed.req.flags).toBe(seen.req.flags);
    expect(raw.readUInt16BE(2) & Flag.RD).toBe(Flag.RD);
  });

  it('response rules apply in order, the last rule per flag wins; wire replies are copied', () => {
    let written: Buffer | null = null;
    const next = new FakeNext((q) => {
      const m = replyTo(q.request);
      m.flags = (m.flags ?? 0) | Flag.RA;
      written = encodeMessage(m);
      q.writeWire(written, 'fake');
      return 0;
    });
    const h = handlerOf(
      header,
      'header {\n response set aa rd\n response clear ra\n response clear aa\n response set aa\n}',
      next,
    );
    const q = makeQuery('example.org', 'A', { rd: false });
    expect(h.serve(q)).toBe(0);
    const m = decode(q.reply!.wire());
    expect(m.flag_aa).toBe(true);
    expect(m.flag_rd).toBe(true);
    expect(m.flag_ra).toBe(false);
    expect(q.reply!.plugin).toBe('fake');
    expect(decode(written!).flag_ra).toBe(true); // the plugin's bytes were not changed
  });

  it('decoded replies are changed in place; no reply means nothing to change', () => {
    const h = handlerOf(
      header,
      'header {\n response set ra\n}',
      new FakeNext((q) => {
        q.write(replyTo(q.request), 'fake');
        return 0;
      }),
    );
    const q = makeQuery('example.org', 'A');
    void h.serve(q);
    expect(decode(q.reply!.wire()).flag_ra).toBe(true);
    const failing = handlerOf(header, 'header {\n response set ra\n}', new FakeNext(() => 2));
    const q2 = makeQuery('example.org', 'A');
    expect(failing.serve(q2)).toBe(2);
    expect(q2.reply).toBeNull();
  });

  it('actions and flags in any letter case; only the first occurrence with rules counts', () => {
    const next = new FakeNext((q) => {
      q.write(replyTo(q.request), 'fake');
      return 0;
    });
    const h = handlerOf(header, 'header {\n response SET AA\n}\nheader {\n response set ra\n}', next);
    const q = makeQuery('example.org', 'A');
    void h.serve(q);
    const m = decode(q.reply!.wire());
    expect(m.flag_aa).toBe(true);
    expect(m.flag_ra).toBe(false);
  });
});
