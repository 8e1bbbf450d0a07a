import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pluginByName } from '../../plugins/index.js';
import { Dispenser } from './dispenser.js';
import { globFiles } from './glob.js';
import {
  defaultCorefile,
  MAX_FILE_IMPORTS,
  MAX_SNIPPET_EXPANSIONS,
  parseCorefile,
  parseCorefileWithFiles,
  type ParseOptions,
} from './parser.js';
import { ConfigError, type ServerBlock } from './types.js';

const FIXTURES = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../test/fixtures/corefile');

/** The product's directives (docs/corefile.md §8.2), independent of which plugins are implemented yet. */
const DIRECTIVES = new Set([
  'reload',
  'bind',
  'ready',
  'health',
  'prometheus',
  'errors',
  'log',
  'loadbalance',
  'rewrite',
  'autopath',
  'cache',
  'template',
  'hosts',
  'kubernetes',
  'loop',
  'forward',
  'whoami',
]);

interface Run {
  blocks: ServerBlock[];
  warnings: string[];
}

function run(text: string, o: Partial<ParseOptions> & { file?: string } = {}): Run {
  const warnings: string[] = [];
  const blocks = parseCorefile(text, o.file ?? 'Corefile', {
    isDirective: (n) => DIRECTIVES.has(n),
    env: {},
    warn: (m) => warnings.push(m),
    ...o,
  });
  return { blocks, warnings };
}

/** Blocks as plain data: keys and, per directive, the token texts. */
type Simple = { keys: string[]; dirs: Record<string, string[]> };
function simple(blocks: ServerBlock[]): Simple[] {
  return blocks.map((b) => ({
    keys: b.keys.map((k) => k.text),
    dirs: Object.fromEntries([...b.directives].map(([n, toks]) => [n, toks.map((t) => t.text)])),
  }));
}

function parse(text: string, o: Partial<ParseOptions> & { file?: string } = {}): Simple[] {
  return simple(run(text, o).blocks);
}

/** The ConfigError a parse throws, as `file:line - message`. */
function parseErr(text: string, o: Partial<ParseOptions> & { file?: string } = {}): string {
  try {
    run(text, o);
  } catch (e) {
    expect(e).toBeInstanceOf(ConfigError);
    const c = e as ConfigError;
    return `${c.file}:${c.line} - ${c.message}`;
  }
  throw new Error('expected a parse error');
}

const WHOAMI_LOG: Simple[] = [{ keys: ['.:53'], dirs: { whoami: ['whoami'], log: ['log'] } }];

// ---------------------------------------------------------------------------------------------

describe('docs/corefile.md §9 tricky parsing examples', () => {
  type Row = { n: string; input: string; env?: Record<string, string>; want?: Simple[]; err?: string };
  const rows: Row[] = [
    { n: '#1 block over several lines', input: '.:53 {\n whoami\n log\n}', want: WHOAMI_LOG },
    {
      n: '#2 closing brace on the directive line',
      input: '.:53 { whoami }',
      err: "Corefile:1 - Unexpected '}' because no matching opening brace",
    },
    {
      n: "#3 the block's { on its own line",
      input: '.:53\n{\n whoami\n}',
      want: [{ keys: ['.:53'], dirs: { whoami: ['whoami'] } }],
    },
    {
      n: "#4 a directive's { on the next line is still attached",
      input: '.:53 {\n kubernetes cluster.local\n {\n  pods insecure\n }\n}',
      want: [{ keys: ['.:53'], dirs: { kubernetes: ['kubernetes', 'cluster.local', '{', 'pods', 'insecure', '}'] } }],
    },
    {
      n: '#5 property and } on the same line',
      input: '.:53 {\n kubernetes cluster.local {\n  pods insecure }\n}',
      want: [{ keys: ['.:53'], dirs: { kubernetes: ['kubernetes', 'cluster.local', '{', 'pods', 'insecure', '}'] } }],
    },
    {
      n: '#6 first property on the line of {',
      input: '.:53 {\n kubernetes cluster.local { pods insecure\n }\n}',
      want: [{ keys: ['.:53'], dirs: { kubernetes: ['kubernetes', 'cluster.local', '{', 'pods', 'insecure', '}'] } }],
    },
    { n: '#7a keys with comma', input: 'a.org, b.org {\n}', want: [{ keys: ['a.org', 'b.org'], dirs: {} }] },
    { n: '#7b keys with space', input: 'a.org b.org {\n}', want: [{ keys: ['a.org', 'b.org'], dirs: {} }] },
    {
      n: '#7c trailing comma continues on the next line',
      input: 'a.org,\nb.org {\n}',
      want: [{ keys: ['a.org', 'b.org'], dirs: {} }],
    },
    {
      n: '#8 { after a trailing comma',
      input: 'a.org, {\n}',
      err: "Corefile:1 - Expected another address but had '{' - check for extra comma",
    },
    { n: '#9 comments', input: '.:53 {\n whoami#comment\n log # x { y\n}', want: WHOAMI_LOG },
    {
      n: '#10 quotes and escapes',
      input: '.:53 {\n log . "{remote} \\"q\\" \\d"\n}',
      want: [{ keys: ['.:53'], dirs: { log: ['log', '.', '{remote} "q" \\d'] } }],
    },
    {
      n: '#11 env set',
      input: '.:53 {\n forward . {$UP}\n}',
      env: { UP: '8.8.8.8' },
      want: [{ keys: ['.:53'], dirs: { forward: ['forward', '.', '8.8.8.8'] } }],
    },
    {
      n: '#11 env unset → empty argument (forward then rejects it)',
      input: '.:53 {\n forward . {$UP}\n}',
      want: [{ keys: ['.:53'], dirs: { forward: ['forward', '.', ''] } }],
    },
    { n: '#12 unknown directive', input: '.:53 {\n foo\n}', err: "Corefile:2 - Unknown directive 'foo'" },
    {
      n: '#13 block not closed',
      input: '.:53 {\n whoami',
      err: "Corefile:2 - Syntax error: Unexpected token 'whoami', expecting '}'",
    },
    {
      n: '#14 stray } becomes a block with key }',
      input: '.:53 {\n whoami\n}\n}',
      want: [
        { keys: ['.:53'], dirs: { whoami: ['whoami'] } },
        { keys: ['}'], dirs: {} },
      ],
    },
    {
      n: '#15 snippet',
      input: '(snip) {\n log\n errors\n}\n.:53 {\n import snip\n whoami\n}',
      want: [{ keys: ['.:53'], dirs: { log: ['log'], errors: ['errors'], whoami: ['whoami'] } }],
    },
    {
      n: '#16 snippet used before definition',
      input: '.:53 {\n import snip\n}\n(snip) {\n log\n}',
      err: 'Corefile:2 - File to import not found: snip',
    },
    {
      n: '#17 no snippet arguments',
      input: '(snip) { \n log\n}\n.:53 {\n import snip arg1\n}',
      err: 'Corefile:5 - Import takes only one argument (glob pattern or file)',
    },
    {
      n: '#18 snippet importing itself',
      input: '(s) {\n import s\n}',
      err: 'Corefile:2 - maximum snippet import depth (10000) exceeded',
    },
    { n: '#19 snippet imported at top level', input: '(s) {\n log\n}\nimport s', want: [{ keys: ['log'], dirs: {} }] },
    {
      n: '#21 two wildcards',
      input: 'import a*b*.conf',
      err: 'Corefile:1 - Glob pattern may only contain one wildcard (*), but has others: ',
    },
    { n: '#22 no braces', input: '.:53\nwhoami\nlog', want: WHOAMI_LOG },
    { n: '#23 empty block', input: '.:53 {\n}', want: [{ keys: ['.:53'], dirs: {} }] },
    { n: '#24a empty file', input: '', want: [] },
    { n: '#24b only comments', input: '# nothing\n   # here\n', want: [] },
    { n: '#24c only snippets', input: '(a) {\n log\n}\n(b) {\n whoami\n}\n', want: [] },
    {
      n: '#25 the same key twice parses (the conflict is a server error)',
      input: '.:53 {\n whoami\n}\n.:53 {\n log\n}',
      want: [
        { keys: ['.:53'], dirs: { whoami: ['whoami'] } },
        { keys: ['.:53'], dirs: { log: ['log'] } },
      ],
    },
    {
      n: '#26 several keys with ports and CIDR',
      input: 'Example.ORG:1053 10.0.0.0/17 {\n}',
      want: [{ keys: ['Example.ORG:1053', '10.0.0.0/17'], dirs: {} }],
    },
    {
      n: '#27 brace glued to the key: brace-less block ended by }',
      input: 'example.org{\n whoami\n}',
      want: [{ keys: ['example.org{'], dirs: { whoami: ['whoami'] } }],
    },
    { n: '#28 empty key skipped', input: '"" .:53 {\n}', want: [{ keys: ['.:53'], dirs: {} }] },
    {
      n: '#29 newline inside a quoted argument',
      input: '.:53 {\n log . "{remote}\n  {name}"\n whoami\n}',
      want: [{ keys: ['.:53'], dirs: { log: ['log', '.', '{remote}\n  {name}'], whoami: ['whoami'] } }],
    },
    { n: '#30 trailing colon parses (the key check rejects it)', input: '.:', want: [{ keys: ['.:'], dirs: {} }] },
    {
      n: '#31 } after a directive',
      input: '.:53 {\n errors }',
      err: "Corefile:2 - Unexpected '}' because no matching opening brace",
    },
    {
      n: '#32 equivalent keys',
      input: 'dns://.:53 {\n}\n.:53 {\n}\n. {\n}',
      want: [
        { keys: ['dns://.:53'], dirs: {} },
        { keys: ['.:53'], dirs: {} },
        { keys: ['.'], dirs: {} },
      ],
    },
  ];

  it.each(rows)('$n', ({ input, env, want, err }) => {
    if (err !== undefined) {
      expect(parseErr(input, { env: env ?? {} })).toContain(err);
    } else {
      expect(parse(input, { env: env ?? {} })).toEqual(want);
    }
  });

  it('#4 the plugin does not see the next-line { as its block', () => {
    const [b] = run('.:53 {\n kubernetes cluster.local\n {\n  pods insecure\n }\n}').blocks;
    const d = new Dispenser(b!.directives.get('kubernetes')!, 'kubernetes');
    expect(d.next()).toBe(true);
    expect(d.remainingArgs()).toEqual(['cluster.local']);
    expect(d.nextBlock()).toBe(false);
    // …so its setup loop meets `{` as the start of another stanza (→ "used once" error).
    expect(d.next()).toBe(true);
    expect(d.val()).toBe('{');
  });

  it('#5 the plugin sees `}` as an extra argument of `pods`', () => {
    const [b] = run('.:53 {\n kubernetes cluster.local {\n  pods insecure }\n}').blocks;
    const d = new Dispenser(b!.directives.get('kubernetes')!, 'kubernetes');
    d.next();
    d.remainingArgs();
    expect(d.nextBlock()).toBe(true);
    expect(d.val()).toBe('pods');
    expect(d.remainingArgs()).toEqual(['insecure', '}']);
  });

  it('#6 the plugin reads `pods insecure` as its first property', () => {
    const [b] = run('.:53 {\n kubernetes cluster.local { pods insecure\n }\n}').blocks;
    const d = new Dispenser(b!.directives.get('kubernetes')!, 'kubernetes');
    d.next();
    expect(d.remainingArgs()).toEqual(['cluster.local']);
    expect(d.nextBlock()).toBe(true);
    expect(d.val()).toBe('pods');
    expect(d.remainingArgs()).toEqual(['insecure']);
    expect(d.nextBlock()).toBe(false);
  });

  it('#14 warns about the stray }', () => {
    const { warnings } = run('.:53 {\n whoami\n}\n}');
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain("Corefile:4 - stray '}'");
  });

  it('#29 the quoted token remembers both lines', () => {
    const [b] = run('.:53 {\n log . "{remote}\n  {name}"\n whoami\n}').blocks;
    const arg = b!.directives.get('log')![2]!;
    expect([arg.line, arg.endLine]).toEqual([2, 3]);
    expect(b!.directives.get('whoami')![0]!.line).toBe(4);
  });

  describe('#20 glob and plain imports (temp dir)', () => {
    let dir: string;
    beforeAll(() => {
      dir = fs.mkdtempSync(path.join(os.tmpdir(), 'corefile-20-'));
      fs.mkdirSync(path.join(dir, 'conf.d'));
    });
    afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

    it('a glob matching nothing imports nothing and warns', () => {
      const r = run('.:53 {\n import conf.d/*.conf\n whoami\n}', {
        file: path.join(dir, 'Corefile'),
        readFile: undefined,
      });
      expect(simple(r.blocks)).toEqual([{ keys: ['.:53'], dirs: { whoami: ['whoami'] } }]);
      expect(r.warnings).toEqual(['No files matching import glob pattern: conf.d/*.conf']);
    });
    it('a missing plain file is an error', () => {
      expect(parseErr('.:53 {\n import conf.d/x.conf\n}', { file: path.join(dir, 'Corefile') })).toBe(
        `${path.join(dir, 'Corefile')}:2 - File to import not found: conf.d/x.conf`,
      );
    });
  });
});

// ---------------------------------------------------------------------------------------------

describe('server-block keys (§3.1)', () => {
  const cases: { n: string; input: string; env?: Record<string, string>; want?: Simple[]; err?: string }[] = [
    {
      n: 'keys then EOF: a block without plugins',
      input: 'a.org b.org',
      want: [{ keys: ['a.org', 'b.org'], dirs: {} }],
    },
    { n: 'trailing comma then EOF', input: 'a.org,', err: 'Corefile:1 - Unexpected EOF' },
    // CoreDNS keeps an empty key for a lone comma and then fails on it as an invalid zone.
    {
      n: 'a lone comma is an error',
      input: 'a.org ,\nb.org {\n}',
      err: "Corefile:1 - Expected an address before ',' - check for extra comma",
    },
    {
      n: 'a comma after an unset variable is an error',
      input: 'a.org {$NOPE},\nb.org {\n}',
      err: "Corefile:1 - Expected an address before ',' - check for extra comma",
    },
    {
      n: 'a key on the next line without comma is a directive',
      input: 'a.org\nb.org {\n}',
      err: "Corefile:2 - Unknown directive 'b.org'",
    },
    {
      n: '{ on a later line after the keys',
      input: 'a.org\n\n\n{\n whoami\n}',
      want: [{ keys: ['a.org'], dirs: { whoami: ['whoami'] } }],
    },
    {
      n: 'keys from the environment',
      input: '{$Z}:{$P} {\n}',
      env: { Z: 'cluster.local', P: '1053' },
      want: [{ keys: ['cluster.local:1053'], dirs: {} }],
    },
    {
      n: 'key with a space from the environment stays one key',
      input: '{$Z} {\n}',
      env: { Z: 'a b' },
      want: [{ keys: ['a b'], dirs: {} }],
    },
    {
      n: 'a key empty after substitution is skipped',
      input: '{$NOPE} .:53 {\n}',
      want: [{ keys: ['.:53'], dirs: {} }],
    },
    {
      n: 'a block whose keys are all empty is dropped',
      input: '"" {\n whoami\n}\n.:53 {\n}',
      want: [{ keys: ['.:53'], dirs: {} }],
    },
    {
      n: 'several blocks',
      input: 'a.org {\n whoami\n}\nb.org {\n log\n}',
      want: [
        { keys: ['a.org'], dirs: { whoami: ['whoami'] } },
        { keys: ['b.org'], dirs: { log: ['log'] } },
      ],
    },
    {
      n: 'a quoted { is a key, not a brace',
      input: 'a.org "{"\nwhoami',
      want: [{ keys: ['a.org', '{'], dirs: { whoami: ['whoami'] } }],
    },
    // A leading `}` is a key; the next line then starts its brace-less body.
    { n: 'a leading stray } is a key', input: '}\n.:53 {\n}', err: "Corefile:2 - Unknown directive '.:53'" },
  ];
  it.each(cases)('$n', ({ input, env, want, err }) => {
    if (err !== undefined) expect(parseErr(input, { env: env ?? {} })).toBe(err);
    else expect(parse(input, { env: env ?? {} })).toEqual(want);
  });

  it('strips the trailing comma but keeps the location', () => {
    const [b] = run('x.org,\n  y.org {\n}').blocks;
    expect(b!.keys.map((k) => [k.text, k.line])).toEqual([
      ['x.org', 1],
      ['y.org', 2],
    ]);
  });
});

describe('directives and nested blocks (§3.2)', () => {
  const cases: { n: string; input: string; env?: Record<string, string>; want?: Simple[]; err?: string }[] = [
    {
      n: 'repeated directives are concatenated in file order',
      input: '.:53 {\n log a\n whoami\n log b {\n  x\n }\n forward . 1.1.1.1\n forward . 2.2.2.2\n}',
      want: [
        {
          keys: ['.:53'],
          dirs: {
            log: ['log', 'a', 'log', 'b', '{', 'x', '}'],
            whoami: ['whoami'],
            forward: ['forward', '.', '1.1.1.1', 'forward', '.', '2.2.2.2'],
          },
        },
      ],
    },
    {
      n: 'deeply nested braces',
      input: '.:53 {\n template IN A {\n  a {\n   b {\n   }\n  }\n }\n}',
      want: [{ keys: ['.:53'], dirs: { template: ['template', 'IN', 'A', '{', 'a', '{', 'b', '{', '}', '}', '}'] } }],
    },
    {
      n: 'unbalanced nested block at EOF',
      input: '.:53 {\n kubernetes {\n  pods insecure\n',
      err: 'Corefile:3 - Unexpected EOF',
    },
    {
      n: 'directive on the line of the block {',
      input: '.:53 { whoami\n}',
      want: [{ keys: ['.:53'], dirs: { whoami: ['whoami'] } }],
    },
    {
      n: 'empty quoted argument kept',
      input: '.:53 {\n log ""\n}',
      want: [{ keys: ['.:53'], dirs: { log: ['log', ''] } }],
    },
    {
      n: 'quoted braces are arguments',
      input: '.:53 {\n log "{" "}"\n}',
      want: [{ keys: ['.:53'], dirs: { log: ['log', '{', '}'] } }],
    },
    {
      n: 'directive name from the environment',
      input: '.:53 {\n {$D}\n}',
      env: { D: 'whoami' },
      want: [{ keys: ['.:53'], dirs: { whoami: ['whoami'] } }],
    },
    {
      n: 'unknown directive name from the environment',
      input: '.:53 {\n {$D}\n}',
      env: { D: 'bogus' },
      err: "Corefile:2 - Unknown directive 'bogus'",
    },
    { n: 'empty directive name is unknown', input: '.:53 {\n ""\n}', err: "Corefile:2 - Unknown directive ''" },
    {
      n: 'env in nested tokens; a value with spaces stays one token',
      input: '.:53 {\n kubernetes {$Z} {\n  endpoint {$E}\n }\n}',
      env: { Z: 'cluster.local', E: 'http://a b' },
      want: [
        { keys: ['.:53'], dirs: { kubernetes: ['kubernetes', 'cluster.local', '{', 'endpoint', 'http://a b', '}'] } },
      ],
    },
    {
      n: 'a value of { from the environment is not a brace',
      input: '.:53 {\n log {$B}\n whoami\n}',
      env: { B: '{' },
      want: [{ keys: ['.:53'], dirs: { log: ['log', '{'], whoami: ['whoami'] } }],
    },
    {
      n: '} on a new line inside a brace-less block ends it',
      input: '.:53\nwhoami\n}\nb.org\nlog',
      want: [
        { keys: ['.:53'], dirs: { whoami: ['whoami'] } },
        { keys: ['b.org'], dirs: { log: ['log'] } },
      ],
    },
    {
      n: 'missing final } accepted when the file ends with a nested block (as CoreDNS)',
      input: '.:53 {\n forward . 1.1.1.1 {\n  max_concurrent 10\n }',
      want: [{ keys: ['.:53'], dirs: { forward: ['forward', '.', '1.1.1.1', '{', 'max_concurrent', '10', '}'] } }],
    },
    {
      n: 'missing final } after a plain directive is an error',
      input: '.:53 {\n log\n whoami\n',
      err: "Corefile:3 - Syntax error: Unexpected token 'whoami', expecting '}'",
    },
    {
      n: 'a block opened and EOF',
      input: '.:53 {',
      err: "Corefile:1 - Syntax error: Unexpected token '{', expecting '}'",
    },
  ];
  it.each(cases)('$n', ({ input, env, want, err }) => {
    if (err !== undefined) expect(parseErr(input, { env: env ?? {} })).toBe(err);
    else expect(parse(input, { env: env ?? {} })).toEqual(want);
  });

  it('a substituted { is marked quoted so the Dispenser does not open a block', () => {
    const [b] = run('.:53 {\n log {$B}\n}', { env: { B: '{' } }).blocks;
    const d = new Dispenser(b!.directives.get('log')!, 'log');
    d.next();
    expect(d.nextBlock()).toBe(false);
    expect(d.remainingArgs()).toEqual(['{']);
  });

  it('warns when the final } is missing but accepted', () => {
    const { warnings } = run('.:53 {\n forward . 1.1.1.1 {\n }');
    expect(warnings).toEqual(["Corefile:3 - server block is missing its closing '}' at end of file"]);
  });

  it('keeps directive order of first appearance', () => {
    const [b] = run('.:53 {\n whoami\n log\n cache\n log\n}').blocks;
    expect([...b!.directives.keys()]).toEqual(['whoami', 'log', 'cache']);
  });

  it('uses process.env by default', () => {
    process.env.CLUSTERDNS_TEST_UPSTREAM = '9.9.9.9';
    try {
      const blocks = parseCorefile('.:53 {\n forward . {$CLUSTERDNS_TEST_UPSTREAM}\n}', 'Corefile', {
        isDirective: (n) => DIRECTIVES.has(n),
      });
      expect(blocks[0]!.directives.get('forward')!.map((t) => t.text)).toEqual(['forward', '.', '9.9.9.9']);
    } finally {
      delete process.env.CLUSTERDNS_TEST_UPSTREAM;
    }
  });
});

describe('line endings, BOM and error locations', () => {
  it('CRLF Corefile parses like LF', () => {
    const crlf = '.:53 {\r\n    whoami\r\n    log . "{remote}"\r\n}\r\n';
    expect(parse(crlf)).toEqual(parse(crlf.replace(/\r/g, '')));
  });
  it('BOM at the start', () => {
    expect(parse('\ufeff.:53 {\n whoami\n log\n}')).toEqual(WHOAMI_LOG);
  });
  it('CRLF errors report the right line', () => {
    expect(parseErr('.:53 {\r\n whoami\r\n\r\n bogus\r\n}\r\n')).toBe("Corefile:4 - Unknown directive 'bogus'");
  });
  it('lines after a multi-line quoted token are counted', () => {
    expect(parseErr('.:53 {\n log . "a\nb\nc"\n nope\n}', { file: '/etc/coredns/Corefile' })).toBe(
      "/etc/coredns/Corefile:5 - Unknown directive 'nope'",
    );
  });
  it('describe() prints file:line', () => {
    try {
      run('.:53 {\n\n  foo\n}');
      expect.unreachable();
    } catch (e) {
      expect((e as ConfigError).describe()).toBe("Corefile:3 - Error during parsing: Unknown directive 'foo'");
    }
  });
  it('errors inside a snippet expansion point at the snippet definition', () => {
    expect(parseErr('(s) {\n  bogus\n}\n.:53 {\n  import s\n}')).toBe("Corefile:2 - Unknown directive 'bogus'");
  });
});

// ---------------------------------------------------------------------------------------------

describe('snippets (§5.2)', () => {
  const cases: { n: string; input: string; env?: Record<string, string>; want?: Simple[]; err?: string }[] = [
    {
      n: 'redeclaration',
      input: '(s) {\n log\n}\n(s) {\n whoami\n}',
      err: 'Corefile:4 - redeclaration of previously declared snippet s',
    },
    {
      n: 'braces are mandatory',
      input: '(s)\nlog\n',
      err: "Corefile:2 - Syntax error: Unexpected token 'log', expecting '{'",
    },
    {
      n: 'braces are mandatory, even at EOF',
      input: '(s)',
      err: "Corefile:1 - Syntax error: Unexpected token '(s)', expecting '{'",
    },
    {
      n: 'unterminated snippet',
      input: '(s) {\n log {\n }\n',
      err: "Corefile:3 - Syntax error: Unexpected token '}', expecting '}'",
    },
    {
      n: 'a (name) among other keys is a server key',
      input: '(s) a.org {\n}',
      want: [{ keys: ['(s)', 'a.org'], dirs: {} }],
    },
    {
      n: 'snippet with nested braces',
      input: '(s) {\n forward . 1.1.1.1 {\n  max_concurrent 5\n }\n}\n.:53 {\n import s\n}',
      want: [{ keys: ['.:53'], dirs: { forward: ['forward', '.', '1.1.1.1', '{', 'max_concurrent', '5', '}'] } }],
    },
    {
      n: 'snippet imports another snippet',
      input: '(a) {\n log\n}\n(b) {\n import a\n errors\n}\n.:53 {\n import b\n}',
      want: [{ keys: ['.:53'], dirs: { log: ['log'], errors: ['errors'] } }],
    },
    {
      n: 'a snippet may name a snippet defined later if expanded after that',
      input: '(a) {\n import b\n}\n(b) {\n log\n}\n.:53 {\n import a\n}',
      want: [{ keys: ['.:53'], dirs: { log: ['log'] } }],
    },
    {
      n: 'snippet used twice',
      input: '(s) {\n log\n}\na.org {\n import s\n}\nb.org {\n import s\n}',
      want: [
        { keys: ['a.org'], dirs: { log: ['log'] } },
        { keys: ['b.org'], dirs: { log: ['log'] } },
      ],
    },
    {
      n: 'snippet inside a nested block (import at line start)',
      input: '(k) {\n pods insecure\n ttl 30\n}\n.:53 {\n kubernetes cluster.local {\n  import k\n  fallthrough\n }\n}',
      want: [
        {
          keys: ['.:53'],
          dirs: {
            kubernetes: ['kubernetes', 'cluster.local', '{', 'pods', 'insecure', 'ttl', '30', 'fallthrough', '}'],
          },
        },
      ],
    },
    {
      n: '`import` not at line start inside a nested block is an ordinary token',
      input: '(k) {\n x\n}\n.:53 {\n log {\n  a import k\n }\n}',
      want: [{ keys: ['.:53'], dirs: { log: ['log', '{', 'a', 'import', 'k', '}'] } }],
    },
    {
      n: 'import on the line of the block {',
      input: '(s) {\n log\n}\n.:53 { import s\n}',
      want: [{ keys: ['.:53'], dirs: { log: ['log'] } }],
    },
    {
      n: 'a snippet holding whole server blocks',
      input: '(blocks) {\n a.org {\n  whoami\n }\n b.org {\n  log\n }\n}\nimport blocks',
      want: [
        { keys: ['a.org'], dirs: { whoami: ['whoami'] } },
        { keys: ['b.org'], dirs: { log: ['log'] } },
      ],
    },
    {
      n: 'snippet body is substituted where it is expanded',
      input: '(s) {\n forward . {$UP}\n}\n.:53 {\n import s\n}',
      env: { UP: '1.2.3.4' },
      want: [{ keys: ['.:53'], dirs: { forward: ['forward', '.', '1.2.3.4'] } }],
    },
    {
      n: 'snippet name from the environment',
      input: '(s) {\n log\n}\n.:53 {\n import {$S}\n}',
      env: { S: 's' },
      want: [{ keys: ['.:53'], dirs: { log: ['log'] } }],
    },
    {
      n: 'self-import guard sees env references',
      input: '(s) {\n import {$S}\n}',
      env: { S: 's' },
      err: 'Corefile:2 - maximum snippet import depth (10000) exceeded',
    },
    { n: 'self import not at line start is not caught early', input: '(s) {\n log import s\n}', want: [] },
    {
      n: 'import with no argument',
      input: '.:53 {\n import\n}',
      err: "Corefile:2 - Wrong argument count or unexpected line ending after 'import'",
    },
    {
      n: 'import argument on the next line does not count',
      input: '.:53 {\n import\n s\n}',
      err: "Corefile:2 - Wrong argument count or unexpected line ending after 'import'",
    },
    {
      n: 'import of an empty value',
      input: '.:53 {\n import {$NOPE}\n}',
      err: 'Corefile:2 - Import requires a non-empty filepath',
    },
    { n: 'import of ""', input: 'import ""', err: 'Corefile:1 - Import requires a non-empty filepath' },
    {
      n: 'top-level import not at line start is a key',
      input: 'a.org import {\n}',
      want: [{ keys: ['a.org', 'import'], dirs: {} }],
    },
    {
      n: 'glob with a class is rejected',
      input: 'import conf.d/[ab].conf',
      err: 'Glob pattern may only contain one wildcard (*), but has others:',
    },
    {
      n: 'glob with two ?',
      input: 'import a??.conf',
      err: 'Glob pattern may only contain one wildcard (*), but has others:',
    },
    {
      n: 'unclosed [ is a malformed pattern',
      input: 'import a[.conf',
      err: 'Failed to use import pattern a[.conf: syntax error in pattern',
    },
  ];
  it.each(cases)('$n', ({ input, env, want, err }) => {
    if (err !== undefined) expect(parseErr(input, { env: env ?? {} })).toContain(err);
    else expect(parse(input, { env: env ?? {} })).toEqual(want);
  });

  it('snippet tokens keep the lines of the definition', () => {
    const [b] = run('(s) {\n log\n}\n.:53 {\n whoami\n import s\n}').blocks;
    expect(b!.directives.get('log')![0]!.line).toBe(2);
  });

  it(`an indirect snippet cycle stops after ${MAX_SNIPPET_EXPANSIONS} expansions`, () => {
    expect(parseErr('(x) {\n import y\n}\n(y) {\n import x\n}\n.:53 {\n import x\n}')).toMatch(
      /^Corefile:[25] - maximum snippet import depth \(10000\) exceeded$/,
    );
  });

  it(`exactly ${MAX_SNIPPET_EXPANSIONS} expansions are allowed`, () => {
    // One block importing the same snippet 10000 times on separate lines.
    const lines = Array.from({ length: MAX_SNIPPET_EXPANSIONS }, () => ' import s').join('\n');
    const ok = run(`(s) {\n log\n}\n.:53 {\n${lines}\n}`).blocks;
    expect(ok[0]!.directives.get('log')).toHaveLength(MAX_SNIPPET_EXPANSIONS);
    expect(parseErr(`(s) {\n log\n}\n.:53 {\n${lines}\n import s\n}`)).toBe(
      `Corefile:${5 + MAX_SNIPPET_EXPANSIONS} - maximum snippet import depth (10000) exceeded`,
    );
  });
});

// ---------------------------------------------------------------------------------------------

describe('file imports (§5.1)', () => {
  let dir: string;
  const write = (rel: string, text: string): string => {
    const p = path.join(dir, rel);
    fs.mkdirSync(path.dirname(p), { recursive: true });
    fs.writeFileSync(p, text);
    return p;
  };
  beforeAll(() => {
    dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'corefile-import-')));
    write('blocks/b.conf', 'b.org {\n  log\n}\n');
    write('blocks/a.conf', 'a.org {\n  whoami\n}\n');
    write('blocks/c.conf', 'c.org {\n  errors\n}\n');
    write('blocks/skip.txt', 'not a block\n');
    write('blocks/nested/x.conf', 'x.org\n');
    write('plugins/cache.conf', 'cache 30\n');
    write('plugins/k8s-props.conf', 'pods insecure\nttl 30\n');
    write('plugins/relative.conf', 'import cache.conf\n'); // relative to plugins/, not to the main file
    write('plugins/bad.conf', '\n\nbogus\n');
    write('one/1.conf', 'one.org {\n}\n');
    write('one/2.conf', 'two.org {\n}\n');
    write('one/22.conf', 'twotwo.org {\n}\n');
    write('deep/a/p.conf', 'pa.org {\n}\n');
    write('deep/b/p.conf', 'pb.org {\n}\n');
    write('deep/c/q.conf', 'qc.org {\n}\n');
    write('crlf.conf', '\ufeffcrlf.org {\r\n  whoami\r\n}\r\n');
    fs.mkdirSync(path.join(dir, 'adir'));
  });
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));
  const main = (): string => path.join(dir, 'Corefile');
  const parseIn = (text: string): Simple[] => parse(text, { file: main() });

  it('top-level glob imports whole server blocks in lexical order', () => {
    expect(parseIn('import blocks/*.conf')).toEqual([
      { keys: ['a.org'], dirs: { whoami: ['whoami'] } },
      { keys: ['b.org'], dirs: { log: ['log'] } },
      { keys: ['c.org'], dirs: { errors: ['errors'] } },
    ]);
  });
  it('? matches exactly one character', () => {
    expect(parseIn('import one/?.conf').map((b) => b.keys[0])).toEqual(['one.org', 'two.org']);
  });
  it('a wildcard in a directory segment', () => {
    expect(parseIn('import deep/*/p.conf').map((b) => b.keys[0])).toEqual(['pa.org', 'pb.org']);
  });
  it('absolute import path', () => {
    expect(parseIn(`.:53 {\n import ${path.join(dir, 'plugins/cache.conf')}\n}`)).toEqual([
      { keys: ['.:53'], dirs: { cache: ['cache', '30'] } },
    ]);
  });
  it('import as a directive line, and inside a nested block', () => {
    expect(
      parseIn(
        '.:53 {\n import plugins/cache.conf\n kubernetes cluster.local {\n  import plugins/k8s-props.conf\n }\n}',
      ),
    ).toEqual([
      {
        keys: ['.:53'],
        dirs: {
          cache: ['cache', '30'],
          kubernetes: ['kubernetes', 'cluster.local', '{', 'pods', 'insecure', 'ttl', '30', '}'],
        },
      },
    ]);
  });
  it('nested imports are relative to the importing file', () => {
    expect(parseIn('.:53 {\n import plugins/relative.conf\n}')).toEqual([
      { keys: ['.:53'], dirs: { cache: ['cache', '30'] } },
    ]);
  });
  it('import path from the environment', () => {
    expect(parse('.:53 {\n import {$D}/cache.conf\n}', { file: main(), env: { D: 'plugins' } })).toEqual([
      { keys: ['.:53'], dirs: { cache: ['cache', '30'] } },
    ]);
  });
  it('imported tokens keep their own file and line', () => {
    const [b] = run('.:53 {\n\n\n import plugins/k8s-props.conf\n}', { file: main(), isDirective: () => true }).blocks;
    const ttl = b!.directives.get('ttl')![0]!;
    expect([ttl.file, ttl.line]).toEqual([path.join(dir, 'plugins/k8s-props.conf'), 2]);
  });
  it('errors in an imported file point into that file', () => {
    expect(parseErr('.:53 {\n import plugins/bad.conf\n}', { file: main() })).toBe(
      `${path.join(dir, 'plugins/bad.conf')}:3 - Unknown directive 'bogus'`,
    );
  });
  it('importing a directory is an error', () => {
    expect(parseErr('import adir', { file: main() })).toBe(
      `${main()}:1 - Could not import ${path.join(dir, 'adir')}: is a directory`,
    );
  });
  it('a glob matching a directory is an error too', () => {
    expect(parseErr('import blocks/nest*', { file: main() })).toContain('is a directory');
  });
  it('a missing file is an error with the pattern as written', () => {
    expect(parseErr('.:53 {\n import nope/x.conf\n}', { file: main() })).toBe(
      `${main()}:2 - File to import not found: nope/x.conf`,
    );
  });
  it('the wildcard check uses the joined path', () => {
    expect(parseErr('import *.conf', { file: path.join(dir, 'x*y', 'Corefile') })).toContain(
      `Glob pattern may only contain one wildcard (*), but has others: ${path.join(dir, 'x*y', '*.conf')}`,
    );
  });
  it('an imported file with BOM and CRLF', () => {
    expect(parseIn('import crlf.conf')).toEqual([{ keys: ['crlf.org'], dirs: { whoami: ['whoami'] } }]);
  });
  it('lists the files read: main first, imports once each, in order', () => {
    const r = parseCorefileWithFiles(
      '(s) {\n import plugins/cache.conf\n}\n.:53 {\n import s\n import plugins/relative.conf\n}\nimport blocks/*.conf',
      main(),
      {
        isDirective: (n) => DIRECTIVES.has(n),
        env: {},
        warn: () => {},
      },
    );
    expect(r.files).toEqual([
      main(),
      path.join(dir, 'plugins/cache.conf'),
      path.join(dir, 'plugins/relative.conf'),
      path.join(dir, 'blocks/a.conf'),
      path.join(dir, 'blocks/b.conf'),
      path.join(dir, 'blocks/c.conf'),
    ]);
    expect(r.blocks).toHaveLength(4);
  });
  it('the main file name is kept as given (relative)', () => {
    const r = parseCorefileWithFiles('.:53 {\n}', 'Corefile', { isDirective: () => true });
    expect(r.files).toEqual(['Corefile']);
  });
  it('a snippet wins over a file of the same name', () => {
    expect(parseIn('(plugins/cache.conf) {\n whoami\n}\n.:53 {\n import plugins/cache.conf\n}')).toEqual([
      { keys: ['.:53'], dirs: { whoami: ['whoami'] } },
    ]);
  });
  it('globFiles returns absolute sorted matches, dot-files included', () => {
    write('g/.hidden.conf', '');
    write('g/z.conf', '');
    write('g/m.conf', '');
    expect(globFiles('g/*.conf', dir)).toEqual(['.hidden.conf', 'm.conf', 'z.conf'].map((f) => path.join(dir, 'g', f)));
    expect(globFiles(path.join(dir, 'g', '?.conf'), '/ignored')).toEqual(
      ['m.conf', 'z.conf'].map((f) => path.join(dir, 'g', f)),
    );
    expect(globFiles('nothere/*.conf', dir)).toEqual([]);
  });
});

describe('import limits and injected file access', () => {
  it(`a file importing itself stops after ${MAX_FILE_IMPORTS} imports`, () => {
    let reads = 0;
    const msg = parseErr('import self.conf', {
      file: '/cfg/Corefile',
      readFile: (p) => {
        reads++;
        expect(p).toBe('/cfg/self.conf');
        return 'import self.conf\n';
      },
    });
    expect(msg).toBe('/cfg/self.conf:1 - maximum file import depth (100000) exceeded');
    expect(reads).toBe(MAX_FILE_IMPORTS);
  });
  it('uses the injected glob with the pattern and the importing directory', () => {
    const calls: [string, string][] = [];
    const blocks = parse('import conf.d/*.conf', {
      file: '/etc/coredns/Corefile',
      glob: (pattern, baseDir) => {
        calls.push([pattern, baseDir]);
        return ['/etc/coredns/conf.d/1.conf'];
      },
      readFile: (p) => `${path.basename(p)}.example {\n whoami\n}`,
    });
    expect(calls).toEqual([['conf.d/*.conf', '/etc/coredns']]);
    expect(blocks).toEqual([{ keys: ['1.conf.example'], dirs: { whoami: ['whoami'] } }]);
  });
  it('an unreadable file reports the reason', () => {
    const err = Object.assign(new Error('EACCES: permission denied'), { code: 'EACCES' });
    expect(
      parseErr('import x.conf', {
        file: '/c/Corefile',
        readFile: () => {
          throw err;
        },
      }),
    ).toBe('/c/Corefile:1 - Could not import /c/x.conf: EACCES: permission denied');
  });
});

// ---------------------------------------------------------------------------------------------

describe('default Corefiles users bring (docs/records.md §9.3)', () => {
  const registry: ParseOptions = { isDirective: (n) => pluginByName(n) !== undefined, env: {} };
  const load = (name: string): ServerBlock[] =>
    parseCorefile(fs.readFileSync(path.join(FIXTURES, name), 'utf8'), name, registry);
  const common = {
    errors: ['errors'],
    ready: ['ready'],
    loop: ['loop'],
    reload: ['reload'],
    loadbalance: ['loadbalance'],
  };

  it('kubeadm', () => {
    expect(simple(load('kubeadm.Corefile'))).toEqual([
      {
        keys: ['.:53'],
        dirs: {
          ...common,
          health: ['health', '{', 'lameduck', '5s', '}'],
          kubernetes: [
            'kubernetes',
            'cluster.local',
            'in-addr.arpa',
            'ip6.arpa',
            '{',
            'pods',
            'insecure',
            'fallthrough',
            'in-addr.arpa',
            'ip6.arpa',
            'ttl',
            '30',
            '}',
          ],
          prometheus: ['prometheus', ':9153'],
          forward: ['forward', '.', '/etc/resolv.conf', '{', 'max_concurrent', '1000', '}'],
          cache: ['cache', '30', '{', 'disable', 'success', 'cluster.local', 'disable', 'denial', 'cluster.local', '}'],
        },
      },
    ]);
  });

  it('kubeadm: the directives keep their file order and lines', () => {
    const [b] = load('kubeadm.Corefile');
    expect([...b!.directives.keys()]).toEqual([
      'errors',
      'health',
      'ready',
      'kubernetes',
      'prometheus',
      'forward',
      'cache',
      'loop',
      'reload',
      'loadbalance',
    ]);
    expect(b!.directives.get('cache')![0]!.line).toBe(16);
    const d = new Dispenser(b!.directives.get('kubernetes')!, 'kubernetes');
    d.next();
    expect(d.remainingArgs()).toEqual(['cluster.local', 'in-addr.arpa', 'ip6.arpa']);
    const props: string[][] = [];
    while (d.nextBlock()) props.push([d.val(), ...d.remainingArgs()]);
    expect(props).toEqual([
      ['pods', 'insecure'],
      ['fallthrough', 'in-addr.arpa', 'ip6.arpa'],
      ['ttl', '30'],
    ]);
  });

  it('coredns/deployment', () => {
    const [b] = simple(load('deployment.Corefile'));
    expect(b!.keys).toEqual(['.:53']);
    expect(b!.dirs.kubernetes).toEqual([
      'kubernetes',
      'cluster.local',
      'in-addr.arpa',
      'ip6.arpa',
      '{',
      'fallthrough',
      'in-addr.arpa',
      'ip6.arpa',
      '}',
    ]);
    expect(b!.dirs.cache).toEqual(['cache', '30']);
  });

  it('Helm chart', () => {
    expect(simple(load('helm.Corefile'))).toEqual([
      {
        keys: ['.:53'],
        dirs: {
          ...common,
          health: ['health', '{', 'lameduck', '10s', '}'],
          kubernetes: [
            'kubernetes',
            'cluster.local',
            'in-addr.arpa',
            'ip6.arpa',
            '{',
            'pods',
            'insecure',
            'fallthrough',
            'in-addr.arpa',
            'ip6.arpa',
            'ttl',
            '30',
            '}',
          ],
          prometheus: ['prometheus', '0.0.0.0:9153'],
          forward: ['forward', '.', '/etc/resolv.conf'],
          cache: ['cache', '30'],
        },
      },
    ]);
  });

  it('fixture with snippet, file and glob imports', () => {
    const file = path.join(FIXTURES, 'imports', 'Corefile');
    const r = parseCorefileWithFiles(fs.readFileSync(file, 'utf8'), file, registry);
    expect(simple(r.blocks)).toEqual([
      {
        keys: ['.:53'],
        dirs: {
          errors: ['errors'],
          log: ['log'],
          forward: ['forward', '.', '10.0.0.10', '{', 'max_concurrent', '10', '}'],
          whoami: ['whoami'],
        },
      },
      { keys: ['a.example:53'], dirs: { whoami: ['whoami'] } },
      { keys: ['b.example:53'], dirs: { cache: ['cache', '30'] } },
    ]);
    expect(r.files.map((f) => path.relative(FIXTURES, f))).toEqual([
      'imports/Corefile',
      'imports/sub/forward.conf',
      'imports/conf.d/a.conf',
      'imports/conf.d/b.conf',
      'imports/sub/cache.inc',
    ]);
  });

  it('the built-in default Corefile', () => {
    expect(defaultCorefile(1053)).toBe('.:1053 {\nwhoami\nlog\n}\n');
    expect(simple(parseCorefile(defaultCorefile(53), '<default>', registry))).toEqual(WHOAMI_LOG);
  });
});

describe('directive positions', () => {
  it('keeps where each occurrence of a directive starts, whatever its arguments and nested block hold', () => {
    const text = '.:53 {\n  log\n  errors\n  log . {\n    class error\n    log inside\n  }\n  log "log"\n}\n';
    const b = run(text).blocks[0]!;
    const log = b.directives.get('log')!;
    const starts = b.starts.get('log')!;
    expect(starts).toEqual([0, 1, 9]);
    expect(starts.map((s) => log[s]!.line)).toEqual([2, 4, 8]);
    expect(b.starts.get('errors')).toEqual([0]);
  });
});
