import * as net from 'node:net';
import { networkInterfaces } from 'node:os';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/corefile/types.js';
import { decode } from '../../src/dns/message.js';
import { encodeQuery, rcode, tcpQueries, udpExchange } from '../../test/helpers/dns.js';
import { freePort } from '../../test/helpers/net.js';
import { startServer } from '../../test/helpers/server.js';
import { bind } from './index.js';
import { configError, dispenserFor, setupContext } from '../../test/helpers/setup.js';

/** Run bind's setup; returns the address lists passed to `ctx.listenOn`, one per call. */
function listens(text: string): string[][] {
  const calls: string[][] = [];
  const ctx = {
    ...setupContext(),
    listenOn: (a: string[]) => {
      calls.push([...a]);
    },
  };
  const r = bind.setup(dispenserFor(text, 'bind'), ctx);
  expect(r).toBeNull();
  return calls;
}

function setupErr(text: string): ConfigError {
  return configError(() => listens(text), text);
}

/** Addresses of an interface as bind should expand them (link-local IPv6 get `%iface`). */
function ifaceAddrs(name: string): string[] {
  return (networkInterfaces()[name] ?? []).map((i) =>
    i.family === 'IPv6' && i.address.toLowerCase().startsWith('fe80:') ? `${i.address}%${name}` : i.address,
  );
}

/** Resolves true if something answered a TCP connect on host:port, false on refusal/timeout. */
function tcpConnects(host: string, port: number, timeoutMs = 2000): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect({ host, port });
    const t = setTimeout(() => {
      s.destroy();
      resolve(false);
    }, timeoutMs);
    s.once('connect', () => {
      clearTimeout(t);
      s.destroy();
      resolve(true);
    });
    s.once('error', () => {
      clearTimeout(t);
      resolve(false);
    });
  });
}

describe('bind: setup', () => {
  it('IP addresses', () => {
    expect(listens('bind 127.0.0.1')).toEqual([['127.0.0.1']]);
    expect(listens('bind 127.0.0.1 ::1 fd00::53')).toEqual([['127.0.0.1', '::1', 'fd00::53']]);
  });

  it('an interface name expands to its addresses', () => {
    const lo = ifaceAddrs('lo');
    expect(lo).toContain('127.0.0.1');
    expect(listens('bind lo')).toEqual([lo]);
  });

  it('every interface expands like networkInterfaces(), link-local IPv6 with %iface', () => {
    for (const name of Object.keys(networkInterfaces())) {
      const got = listens(`bind ${name}`)[0]!;
      expect(got, name).toEqual(ifaceAddrs(name));
      for (const a of got) if (a.toLowerCase().startsWith('fe80:')) expect(a.endsWith(`%${name}`)).toBe(true);
    }
  });

  it('several bind lines accumulate (one listenOn call each)', () => {
    expect(listens('bind 127.0.0.1\nbind ::1')).toEqual([['127.0.0.1'], ['::1']]);
  });

  it('except removes addresses (IP or interface) for its own line only', () => {
    const lo = ifaceAddrs('lo');
    expect(listens('bind lo {\n except ::1\n}')).toEqual([lo.filter((a) => a !== '::1')]);
    expect(listens('bind lo 192.0.2.53 {\n except lo\n}')).toEqual([['192.0.2.53']]);
    expect(listens('bind 127.0.0.1 ::1 {\n except ::1\n}\nbind ::1')).toEqual([['127.0.0.1'], ['::1']]);
    // The last except line of a block applies (CoreDNS 1.15.0 listens on 127.0.0.1 for
    // `bind 127.0.0.1 127.0.0.2 { except 127.0.0.1; except 127.0.0.2 }`).
    expect(listens('bind 127.0.0.1 ::1 10.0.0.1 {\n except 127.0.0.1\n except 10.0.0.1\n}')).toEqual([
      ['127.0.0.1', '::1'],
    ]);
  });

  it('no argument → at least one address or interface name is expected', () => {
    expect(setupErr('bind').message).toBe('at least one address or interface name is expected');
    expect(setupErr('bind {\n except lo\n}').message).toBe('at least one address or interface name is expected');
  });

  it('bad argument → not a valid IP address or interface name', () => {
    expect(setupErr('bind x').message).toBe('not a valid IP address or interface name: "x"');
    expect(setupErr('bind 127.0.0.1 256.1.1.1').message).toBe('not a valid IP address or interface name: "256.1.1.1"');
    expect(setupErr('bind 127.0.0.1 {\n except nosuchif0\n}').message).toBe(
      'not a valid IP address or interface name: "nosuchif0"',
    );
  });

  it('unknown property → invalid option', () => {
    expect(setupErr('bind 127.0.0.1 {\n x\n}').message).toBe('invalid option "x"');
  });

  it('except without argument is rejected', () => {
    expect(setupErr('bind 127.0.0.1 {\n except\n}')).toBeInstanceOf(ConfigError);
  });

  it('errors carry the line', () => {
    const e = setupErr('bind 127.0.0.1\nbind nope');
    expect(e.line).toBe(2);
  });
});

describe('bind: end to end', () => {
  it('bind 127.0.0.1: listener dns://127.0.0.1:PORT, answers on 127.0.0.1, not on ::1', async () => {
    const srv = await startServer('. {\n bind 127.0.0.1\n whoami\n}\n');
    try {
      expect(srv.server.servers()).toEqual([`dns://127.0.0.1:${srv.port}`]);
      const m = decode(await udpExchange(srv.port, encodeQuery('example.org', 'A')));
      expect(rcode(m)).toBe(0);
      const [t] = await tcpQueries(srv.port, [encodeQuery('example.org', 'A')]);
      expect(rcode(t!)).toBe(0);
      // Over ::1 nothing may answer (the timeout only guards the wait).
      const v6 = await udpExchange(srv.port, encodeQuery('example.org', 'A'), 1000, '::1').then(
        () => 'answered',
        () => 'no answer',
      );
      expect(v6).toBe('no answer');
      expect(await tcpConnects('::1', srv.port)).toBe(false);
    } finally {
      await srv.stop();
    }
  });

  it('bind lo: one listener per address of the interface', async () => {
    const srv = await startServer('. {\n bind lo\n whoami\n}\n');
    try {
      expect([...srv.server.servers()].sort()).toEqual(
        ifaceAddrs('lo')
          .map((a) => `dns://${a.includes(':') ? `[${a}]` : a}:${srv.port}`)
          .sort(),
      );
      expect(rcode(decode(await udpExchange(srv.port, encodeQuery('example.org', 'A'))))).toBe(0);
      if (ifaceAddrs('lo').includes('::1')) {
        expect(rcode(decode(await udpExchange(srv.port, encodeQuery('example.org', 'A'), 5000, '::1')))).toBe(0);
      }
    } finally {
      await srv.stop();
    }
  });

  it('bind lo with except ::1 does not answer on ::1', async () => {
    const srv = await startServer('. {\n bind lo {\n  except ::1\n }\n whoami\n}\n');
    try {
      expect(srv.server.servers()).not.toContain(`dns://[::1]:${srv.port}`);
      expect(srv.server.servers()).toContain(`dns://127.0.0.1:${srv.port}`);
      const v6 = await udpExchange(srv.port, encodeQuery('example.org', 'A'), 1000, '::1').then(
        () => 'answered',
        () => 'no answer',
      );
      expect(v6).toBe('no answer');
    } finally {
      await srv.stop();
    }
  });

  it('without bind the listener is dns://:PORT', async () => {
    const srv = await startServer('. {\n whoami\n}\n');
    try {
      expect(srv.server.servers()).toEqual([`dns://:${srv.port}`]);
    } finally {
      await srv.stop();
    }
  });

  it('same zone and port, one block with bind and one without → zone overlap error', async () => {
    const port = await freePort();
    await expect(
      startServer(`example.org:${port} {\n bind 127.0.0.1\n whoami\n}\nexample.org:${port} {\n whoami\n}\n`, { port }),
    ).rejects.toThrow(
      `cannot serve dns://example.org.:${port} on 127.0.0.1 - zone overlap listener capacity with dns://example.org.:${port}`,
    );
  });

  it('different zones on the same port, both bound to different addresses, are fine', async () => {
    const srv = await startServer('example.org {\n bind 127.0.0.1\n whoami\n}\nexample.net {\n bind ::1\n whoami\n}\n');
    try {
      expect([...srv.server.servers()].sort()).toEqual(
        [`dns://127.0.0.1:${srv.port}`, `dns://[::1]:${srv.port}`].sort(),
      );
      expect(rcode(decode(await udpExchange(srv.port, encodeQuery('a.example.org', 'A'))))).toBe(0);
    } finally {
      await srv.stop();
    }
  });
});
