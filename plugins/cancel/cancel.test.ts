/**
 * cancel: setup errors (CoreDNS's texts, with file:line), and the deadline honoured by forward over
 * real sockets: an upstream that never answers gets one attempt cut at the deadline instead of the
 * two attempts forward makes within its own budget.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rcode, udpQuery } from '../../test/helpers/dns.js';
import { startServer } from '../../test/helpers/server.js';
import { configError, dispenserFor, setupContext as fakeSetupContext } from '../../test/helpers/setup.js';
import { TestUpstream } from '../../test/helpers/upstream.js';
import { cancel } from './index.js';

function setupErr(text: string): string {
  return configError(() => cancel.setup(dispenserFor(text, 'cancel'), fakeSetupContext()), text).describe();
}

describe('cancel setup', () => {
  it('rejects bad timeouts', () => {
    expect(setupErr('cancel abc')).toBe('plugin/cancel: Corefile:1 - Error during parsing: invalid duration: "abc"');
    expect(setupErr('cancel 5')).toBe('plugin/cancel: Corefile:1 - Error during parsing: invalid duration: "5"');
    expect(setupErr('cancel -1s')).toBe(
      'plugin/cancel: Corefile:1 - Error during parsing: invalid negative duration: "-1s"',
    );
    expect(setupErr('cancel 0s')).toBe(
      'plugin/cancel: Corefile:1 - Error during parsing: invalid negative duration: "0s"',
    );
    expect(setupErr('cancel 1s 2s')).toBe(
      "plugin/cancel: Corefile:1 - Error during parsing: Wrong argument count or unexpected line ending after '2s'",
    );
  });
  it('accepts no argument or a duration', () => {
    expect(typeof cancel.setup(dispenserFor('cancel', 'cancel'), fakeSetupContext())).toBe('function');
    expect(typeof cancel.setup(dispenserFor('cancel 100ms', 'cancel'), fakeSetupContext())).toBe('function');
  });
});

describe('cancel with forward', () => {
  let up: TestUpstream;
  beforeAll(async () => {
    up = await TestUpstream.start();
    up.on('silent.example.', { drop: true });
  });
  afterAll(async () => {
    await up?.stop();
  });

  it('forward stops at the deadline: one attempt, then SERVFAIL', async () => {
    const s = await startServer(`. {\n  cancel 300ms\n  forward . ${up.addr}\n}\n`);
    try {
      const before = up.count('silent.example.');
      const m = await udpQuery(s.port, 'silent.example', 'A', { timeoutMs: 10_000 });
      expect(rcode(m)).toBe(2);
      expect(up.count('silent.example.') - before).toBe(1);
    } finally {
      await s.stop();
    }
  });

  it('without cancel forward makes its two attempts', async () => {
    const s = await startServer(`. {\n  forward . ${up.addr}\n}\n`);
    try {
      const before = up.count('silent.example.');
      const m = await udpQuery(s.port, 'silent.example', 'A', { timeoutMs: 10_000 });
      expect(rcode(m)).toBe(2);
      expect(up.count('silent.example.') - before).toBe(2);
    } finally {
      await s.stop();
    }
  }, 15_000);
});
