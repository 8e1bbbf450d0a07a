import { describe, expect, it } from 'vitest';
import { isSpace, lex, substituteEnv } from './lexer.js';

/** Tokens as `text@line` (`text@line-endLine` when they span lines), quoted ones in `«»`. */
function show(text: string): string[] {
  return lex(text, 'Corefile').map((t) => {
    const v = t.quoted ? `«${t.text}»` : t.text;
    return t.endLine !== t.line ? `${v}@${t.line}-${t.endLine}` : `${v}@${t.line}`;
  });
}

describe('lex (docs/corefile.md §2)', () => {
  const cases: { name: string; input: string; want: string[] }[] = [
    {
      name: 'words and lines',
      input: '.:53 {\n whoami\n log\n}\n',
      want: ['.:53@1', '{@1', 'whoami@2', 'log@3', '}@4'],
    },
    { name: 'empty input', input: '', want: [] },
    { name: 'only whitespace and comments', input: '  \n# a\n\t# b { }\n', want: [] },
    { name: 'leading BOM is discarded', input: '\ufeff.:53 {\n}', want: ['.:53@1', '{@1', '}@2'] },
    { name: 'BOM elsewhere is an ordinary character', input: 'a \ufeffb', want: ['a@1', '\ufeffb@1'] },
    { name: 'CRLF line ends', input: '.:53 {\r\n whoami\r\n}\r\n', want: ['.:53@1', '{@1', 'whoami@2', '}@3'] },
    { name: '\\r inside a word is dropped, not a separator', input: 'who\rami', want: ['whoami@1'] },
    { name: 'tab, \\v, \\f separate tokens', input: 'a\tb\vc\fd', want: ['a@1', 'b@1', 'c@1', 'd@1'] },
    {
      name: 'unicode spaces (NBSP, NEL, em space, ideographic space) separate tokens',
      input: 'a\u00a0b\u0085c\u2003d\u3000e',
      want: ['a@1', 'b@1', 'c@1', 'd@1', 'e@1'],
    },
    { name: 'U+2028 is a space but not a line break', input: 'a\u2028b\nc', want: ['a@1', 'b@1', 'c@2'] },
    { name: 'zero-width space is not a space', input: 'a\u200bb', want: ['a\u200bb@1'] },
    { name: 'comment inside a word', input: 'whoami#comment\nlog', want: ['whoami@1', 'log@2'] },
    { name: 'braces in a comment are ignored', input: 'log # x { y\n}', want: ['log@1', '}@2'] },
    { name: 'comment right after a quoted token', input: '"a"#x y\nb', want: ['«a»@1', 'b@2'] },
    { name: '# inside quotes is literal', input: '"a # b"', want: ['«a # b»@1'] },
    { name: 'quoted token with spaces', input: 'log "{remote} {name}"', want: ['log@1', '«{remote} {name}»@1'] },
    { name: 'quote in the middle of a word is ordinary', input: 'a"b" c', want: ['a"b"@1', 'c@1'] },
    { name: 'escaped quote', input: '"say \\"hi\\""', want: ['«say "hi"»@1'] },
    { name: 'other backslashes are kept', input: '"\\d \\\\ \\n"', want: ['«\\d \\\\ \\n»@1'] },
    { name: 'backslash outside quotes is ordinary', input: 'a\\"b \\', want: ['a\\"b@1', '\\@1'] },
    { name: 'empty quoted token', input: 'log ""', want: ['log@1', '«»@1'] },
    { name: 'quoted token directly followed by a word', input: '"a"b', want: ['«a»@1', 'b@1'] },
    {
      name: 'newline in quotes: token spans lines, counter advances',
      input: 'log "a\n  b"\nwhoami',
      want: ['log@1', '«a\n  b»@1-2', 'whoami@3'],
    },
    { name: 'CR inside quotes is kept', input: '"a\r\nb"', want: ['«a\r\nb»@1-2'] },
    { name: 'escaped newline in quotes still counts', input: '"a\\\nb" c', want: ['«a\\\nb»@1-2', 'c@2'] },
    { name: 'unterminated quote at EOF keeps what was read', input: 'log "abc', want: ['log@1', '«abc»@1'] },
    { name: 'unterminated empty quote at EOF yields nothing', input: 'log "', want: ['log@1'] },
    { name: 'brace glued to a word is part of it', input: 'example.org{\n}', want: ['example.org{@1', '}@2'] },
    { name: 'quoted brace is marked quoted', input: '"{" {', want: ['«{»@1', '{@1'] },
    { name: 'semicolons are ordinary', input: 'a;b ;', want: ['a;b@1', ';@1'] },
    { name: 'no line continuation', input: 'forward . \\\n 1.1.1.1', want: ['forward@1', '.@1', '\\@1', '1.1.1.1@2'] },
  ];
  it.each(cases)('$name', ({ input, want }) => {
    expect(show(input)).toEqual(want);
  });

  it('records the file name in every token', () => {
    const toks = lex('a\nb', '/etc/coredns/Corefile');
    expect(toks.map((t) => t.file)).toEqual(['/etc/coredns/Corefile', '/etc/coredns/Corefile']);
  });

  it('isSpace follows Go unicode.IsSpace', () => {
    for (const c of [
      0x20, 0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x85, 0xa0, 0x1680, 0x2000, 0x200a, 0x2028, 0x2029, 0x202f, 0x205f, 0x3000,
    ]) {
      expect(isSpace(c), c.toString(16)).toBe(true);
    }
    for (const c of [0x41, 0x200b, 0xfeff, 0x180e, 0x00]) expect(isSpace(c), c.toString(16)).toBe(false);
  });
});

describe('substituteEnv (docs/corefile.md §4)', () => {
  const env = {
    UP: '8.8.8.8',
    PORT: '1053',
    A: 'a',
    B: 'b',
    SP: 'x y',
    BRACE: '{',
    SELF: '{$SELF}',
    DOLLAR: '{$A}',
    PCT: '{%A%}',
    EMPTY: '',
  };
  const cases: [string, string][] = [
    ['{$UP}', '8.8.8.8'],
    ['{$UNSET}', ''],
    ['{$EMPTY}', ''],
    ['{%UP%}', '8.8.8.8'],
    ['localhost:{$PORT}', 'localhost:1053'],
    ['{$A}.{$B}', 'a.b'],
    ['{%A%}{$B}{%A%}', 'aba'],
    ['{$}', '{$}'],
    ['{%%}', '{%%}'],
    ['{%}', '{%}'],
    ['{$}{$A}', '{$}a'],
    ['x{$A', 'x{$A'],
    ['{$A}{$B', 'a{$B'],
    ['{%A', '{%A'],
    ['{$SP}', 'x y'],
    ['{$BRACE}', '{'],
    // Go templates: `{{$var}}` contains `{$var}`; `{{ $var }}` does not.
    ['{{$A}}', '{a}'],
    ['{{ $A }}', '{{ $A }}'],
    // `{%…%}` is processed first, so its value may contain a `{$…}` reference; not the reverse.
    ['{%DOLLAR%}', 'a'],
    ['{$PCT}', '{%A%}'],
    // Inserted values are not re-scanned by the same pass (no infinite loop).
    ['{$SELF}', '{$SELF}'],
    ['no refs', 'no refs'],
    ['{remote}', '{remote}'],
  ];
  it.each(cases)('%j → %j', (input, want) => {
    expect(substituteEnv(input, env)).toBe(want);
  });

  it('ignores inherited properties of a plain-object env', () => {
    expect(substituteEnv('[{$constructor}][{$toString}][{$__proto__}]', {})).toBe('[][][]');
  });
});
