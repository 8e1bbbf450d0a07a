/**
 * multisocket: CoreDNS 1.15.0's setup errors, and N sockets on one address (SO_REUSEPORT) that
 * all answer, UDP and TCP.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decode } from '../../src/dns/message.js';
import { encodeQuery, tcpQuery, udpExchange } from '../../test/helpers/dns.js';
import { startServer, type TestServer } from '../../test/helpers/server.js';
import { configError, dispenserFor, setupContext } from '../../test/helpers/setup.js';
import { multisocket } from './index.js';

describe('multisocket: setup', () => {
  const err = (text: string) =>
    configError(() => multisocket.setup(dispenserFor(text, 'multisocket'), setupContext()), text).describe();
  it('words errors as CoreDNS 1.15.0', () => {
    expect(err('multisocket 0')).toBe('plugin/multisocket: num sockets can not be zero or negative: 0');
    expect(err('multisocket x')).toBe(
      'plugin/multisocket: invalid num sockets: strconv.Atoi: parsing "x": invalid syntax',
    );
    expect(err('multisocket 2000')).toBe('plugin/multisocket: num sockets exceeds maximum (1024): 2000');
    expect(err('multisocket 1 2')).toBe(
      "plugin/multisocket: Corefile:1 - Error during parsing: Wrong argument count or unexpected line ending after '2'",
    );
    expect(err('multisocket\nmultisocket 3')).toBe(
      "plugin/multisocket: Corefile:2 - Error during parsing: Wrong argument count or unexpected line ending after 'multisocket'",
    );
  });
});

describe('multisocket 3 on one address', () => {
  let srv: TestServer;
  beforeAll(async () => {
    srv = await startServer('. {\n  multisocket 3\n  whoami\n}\n');
  });
  afterAll(() => srv.stop());

  it('opens three sockets of each kind and answers on them', async () => {
    const l = [...srv.server.listeners.values()][0]!;
    expect(l.sockets).toBe(3);
    // Distinct source ports hash to different sockets; every one answers.
    for (let i = 0; i < 20; i++) {
      expect(decode(await udpExchange(srv.port, encodeQuery('a.example', 'A', { id: i }))).id).toBe(i);
      expect((await tcpQuery(srv.port, 'a.example', 'A', { id: i })).id).toBe(i);
    }
  });
});
