/** The configuration hash reload compares: what changes it, and Go's json.Marshal byte for byte. */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { tokensHash, tokensJson, type HashedBlock } from './hash.js';
import { parseCorefile, type ParseOptions } from './parser.js';
import type { Token } from './types.js';

const FIXTURES = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../test/fixtures/corefile');

/** The directives the Corefiles below use. */
const DIRECTIVES = new Set(['whoami', 'log', 'forward', 'cache']);

describe('tokensHash (reload)', () => {
  const opts = (env: Record<string, string> = {}, files: Record<string, string> = {}): ParseOptions => ({
    isDirective: (n) => DIRECTIVES.has(n),
    env,
    readFile: (p) => {
      const t = files[p];
      if (t === undefined) throw Object.assign(new Error('ENOENT'), { code: 'ENOENT' });
      return t;
    },
  });
  const hash = (text: string, o = opts()): string => tokensHash(parseCorefile(text, '/etc/coredns/Corefile', o));
  const base = '.:53 {\n  whoami\n  log . "{remote}"\n}\n';

  it('is a SHA-512 hex digest, stable across runs', () => {
    expect(hash(base)).toMatch(/^[0-9a-f]{128}$/);
    expect(hash(base)).toBe(hash(base));
  });
  it('ignores whitespace and comment edits within a line', () => {
    expect(hash('.:53   {   # hi\n\twhoami#x\n  log   .   "{remote}"  \n}  \n# end')).toBe(hash(base));
  });
  it('changes when a line is inserted (line numbers shift)', () => {
    expect(hash(`\n${base}`)).not.toBe(hash(base));
  });
  it('changes with a used environment variable', () => {
    const t = '.:53 {\n forward . {$UP}\n}';
    expect(hash(t, opts({ UP: '1.1.1.1' }))).not.toBe(hash(t, opts({ UP: '8.8.8.8' })));
    expect(hash(t, opts({ UP: '1.1.1.1', OTHER: 'x' }))).toBe(hash(t, opts({ UP: '1.1.1.1' })));
  });
  it('changes when an imported file changes', () => {
    const t = '.:53 {\n import extra.conf\n}';
    const a = hash(t, opts({}, { '/etc/coredns/extra.conf': 'cache 30\n' }));
    const b = hash(t, opts({}, { '/etc/coredns/extra.conf': 'cache 60\n' }));
    expect(a).not.toBe(b);
  });
  it('serialises like CoreDNS json.Marshal (Go golden output)', () => {
    // test/fixtures/corefile/go-json-golden.txt was produced by go-json-golden.go.txt (Go's
    // encoding/json on caddyfile.ServerBlock-shaped structs) from the same data as below.
    const [golden, goldenNull] = fs.readFileSync(path.join(FIXTURES, 'go-json-golden.txt'), 'utf8').split('\n');
    const tok = (text: string, line: number, file = '/etc/Core file'): Token => ({
      text,
      file,
      line,
      endLine: line,
      quoted: false,
    });
    const texts = ['a<b>&c', 'q"uote\\', 'nl\nx\r\t\b\f\x01\x1f\x7f', 'é😀\u2028\u2029', '{remote}'];
    const blocks: HashedBlock[] = [
      {
        keys: [tok('.:53', 1, 'Corefile'), tok('b.org', 1, 'Corefile')],
        directives: new Map([
          ['whoami', [tok('whoami', 2, 'Corefile')]],
          ['log', texts.map((t, i) => tok(t, i + 1))],
          ['cache', []],
        ]),
      },
      { keys: [tok('x', 1)], directives: new Map() },
    ];
    expect(tokensJson(blocks)).toBe(golden);
    expect(tokensJson([])).toBe(goldenNull);
  });
});
