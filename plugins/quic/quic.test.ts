/**
 * quic: the DoQ limits parsed as CoreDNS 1.15.0 parses them (errors checked against the real
 * binary), and a `quic://` block refusing to start, naming what the runtime lacks (§7.5).
 */
import { describe, expect, it } from 'vitest';
import { QUIC_OPTIONS } from '../../src/server/listenopts.js';
import { startServer } from '../../test/helpers/server.js';
import { configError, dispenserFor, setupContext } from '../../test/helpers/setup.js';
import { freePort } from '../../test/helpers/net.js';
import { quic } from './index.js';

const setupErr = (text: string): string =>
  configError(() => quic.setup(dispenserFor(text, 'quic'), setupContext()), text).describe();

describe('quic setup', () => {
  it('rejects what CoreDNS rejects, with its wording', () => {
    const cases: [string, string][] = [
      [
        'quic a',
        "plugin/quic: Corefile:1 - Error during parsing: Wrong argument count or unexpected line ending after 'a'",
      ],
      [
        'quic {\n max_streams 0\n}',
        'plugin/quic: Corefile:2 - Error during parsing: max_streams must be a positive integer: 0',
      ],
      [
        'quic {\n worker_pool_size 0\n}',
        'plugin/quic: Corefile:2 - Error during parsing: worker_pool_size must be a positive integer: 0',
      ],
      [
        'quic {\n max_connections -2\n}',
        'plugin/quic: Corefile:2 - Error during parsing: max_connections must be a non-negative integer: -2',
      ],
      [
        'quic {\n max_connections 1\n max_connections 1\n}',
        'plugin/quic: Corefile:3 - Error during parsing: max_connections already defined for this server block',
      ],
      ['quic {\n foo\n}', "plugin/quic: Corefile:2 - Error during parsing: unknown property 'foo'"],
    ];
    for (const [text, want] of cases) expect(setupErr(text)).toBe(want);
  });

  it('gives every option to the core', async () => {
    const ctx = setupContext();
    await quic.setup(
      dispenserFor('quic {\n max_streams 16\n max_connections 50\n worker_pool_size 65536\n}', 'quic'),
      ctx,
    );
    ctx.seal();
    expect(ctx.lookup(QUIC_OPTIONS)).toEqual({ maxStreams: 16, maxConnections: 50, workerPoolSize: 65536 });
  });

  it('a quic:// block refuses to start and says what is missing and how to see it', async () => {
    const port = await freePort();
    await expect(startServer(`quic://.:${port} {\n  quic {\n    max_streams 16\n  }\n  whoami\n}\n`)).rejects.toThrow(
      `cannot serve quic://:${port}: DNS over QUIC needs QUIC, and this runtime (Node ${process.versions.node}) has no node:quic module`,
    );
  });
});
