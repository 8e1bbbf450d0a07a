/**
 * https: the DoH limits parsed as CoreDNS 1.15.0 parses them, errors in its words (checked against
 * the real binary), and the values the core receives. The listener itself: src/server/doh.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { HTTPS_OPTIONS } from '../../src/server/listenopts.js';
import { configError, dispenserFor, setupContext } from '../../test/helpers/setup.js';
import { https } from './index.js';

const setupErr = (text: string): string =>
  configError(() => https.setup(dispenserFor(text, 'https'), setupContext()), text).describe();

describe('https setup', () => {
  it('rejects what CoreDNS rejects, with its wording', () => {
    const cases: [string, string][] = [
      [
        'https a',
        "plugin/https: Corefile:1 - Error during parsing: Wrong argument count or unexpected line ending after 'a'",
      ],
      [
        'https {\n max_connections\n}',
        "plugin/https: Corefile:2 - Error during parsing: Wrong argument count or unexpected line ending after 'max_connections'",
      ],
      [
        'https {\n max_connections x\n}',
        'plugin/https: Corefile:2 - Error during parsing: invalid max_connections value \'x\': strconv.Atoi: parsing "x": invalid syntax',
      ],
      [
        'https {\n max_connections -1\n}',
        'plugin/https: Corefile:2 - Error during parsing: max_connections must be a non-negative integer: -1',
      ],
      [
        'https {\n max_streams 4294967296\n}',
        'plugin/https: Corefile:2 - Error during parsing: max_streams must not exceed 4294967295: 4294967296',
      ],
      [
        'https {\n max_streams 1\n max_streams 2\n}',
        'plugin/https: Corefile:3 - Error during parsing: max_streams already defined for this server block',
      ],
      ['https {\n bogus 1\n}', "plugin/https: Corefile:2 - Error during parsing: unknown property 'bogus'"],
    ];
    for (const [text, want] of cases) expect(setupErr(text)).toBe(want);
  });

  it('gives the limits to the core; absent ones stay undefined (the listener applies 200 and 250)', async () => {
    const ctx = setupContext();
    await https.setup(dispenserFor('https {\n max_connections 0\n max_streams 100\n}', 'https'), ctx);
    ctx.seal();
    expect(ctx.lookup(HTTPS_OPTIONS)).toEqual({ maxConnections: 0, maxStreams: 100 });
  });
});
