/**
 * forward . quic://: DoQ upstreams (CoreDNS 1.15.0) parse like tls:// ones (IP%NAME, port 853),
 * and the start is refused with what the runtime lacks, not served as something else.
 */
import { describe, expect, it } from 'vitest';
import { startServer } from '../../test/helpers/server.js';
import { freePort } from '../../test/helpers/net.js';
import { dispenserFor } from '../../test/helpers/setup.js';
import { parseForward } from './setup.js';

describe('forward quic:// upstreams', () => {
  it('parse as TLS addresses on port 853, marked as QUIC', () => {
    const [cfg] = parseForward(dispenserFor('forward . quic://192.0.2.1%dns.example quic://192.0.2.2:8853', 'forward'));
    expect(cfg!.to).toEqual([
      { kind: 'addr', scheme: 'tls', host: '192.0.2.1', port: 853, serverName: 'dns.example', quic: true },
      { kind: 'addr', scheme: 'tls', host: '192.0.2.2', port: 8853, serverName: null, quic: true },
    ]);
  });

  it('refuse to start, naming the upstream and the missing node:quic', async () => {
    const port = await freePort();
    await expect(startServer(`.:${port} {\n  forward . quic://192.0.2.1\n}\n`)).rejects.toThrow(
      'plugin/forward: upstream quic://192.0.2.1:853 needs DNS over QUIC, and this runtime',
    );
  });
});
