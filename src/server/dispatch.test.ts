import { describe, expect, it } from 'vitest';
import { encodeQuery } from '../../test/helpers/dns.js';
import { Rcode } from '../dns/constants.js';
import type { Handler } from '../plugin.js';
import { makeDispatch } from './dispatch.js';
import type { Exchange } from './listener.js';
import { RouteTable } from './routes.js';
import { captureLogs } from '../../test/helpers/logs.js';

/** An exchange that records what the dispatcher does with it; `failFirst` makes the first reply throw. */
function exchange(failFirst: boolean): Exchange & { replies: Buffer[]; dones: number } {
  let fail = failFirst;
  return {
    proto: 'udp',
    family: 1,
    remoteAddress: '127.0.0.1',
    remotePort: 5353,
    localAddress: '',
    localPort: 53,
    server: 'dns://:53',
    replies: [],
    dones: 0,
    respond(reply: Buffer): void {
      if (fail) {
        fail = false;
        throw new Error('socket went away');
      }
      this.replies.push(reply);
    },
    done(): void {
      this.dones++;
    },
  };
}

function dispatchTo(chain: Handler): ReturnType<typeof makeDispatch> {
  const table = new RouteTable();
  table.add({ zone: '.', chain });
  return makeDispatch(table, { maxUdpSize: 1232 });
}

const refused: Handler = { name: 'test', serve: () => Rcode.REFUSED };
const refusedLater: Handler = { name: 'test', serve: () => Promise.resolve(Rcode.REFUSED) };

describe('dispatch: ending an exchange', () => {
  for (const [what, chain] of [
    ['synchronous', refused],
    ['asynchronous', refusedLater],
  ] as const) {
    it(`${what} result: one reply, then done once`, async () => {
      const ex = exchange(false);
      dispatchTo(chain)(encodeQuery('example.org', 'A'), ex);
      await new Promise((r) => setImmediate(r));
      expect(ex.replies.map((b) => b[3]! & 0xf)).toEqual([Rcode.REFUSED]);
      expect(ex.dones).toBe(1);
    });

    it(`${what} result: a failure while replying answers SERVFAIL and still ends the exchange`, async () => {
      const logs = captureLogs();
      const lines = logs.lines;
      try {
        const ex = exchange(true);
        dispatchTo(chain)(encodeQuery('example.org', 'A'), ex);
        await new Promise((r) => setImmediate(r));
        expect(ex.replies.map((b) => b[3]! & 0xf)).toEqual([Rcode.SERVFAIL]);
        expect(ex.dones).toBe(1);
      } finally {
        logs.restore();
      }
      expect(
        lines.some((l) => l.startsWith('[ERROR] Recovered from panic in server: "dns://:53" Error: socket went away')),
      ).toBe(true);
    });
  }
});
