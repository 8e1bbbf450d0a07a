/**
 * timeouts: setup errors in CoreDNS 1.15.0's words (with file:line), and the listener behaviour
 * over real TCP connections: the read timeout for a first query, the idle timeout between queries,
 * `maxtcpqueries`, and the values following a reload.
 */
import * as net from 'node:net';
import { describe, expect, it } from 'vitest';
import { encodeQuery } from '../../test/helpers/dns.js';
import { startServer } from '../../test/helpers/server.js';
import { configError, dispenserFor, setupContext as fakeSetupContext } from '../../test/helpers/setup.js';
import { timeouts } from './index.js';

function setupErr(text: string): string {
  return configError(() => timeouts.setup(dispenserFor(text, 'timeouts'), fakeSetupContext()), text).describe();
}

describe('timeouts setup', () => {
  it('rejects what CoreDNS rejects, with its wording', () => {
    const cases: [string, string][] = [
      [
        'timeouts a {\n read 5s\n}',
        "plugin/timeouts: plugin/timeouts: Corefile:1 - Error during parsing: Wrong argument count or unexpected line ending after 'a'",
      ],
      [
        'timeouts {\n}',
        'plugin/timeouts: plugin/timeouts: Corefile:2 - Error during parsing: timeouts block with no timeouts specified',
      ],
      [
        'timeouts {\n read\n}',
        "plugin/timeouts: Corefile:2 - Error during parsing: Wrong argument count or unexpected line ending after 'read'",
      ],
      [
        'timeouts {\n read 5s 6s\n}',
        "plugin/timeouts: Corefile:2 - Error during parsing: Wrong argument count or unexpected line ending after '6s'",
      ],
      [
        'timeouts {\n read 500ms\n}',
        "plugin/timeouts: Corefile:2 - Error during parsing: timeout provided '500ms' needs to be between 1 second and 24 hours",
      ],
      [
        'timeouts {\n write 25h\n}',
        "plugin/timeouts: Corefile:2 - Error during parsing: timeout provided '25h0m0s' needs to be between 1 second and 24 hours",
      ],
      [
        'timeouts {\n idle xyz\n}',
        "plugin/timeouts: Corefile:2 - Error during parsing: failed to parse duration 'xyz'",
      ],
      ['timeouts {\n foo 5s\n}', "plugin/timeouts: Corefile:2 - Error during parsing: unknown option: 'foo'"],
      [
        'timeouts {\n maxtcpqueries 0\n}',
        "plugin/timeouts: Corefile:2 - Error during parsing: maxtcpqueries provided '0' needs to be -1 (unlimited) or a positive integer",
      ],
      [
        'timeouts {\n maxtcpqueries -2\n}',
        "plugin/timeouts: Corefile:2 - Error during parsing: maxtcpqueries provided '-2' needs to be -1 (unlimited) or a positive integer",
      ],
      [
        'timeouts {\n maxtcpqueries x\n}',
        'plugin/timeouts: Corefile:2 - Error during parsing: invalid value for maxtcpqueries \'x\': strconv.Atoi: parsing "x": invalid syntax',
      ],
    ];
    for (const [text, want] of cases) expect(setupErr(text), text).toBe(want);
  });
  it('accepts plain seconds and every option', () => {
    expect(
      timeouts.setup(
        dispenserFor('timeouts {\n read 5\n write 2s\n idle 1m\n maxtcpqueries -1\n}', 'timeouts'),
        fakeSetupContext(),
      ),
    ).toBeNull();
  });
});

/** A TCP connection that records replies and whether the server closed it. */
function connect(port: number): Promise<{ sock: net.Socket; replies: Buffer[]; closed: Promise<void> }> {
  return new Promise((resolve, reject) => {
    const sock = net.connect(port, '127.0.0.1');
    const replies: Buffer[] = [];
    let buf = Buffer.alloc(0);
    const closed = new Promise<void>((r) => sock.on('close', () => r()));
    sock.on('data', (d) => {
      buf = Buffer.concat([buf, d]);
      while (buf.length >= 2 && buf.length >= 2 + buf.readUInt16BE(0)) {
        replies.push(buf.subarray(2, 2 + buf.readUInt16BE(0)));
        buf = buf.subarray(2 + buf.readUInt16BE(0));
      }
    });
    sock.on('error', () => undefined);
    sock.once('connect', () => resolve({ sock, replies, closed }));
    sock.once('error', reject);
  });
}

function frame(q: Buffer): Buffer {
  const len = Buffer.alloc(2);
  len.writeUInt16BE(q.length);
  return Buffer.concat([len, q]);
}

describe('timeouts on the listener', () => {
  it('maxtcpqueries: the connection ends after that many answers; a reload changes it', async () => {
    const s = await startServer('. {\n  timeouts {\n    maxtcpqueries 2\n  }\n  whoami\n}\n');
    try {
      const c = await connect(s.port);
      c.sock.write(Buffer.concat([1, 2, 3].map((id) => frame(encodeQuery('a.example', 'A', { id })))));
      await c.closed;
      expect(c.replies.map((r) => r.readUInt16BE(0))).toEqual([1, 2]);
      expect(await s.reload('. {\n  timeouts {\n    maxtcpqueries 3\n  }\n  whoami\n}\n')).toBe(true);
      const d = await connect(s.port);
      d.sock.write(Buffer.concat([1, 2, 3, 4].map((id) => frame(encodeQuery('a.example', 'A', { id })))));
      await d.closed;
      expect(d.replies.map((r) => r.readUInt16BE(0))).toEqual([1, 2, 3]);
    } finally {
      await s.stop();
    }
  });

  it('read: a connection without a first query is closed; idle: after a query; the listener applies both', async () => {
    const s = await startServer('. {\n  timeouts {\n    read 1s\n    idle 2s\n  }\n  whoami\n}\n');
    try {
      // The values the listener's connections use (CoreDNS's defaults would be 3 s and 10 s);
      // when a timer fires is the runtime's business, so no wall-clock bound is asserted.
      const limits = () =>
        [...s.server.listeners.values()].map((l) => [l.tcpPool.limits.readTimeoutMs, l.tcpPool.limits.idleTimeoutMs]);
      expect(limits()).toEqual([[1000, 2000]]);
      const silent = await connect(s.port);
      await silent.closed;
      expect(silent.replies).toHaveLength(0);
      const idle = await connect(s.port);
      idle.sock.write(frame(encodeQuery('a.example', 'A', { id: 9 })));
      await idle.closed;
      expect(idle.replies).toHaveLength(1);
      expect(await s.reload('. {\n  timeouts {\n    read 4s\n  }\n  whoami\n}\n')).toBe(true);
      expect(limits()).toEqual([[4000, 10_000]]);
    } finally {
      await s.stop();
    }
  });
});
