/**
 * A port-0 listener whose TCP twin of its UDP port is taken opens again on another port; a port
 * the operator chose is never changed. The clash itself cannot be arranged on purpose (the kernel
 * picks the port), so the retry rule is tested with opens that fail as a clash would, and a real
 * listener shows that a failed TCP listen leaves no UDP socket behind.
 */
import * as dgram from 'node:dgram';
import * as net from 'node:net';
import { describe, expect, it } from 'vitest';
import { EPHEMERAL_PORT_ATTEMPTS, openOnEphemeralPort } from './ephemeralport.js';
import { Listener } from './listener.js';

function inUse(): NodeJS.ErrnoException {
  return Object.assign(new Error('listen EADDRINUSE: address already in use'), { code: 'EADDRINUSE' });
}

/** An open that fails with `errors` in turn, then succeeds; counts opens and resets. */
function opens(errors: Error[]): {
  open: () => Promise<void>;
  reset: () => void;
  count: { opens: number; resets: number };
} {
  const count = { opens: 0, resets: 0 };
  return {
    count,
    open: async () => {
      const e = errors[count.opens++];
      if (e) throw e;
    },
    reset: () => void count.resets++,
  };
}

describe('opening on an ephemeral port', () => {
  it('tries again after EADDRINUSE when the port was 0', async () => {
    const o = opens([inUse(), inUse()]);
    await openOnEphemeralPort(true, o.open, o.reset);
    expect(o.count).toEqual({ opens: 3, resets: 2 });
  });

  it('gives up after a bounded number of opens, with the last error', async () => {
    const o = opens(Array.from({ length: EPHEMERAL_PORT_ATTEMPTS + 3 }, inUse));
    await expect(openOnEphemeralPort(true, o.open, o.reset)).rejects.toThrow(/EADDRINUSE/);
    expect(o.count.opens).toBe(EPHEMERAL_PORT_ATTEMPTS);
  });

  it('never retries a chosen port, nor another error', async () => {
    const chosen = opens([inUse()]);
    await expect(openOnEphemeralPort(false, chosen.open, chosen.reset)).rejects.toThrow(/EADDRINUSE/);
    expect(chosen.count).toEqual({ opens: 1, resets: 0 });
    const other = opens([Object.assign(new Error('permission denied'), { code: 'EACCES' })]);
    await expect(openOnEphemeralPort(true, other.open, other.reset)).rejects.toThrow(/permission denied/);
    expect(other.count).toEqual({ opens: 1, resets: 0 });
  });

  it('a listener whose TCP port is taken keeps no UDP socket on that port', async () => {
    const blocker = net.createServer();
    await new Promise<void>((r) => blocker.listen(0, '127.0.0.1', () => r()));
    const port = (blocker.address() as net.AddressInfo).port;
    try {
      const l = new Listener(`dns://127.0.0.1:${port}`, '127.0.0.1', port, () => undefined);
      await expect(l.open()).rejects.toThrow(/EADDRINUSE/);
      // The UDP port is free again: a plain socket can bind it.
      const probe = dgram.createSocket('udp4');
      await new Promise<void>((resolve, reject) => {
        probe.once('error', reject);
        probe.bind(port, '127.0.0.1', () => resolve());
      });
      probe.close();
    } finally {
      blocker.close();
    }
  });
});
