/**
 * The etcd plugin against a real etcd (`.bin/etcd`, test/helpers/etcd.ts): keys written as
 * external-dns writes them, changes seen through the watch, etcd unreachable before the first list
 * (SERVFAIL, no hang) and stopped and restarted after it (the last known keys answer, then the
 * new ones), TLS with a generated CA and client certificates, simple-auth credentials, lease TTLs,
 * and one index (one etcd watch) for a server running several query threads.
 */
import * as dgram from 'node:dgram';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { decode, type Message } from '../../src/dns/message.js';
import { EXTERNAL_DNS_KEYS } from '../../test/fixtures/etcd/externaldns.js';
import { encodeQuery, rcode, udpQuery } from '../../test/helpers/dns.js';
import { EtcdServer } from '../../test/helpers/etcd.js';
import { freePort } from '../../test/helpers/net.js';
import { rrLines } from '../../test/helpers/records.js';
import { startServer, type TestServer } from '../../test/helpers/server.js';
import { spawnServer, type Spawned } from '../../test/helpers/spawn.js';
import { waitFor } from '../../test/helpers/wait.js';

const NOERROR = 0;
const SERVFAIL = 2;
const NXDOMAIN = 3;

const corefile = (endpoint: string, extra = ''): string => `skydns.test {
  etcd {
    endpoint ${endpoint}
${extra}
  }
}
`;

const answers = (m: Message): string[] => rrLines(m.answers);

async function fill(e: EtcdServer): Promise<void> {
  for (const [k, v] of Object.entries(EXTERNAL_DNS_KEYS)) await e.put(k, JSON.stringify(v));
}

/** Wait until `name` answers with `rc` (and, if given, these records). */
async function until(port: number, name: string, rc: number, records?: string[]): Promise<Message> {
  return waitFor(`${name} to answer rcode ${rc}${records ? ` with ${records.join(', ')}` : ''}`, async () => {
    const m = await udpQuery(port, name, 'A');
    if (rcode(m) !== rc) return null;
    if (records && JSON.stringify(answers(m)) !== JSON.stringify(records)) return null;
    return m;
  });
}

const servers: { stop(): Promise<unknown> }[] = [];
afterEach(async () => {
  while (servers.length) await servers.pop()!.stop();
});

describe('etcd plugin on a real etcd', () => {
  let etcd: EtcdServer;
  beforeAll(async () => {
    etcd = await EtcdServer.start();
    await fill(etcd);
  }, 90_000);
  afterAll(async () => {
    await etcd?.close();
  });

  const start = async (text: string): Promise<TestServer> => {
    const s = await startServer(text);
    servers.push(s);
    return s;
  };

  it('answers SERVFAIL with the SOA, at once, while etcd was never reached', async () => {
    const dead = `http://127.0.0.1:${await freePort()}`;
    const s = await start(corefile(dead));
    const m = await udpQuery(s.port, 'www.skydns.test', 'A');
    expect(rcode(m)).toBe(SERVFAIL);
    expect(rrLines(m.authorities, { maskSerial: true })).toEqual([
      'skydns.test. 30 IN SOA ns.dns.skydns.test. hostmaster.skydns.test. <serial> 7200 1800 86400 30',
    ]);
    await waitFor('the failed list to be logged', () =>
      s.logs.some(
        (l) => l.includes(`[WARNING] plugin/etcd: list of /skydns/ on ${dead}`) && l.endsWith('listing again'),
      ),
    );
  });

  it('follows puts, changes and deletes through the watch', async () => {
    const s = await start(corefile(etcd.endpoint));
    await until(s.port, 'www.skydns.test', NOERROR, [
      'www.skydns.test. 60 IN A 10.0.0.2',
      'www.skydns.test. 60 IN A 10.0.0.1',
    ]);
    await until(s.port, 'watched.skydns.test', NXDOMAIN);
    await etcd.put('/skydns/test/skydns/watched/1a2b3c4d', JSON.stringify({ host: '10.1.0.1', ttl: 10 }));
    await until(s.port, 'watched.skydns.test', NOERROR, ['watched.skydns.test. 10 IN A 10.1.0.1']);
    await etcd.put('/skydns/test/skydns/watched/1a2b3c4d', JSON.stringify({ host: '10.1.0.2', ttl: 10 }));
    await until(s.port, 'watched.skydns.test', NOERROR, ['watched.skydns.test. 10 IN A 10.1.0.2']);
    await etcd.del('/skydns/test/skydns/watched/1a2b3c4d');
    await until(s.port, 'watched.skydns.test', NXDOMAIN);
  });

  it('keeps answering the last known keys while etcd is stopped, and follows it after a restart', async () => {
    const s = await start(corefile(etcd.endpoint));
    await until(s.port, 'www.skydns.test', NOERROR);
    await etcd.stop();
    await waitFor('the broken watch to be logged', () =>
      s.logs.some((l) => l.includes('[WARNING] plugin/etcd: ') && l.endsWith('listing again')),
    );
    // etcd is down: the index still answers what it knew.
    const m = await udpQuery(s.port, 'www.skydns.test', 'A');
    expect(rcode(m)).toBe(NOERROR);
    expect(answers(m)).toHaveLength(2);
    await etcd.start();
    await etcd.put('/skydns/test/skydns/after/1', JSON.stringify({ host: '10.2.0.1' }));
    await until(s.port, 'after.skydns.test', NOERROR, ['after.skydns.test. 300 IN A 10.2.0.1']);
    await waitFor('the recovery to be logged', () =>
      s.logs.some((l) => l.includes(`[INFO] plugin/etcd: watching /skydns/ on ${etcd.endpoint} again from revision`)),
    );
    await etcd.del('/skydns/test/skydns/after/1');
  }, 90_000);

  it('keeps its index and its watch across a reload with the same etcd settings', async () => {
    const s = await start(corefile(etcd.endpoint));
    await until(s.port, 'www.skydns.test', NOERROR);
    await waitFor('etcd to count one watcher', async () => (await etcd.watchers()) === 1);
    expect(await s.reload(corefile(etcd.endpoint, '    fallthrough'))).toBe(true);
    // No list to wait for: the first query after the reload is answered from the kept index.
    expect(rcode(await udpQuery(s.port, 'www.skydns.test', 'A'))).toBe(NOERROR);
    expect(await etcd.watchers()).toBe(1);
  });

  it('moves to the next endpoint when the first does not answer', async () => {
    const dead = `http://127.0.0.1:${await freePort()}`;
    const s = await start(corefile(`${dead} ${etcd.endpoint}`));
    await until(s.port, 'www.skydns.test', NOERROR);
  });

  it('passes a name without a key on with fallthrough, and answers NXDOMAIN without it', async () => {
    const s = await start(`skydns.test {
  etcd {
    endpoint ${etcd.endpoint}
    fallthrough
  }
  whoami
}
`);
    await until(s.port, 'www.skydns.test', NOERROR);
    // whoami answers (its address in the additional section) instead of NXDOMAIN.
    const m = await udpQuery(s.port, 'nosuch.skydns.test', 'A');
    expect(rcode(m)).toBe(NOERROR);
    expect(rrLines(m.additionals)[0]).toBe('nosuch.skydns.test. 0 IN A 127.0.0.1');
    const plain = await start(corefile(etcd.endpoint));
    await until(plain.port, 'nosuch.skydns.test', NXDOMAIN);
  });

  it('uses a lease TTL bounded by min-lease-ttl when it is below the value TTL', async () => {
    const lease = await etcd.grant(600);
    await etcd.put('/skydns/test/skydns/leased/1', JSON.stringify({ host: '10.3.0.1', ttl: 3600 }), lease);
    const s = await start(corefile(etcd.endpoint, '    max-lease-ttl 5m'));
    const m = await waitFor('the leased key with a lease TTL', async () => {
      const r = await udpQuery(s.port, 'leased.skydns.test', 'A');
      return answers(r)[0] === 'leased.skydns.test. 300 IN A 10.3.0.1' ? r : null;
    });
    expect(answers(m)).toEqual(['leased.skydns.test. 300 IN A 10.3.0.1']);
    await etcd.del('/skydns/test/skydns/leased/1');
  });

  it('authenticates with credentials', async () => {
    const auth = await EtcdServer.start();
    servers.push({ stop: () => auth.close() });
    await auth.put('/skydns/test/skydns/www/1', JSON.stringify({ host: '10.4.0.1' }));
    await auth.enableAuth('s3cret');
    const ok = await start(corefile(auth.endpoint, '    credentials root s3cret'));
    await until(ok.port, 'www.skydns.test', NOERROR, ['www.skydns.test. 300 IN A 10.4.0.1']);
    const bad = await start(corefile(auth.endpoint, '    credentials root wrong'));
    expect(rcode(await udpQuery(bad.port, 'www.skydns.test', 'A'))).toBe(SERVFAIL);
    await waitFor('the refused authentication to be logged', () =>
      bad.logs.some(
        (l) => l.includes('[WARNING] plugin/etcd: list of /skydns/') && l.includes('authentication failed'),
      ),
    );
  }, 90_000);
});

describe('etcd plugin over TLS with client certificates', () => {
  let etcd: EtcdServer;
  beforeAll(async () => {
    etcd = await EtcdServer.start({ tls: true });
    await fill(etcd);
  }, 90_000);
  afterAll(async () => {
    await etcd?.close();
  });

  it('answers with CERT KEY CACERT', async () => {
    const t = etcd.clientTls!;
    const s = await startServer(corefile(etcd.endpoint, `    tls ${t.cert} ${t.key} ${t.ca}`));
    servers.push(s);
    await until(s.port, 'www.skydns.test', NOERROR, [
      'www.skydns.test. 60 IN A 10.0.0.2',
      'www.skydns.test. 60 IN A 10.0.0.1',
    ]);
  });

  it('cannot list without a client certificate, or without the CA', async () => {
    const t = etcd.clientTls!;
    for (const tls of [`tls ${t.ca}`, `tls ${t.cert} ${t.key}`]) {
      const s = await startServer(corefile(etcd.endpoint, `    ${tls}`));
      servers.push(s);
      await waitFor(`a failed TLS list with '${tls}' to be logged`, () =>
        s.logs.some((l) => l.includes('[WARNING] plugin/etcd: list of /skydns/')),
      );
      expect(rcode(await udpQuery(s.port, 'www.skydns.test', 'A'))).toBe(SERVFAIL);
    }
  });
});

describe('etcd plugin with query threads', () => {
  let etcd: EtcdServer;
  let srv: Spawned | null = null;
  beforeAll(async () => {
    etcd = await EtcdServer.start();
    await fill(etcd);
  }, 90_000);
  afterAll(async () => {
    await srv?.stop();
    await etcd?.close();
  });

  /** One query from a fresh socket (so the kernel spreads them over the threads' sockets). */
  const fresh = (port: number, name: string): Promise<Message> =>
    new Promise((resolve, reject) => {
      const sock = dgram.createSocket('udp4');
      const t = setTimeout(() => {
        sock.close();
        reject(new Error(`no reply for ${name}`));
      }, 5000);
      sock.on('message', (b) => {
        clearTimeout(t);
        sock.close();
        resolve(decode(b));
      });
      sock.send(encodeQuery(name, 'A'), port, '127.0.0.1');
    });

  it('keeps one index and one etcd watch whatever the number of threads', async () => {
    srv = await spawnServer(corefile(etcd.endpoint), ['-workers', '3']);
    const port = srv.port;
    await srv.waitFor(/^clusterdns-/);
    await waitFor(
      () => `every thread to answer from the index (server output: ${srv?.output.join(' | ')})`,
      async () => {
        const replies = await Promise.all(Array.from({ length: 24 }, () => fresh(port, 'www.skydns.test')));
        return replies.every((m) => rcode(m) === NOERROR && m.answers?.length === 2);
      },
    );
    await etcd.put('/skydns/test/skydns/threads/1', JSON.stringify({ host: '10.5.0.1' }));
    await waitFor('every thread to see the change', async () => {
      const replies = await Promise.all(Array.from({ length: 24 }, () => fresh(port, 'threads.skydns.test')));
      return replies.every((m) => rcode(m) === NOERROR && answers(m)[0] === 'threads.skydns.test. 300 IN A 10.5.0.1');
    });
    expect(await etcd.watchers()).toBe(1);
  }, 90_000);
});
