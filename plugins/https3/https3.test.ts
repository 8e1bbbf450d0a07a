/**
 * https3: the DoH3 limits parsed as CoreDNS 1.15.0 parses them (errors checked against the real
 * binary), and an `https3://` block refusing to start, naming what the runtime lacks (§7.5).
 */
import { describe, expect, it } from 'vitest';
import { HTTPS3_OPTIONS } from '../../src/server/listenopts.js';
import { startServer } from '../../test/helpers/server.js';
import { configError, dispenserFor, setupContext } from '../../test/helpers/setup.js';
import { freePort } from '../../test/helpers/net.js';
import { https3 } from './index.js';

const setupErr = (text: string): string =>
  configError(() => https3.setup(dispenserFor(text, 'https3'), setupContext()), text).describe();

describe('https3 setup', () => {
  it('rejects what CoreDNS rejects, with its wording', () => {
    const cases: [string, string][] = [
      [
        'https3 {\n max_streams -1\n}',
        'plugin/https3: Corefile:2 - Error during parsing: max_streams must be a non-negative integer: -1',
      ],
      ['https3 {\n foo\n}', "plugin/https3: Corefile:2 - Error during parsing: unknown property 'foo'"],
      [
        'https3 {\n max_connections x\n}',
        'plugin/https3: Corefile:2 - Error during parsing: invalid max_connections value \'x\': strconv.Atoi: parsing "x": invalid syntax',
      ],
    ];
    for (const [text, want] of cases) expect(setupErr(text)).toBe(want);
  });

  it('gives the limits to the core', async () => {
    const ctx = setupContext();
    await https3.setup(dispenserFor('https3 {\n max_streams 0\n max_connections 7\n}', 'https3'), ctx);
    ctx.seal();
    expect(ctx.lookup(HTTPS3_OPTIONS)).toEqual({ maxStreams: 0, maxConnections: 7 });
  });

  it('an https3:// block refuses to start and says what is missing', async () => {
    const port = await freePort();
    await expect(startServer(`https3://.:${port} {\n  whoami\n}\n`)).rejects.toThrow(
      `cannot serve https3://:${port}: DNS over HTTPS/3 needs QUIC`,
    );
  });
});
