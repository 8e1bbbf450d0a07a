/**
 * Error recovery for `-validate` (ParseOptions.recover): every error of a Corefile in one run,
 * resuming at the key, import line, directive or snippet, while a Corefile without errors parses
 * to exactly what a normal parse gives, and the first error is the one a normal parse throws.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { pluginByName } from '../../plugins/index.js';
import { tokensJson } from './hash.js';
import { parseCorefileWithFiles, sortConfigErrors, type ParseOptions, type ParseResult } from './parser.js';
import { ConfigError } from './types.js';

const FIXTURES = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../test/fixtures/corefile');
const isDirective = (n: string) => pluginByName(n) !== undefined;

function recover(
  text: string,
  o: Partial<ParseOptions> & { file?: string } = {},
): ParseResult & { warnings: string[] } {
  const warnings: string[] = [];
  const r = parseCorefileWithFiles(text, o.file ?? 'Corefile', {
    isDirective,
    env: {},
    warn: (m) => warnings.push(m),
    ...o,
    recover: true,
  });
  return { ...r, warnings };
}

/** Errors as `line - message` (single-file inputs). */
function errs(r: ParseResult): string[] {
  return r.errors.map((e) => `${e.line} - ${e.message}`);
}

/** Blocks as `keys: directive names` lines. */
function shape(r: ParseResult): string[] {
  return r.blocks.map((b) => `${b.keys.map((k) => k.text).join(',')}: ${[...b.directives.keys()].join(' ')}`);
}

/** The normal parse: blocks JSON, or the thrown error as `file:line - message`. */
function strict(text: string, file = 'Corefile', env: Record<string, string> = {}): { json?: string; error?: string } {
  try {
    return { json: tokensJson(parseCorefileWithFiles(text, file, { isDirective, env, warn: () => {} }).blocks) };
  } catch (e) {
    if (!(e instanceof ConfigError)) throw e;
    return { error: e.describe() };
  }
}

describe('recovery: every error, in one run', () => {
  it('unknown directives in several blocks, with and without nested blocks; the rest of each block is kept', () => {
    const r = recover(
      'a.org {\n  whoami\n  frob {\n    x\n    y\n  }\n  log\n}\nb.org {\n  nope 1 2\n  errors\n  bogus\n}\n',
    );
    expect(errs(r)).toEqual([
      "3 - Unknown directive 'frob'",
      "10 - Unknown directive 'nope'",
      "12 - Unknown directive 'bogus'",
    ]);
    expect(shape(r)).toEqual(['a.org: whoami log', 'b.org: errors']);
  });

  it('a bad import line is skipped and the next block still parses', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'corefile-recover-'));
    try {
      fs.writeFileSync(path.join(dir, 'ok.conf'), 'cache 30\n');
      const file = path.join(dir, 'Corefile');
      const text =
        'a.org {\n  import missing.conf\n  import one two\n  import\n  import ok.conf\n  whoami\n}\nimport nothere\nb.org {\n  log\n}\n';
      const r = recover(text, { file });
      expect(errs(r)).toEqual([
        '2 - File to import not found: missing.conf',
        '3 - Import takes only one argument (glob pattern or file)',
        "4 - Wrong argument count or unexpected line ending after 'import'",
        '8 - File to import not found: nothere',
      ]);
      expect(shape(r)).toEqual(['a.org: cache whoami', 'b.org: log']);
      expect(r.files).toEqual([file, path.join(dir, 'ok.conf')]);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it("a `}` on a directive's line closes the block; parsing goes on after it", () => {
    const r = recover('a.org {\n  whoami }\nb.org {\n  frob\n}\n');
    expect(errs(r)).toEqual(["2 - Unexpected '}' because no matching opening brace", "4 - Unknown directive 'frob'"]);
    expect(shape(r)).toEqual(['a.org: whoami', 'b.org: ']);
  });

  it('an unclosed nested block is one error at the end, and the directive is left out', () => {
    const r = recover('a.org {\n  log\n  forward . 1.2.3.4 {\n    max_fails 2\n');
    expect(errs(r)).toEqual(['4 - Unexpected EOF']);
    expect(shape(r)).toEqual(['a.org: log']);
  });

  it('a block missing its closing brace at the end of the file is reported once', () => {
    const r = recover('a.org {\n  frob\n  log\n');
    expect(errs(r)).toEqual([
      "2 - Unknown directive 'frob'",
      "3 - Syntax error: Unexpected token 'log', expecting '}'",
    ]);
  });

  it('key errors: a lone comma and a comma before `{` drop only the missing key', () => {
    const r = recover('a.org, , b.org {\n  whoami\n}\nc.org, {\n  log\n}\n');
    expect(errs(r)).toEqual([
      "1 - Expected an address before ',' - check for extra comma",
      "4 - Expected another address but had '{' - check for extra comma",
    ]);
    expect(shape(r)).toEqual(['a.org,b.org: whoami', 'c.org: log']);
  });

  it('snippets: a redeclaration keeps the first; a snippet without braces is one error, and importing it adds no other', () => {
    const r = recover('(s) {\n  log\n}\n(s) {\n  whoami\n}\n(t)\na.org {\n  import s\n  import t\n  frob\n}\n');
    expect(errs(r)).toEqual([
      '4 - redeclaration of previously declared snippet s',
      "8 - Syntax error: Unexpected token 'a.org', expecting '{'",
      "11 - Unknown directive 'frob'",
    ]);
    expect(shape(r)).toEqual(['a.org: log']);
  });

  it('a snippet importing itself is reported at its definition, once', () => {
    const r = recover('(s) {\n  import s\n}\na.org {\n  import s\n  whoami\n}\n');
    expect(errs(r)).toEqual(['2 - maximum snippet import depth (10000) exceeded']);
    expect(shape(r)).toEqual(['a.org: whoami']);
  });

  it('the snippet expansion limit is reported once', () => {
    const r = recover('(a) {\n  import b\n}\n(b) {\n  import a\n}\nx.org {\n  import a\n  whoami\n}\n');
    expect(r.errors).toHaveLength(1);
    expect(r.errors[0]!.message).toBe('maximum snippet import depth (10000) exceeded');
    expect(shape(r)).toEqual(['x.org: whoami']);
  });

  it('errors in imported files keep their file and are sorted into reading order', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'corefile-recover-'));
    try {
      const inc = path.join(dir, 'inc.conf');
      fs.writeFileSync(inc, 'whoami\nfrob\n');
      const file = path.join(dir, 'Corefile');
      const r = recover('a.org {\n  bogus\n  import inc.conf\n}\nb.org {\n  nope\n}\n', { file });
      // Met in this order: Corefile:2, inc.conf:2, Corefile:6; sorted main file first.
      expect(r.errors.map((e) => `${path.basename(e.file!)}:${e.line}`)).toEqual([
        'Corefile:2',
        'inc.conf:2',
        'Corefile:6',
      ]);
      expect(sortConfigErrors([...r.errors], r.files).map((e) => `${path.basename(e.file!)}:${e.line}`)).toEqual([
        'Corefile:2',
        'Corefile:6',
        'inc.conf:2',
      ]);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('recovery changes nothing else', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'corefile-recover-'));
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('valid Corefiles parse to the same blocks and files, with no errors', () => {
    const inputs: [string, string][] = [
      ...['kubeadm.Corefile', 'deployment.Corefile', 'helm.Corefile', 'imports/Corefile'].map((n): [string, string] => {
        const f = path.join(FIXTURES, n);
        return [f, fs.readFileSync(f, 'utf8')];
      }),
      [
        'Corefile',
        '(s) {\n log\n}\na.org, b.org:1053 {\n import s\n whoami\n}\n. {\n forward . 1.1.1.1 {\n  except a\n }\n}\n',
      ],
    ];
    for (const [file, text] of inputs) {
      const normal = parseCorefileWithFiles(text, file, { isDirective, env: {}, warn: () => {} });
      const r = recover(text, { file });
      expect(r.errors).toEqual([]);
      expect(tokensJson(r.blocks)).toBe(tokensJson(normal.blocks));
      expect(r.files).toEqual(normal.files);
    }
  });

  // Broken variants of real Corefiles, made by a fixed pseudo-random sequence of edits (delete,
  // duplicate or insert a brace, comma, `import` or unknown word at a token boundary). For each
  // one: a normal parse and a recovering parse agree on the blocks when there is no error, and
  // otherwise the first collected error is the thrown one; recovery never throws or loops.
  it('on 600 mutated Corefiles: same blocks without errors, else the thrown error comes first', () => {
    const bases = ['kubeadm.Corefile', 'helm.Corefile'].map((n) => fs.readFileSync(path.join(FIXTURES, n), 'utf8'));
    bases.push(
      '(snip) {\n  log\n  errors\n}\na.org {\n  import snip\n  whoami\n}\nb.org:1053, c.org {\n  cache 30 {\n    success 100\n  }\n  forward . 127.0.0.1\n}\n',
    );
    const inserts = ['{', '}', ',', 'import', 'import snip', 'frob', '(x)', '{\n', '\n}\n'];
    let seed = 12345;
    const rand = (n: number) => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      return seed % n;
    };
    let errorsSeen = 0;
    for (let i = 0; i < 600; i++) {
      const base = bases[rand(bases.length)]!;
      const words = base.split(/(\s+)/);
      for (let edits = 1 + rand(3); edits > 0; edits--) {
        const at = rand(words.length);
        const op = rand(3);
        if (op === 0) words.splice(at, 1);
        else if (op === 1) words.splice(at, 0, words[at] ?? '', ' ');
        else words.splice(at, 0, ' ', inserts[rand(inserts.length)]!, ' ');
      }
      const text = words.join('');
      const s = strict(text);
      const r = recover(text);
      if (s.error === undefined) {
        expect(r.errors, text).toEqual([]);
        expect(tokensJson(r.blocks), text).toBe(s.json);
      } else {
        errorsSeen++;
        expect(r.errors.length, text).toBeGreaterThan(0);
        expect(r.errors[0]!.describe(), text).toBe(s.error);
      }
    }
    // The sequence must actually exercise recovery.
    expect(errorsSeen).toBeGreaterThan(100);
  });
});

describe('unset environment variables (onUnsetEnv)', () => {
  it('names each unset reference with its token; set-but-empty is not unset', () => {
    const seen: string[] = [];
    parseCorefileWithFiles('{$ZONE}:53 {\n  forward . {$UP} {%UP%}\n  log {$EMPTY}\n}\n', 'Corefile', {
      isDirective,
      env: { EMPTY: '', ZONE: 'a.org' },
      onUnsetEnv: (name, tok) => seen.push(`${name}@${tok.file}:${tok.line}`),
    });
    expect(seen).toEqual(['UP@Corefile:2', 'UP@Corefile:2']);
  });
});
