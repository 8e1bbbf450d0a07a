import { describe, expect, it } from 'vitest';
import { TemplateExecError, TemplateParseError } from './errors.js';
import { fmtV, sprintf } from './fmt.js';
import { GoTemplate } from './template.js';
import { GoObject, type GoValue } from './values.js';

const data = new GoObject(
  '*template.templateData',
  {
    Name: 'ip-10-1-2-3.example.',
    Zone: 'example.',
    Class: 'IN',
    Type: 'A',
    Match: ['ip-10-1-2-3.example.', '10', '1'],
    Group: new Map<string, GoValue>([
      ['0', 'ip-10-1-2-3.example.'],
      ['1', '10'],
      ['2', '1'],
      ['a', '10'],
      ['b', '1'],
    ]),
  },
  { Meta: (args) => (args[0] === 'k' ? 'v' : '') },
);

const run = (src: string): string => GoTemplate.parse('answer', src).execute(data);

describe('Go text/template subset', () => {
  const cases: [string, string][] = [
    ['{{ .Name }} 60 IN A {{ .Group.a }}.{{ .Group.b }}.0.1', 'ip-10-1-2-3.example. 60 IN A 10.1.0.1'],
    ['{{ index .Match 1 }}', '10'],
    ['{{ index .Group "b" }}', '1'],
    ['[{{ index .Group "none" }}]', '[]'],
    ['{{ .Group.none }}', '<no value>'],
    ['{{ parseInt "7b" 16 8 }}', '123'],
    ['{{ parseInt .Group.a 10 8 | printf "%03d" }}', '010'],
    [
      '{{ printf "%s|%5s|%-4s|%d|%x|%X|%q|%v" "a" "b" "c" 42 255 255 "q" .Match }}',
      'a|    b|c   |42|ff|FF|"q"|[ip-10-1-2-3.example. 10 1]',
    ],
    ['{{ printf "%d" "x" }}', '%!d(string=x)'],
    ['{{ printf "%s %s" "x" }}', 'x %!s(MISSING)'],
    ['{{- if eq .Class "IN" -}}  yes  {{- else -}} no {{- end -}} !', 'yes!'],
    ['{{ if eq .Type "AAAA" }}6{{ else if eq .Type "A" }}4{{ else }}?{{ end }}', '4'],
    ['{{ if and (eq .Class "IN") (ne .Name "") }}ok{{ end }}', 'ok'],
    ['{{ if or (eq .Class "CH") (eq .Class "IN" "HS") }}ok{{ end }}', 'ok'],
    ['{{ if not (eq .Zone "example.") }}no{{ else }}yes{{ end }}', 'yes'],
    ['{{ eq (parseInt .Group.a 10 8) 10 }} {{ lt 1 2 }} {{ ge "b" "a" }}', 'true true true'],
    ['{{ range $i, $m := .Match }}[{{ $i }}={{ $m }}]{{ end }}', '[0=ip-10-1-2-3.example.][1=10][2=1]'],
    ['{{ range .Match }}{{ if eq . "10" }}{{ break }}{{ end }}<{{ . }}>{{ end }}', '<ip-10-1-2-3.example.>'],
    ['{{ range .Match }}{{ if eq . "10" }}{{ continue }}{{ end }}<{{ . }}>{{ end }}', '<ip-10-1-2-3.example.><1>'],
    ['{{ range $k, $v := .Group }}{{ $k }};{{ end }}', '0;1;2;a;b;'],
    ['{{ range .Group.none }}x{{ else }}empty{{ end }}', 'empty'],
    ['{{ range 3 }}{{ . }}{{ end }}', '012'],
    ['{{ with .Group.a }}<{{ . }}>{{ end }}{{ with .Group.none }}x{{ else }}none{{ end }}', '<10>none'],
    ['{{ $x := "q" }}{{ $x }}{{ $x = "r" }}{{ $x }}{{ $.Zone }}', 'qrexample.'],
    ['{{ len .Match }} {{ len .Name }} {{ len .Group }}', '3 20 5'],
    ['{{ slice .Name 0 2 }}{{ slice .Name 19 }}', 'ip.'],
    ['{{ .Meta "k" }}|{{ .Meta "x" }}|', 'v||'],
    ['{{/* a comment */}}a {{- /* trimmed */ -}} b', 'ab'],
    ['{{ print 1 2 "a" "b" 3 }}|{{ println "x" 1 }}', '1 2ab3|x 1\n'],
    ['{{ html "<a&b>" }} {{ urlquery "a b&c" }}', '&lt;a&amp;b&gt; a+b%26c'],
    ['{{ 0x1F }} {{ 1.5 }} {{ \'a\' }} {{ true }} {{ `raw\\n` }} {{ "esc\\t" }}', '31 1.5 97 true raw\\n esc\t'],
    ['{{ (index .Match 1) | printf "%s!" }}', '10!'],
    ['{{ js "a\'b<c>&=\\"" }}', 'a\\\'b\\u003Cc\\u003E\\u0026\\u003D\\"'],
    ['{{ printf "%s/%s/%d" .Type .Class (len .Match) }}', 'A/IN/3'],
    ['{{ .Group }}', 'map[0:ip-10-1-2-3.example. 1:10 2:1 a:10 b:1]'],
  ];
  for (const [src, want] of cases) {
    it(src, () => expect(run(src)).toBe(want));
  }

  const parseErrors: [string, string][] = [
    ['{{', 'template: answer:1: unclosed action'],
    ['{{ notAFunction }}', 'template: answer:1: function "notAFunction" not defined'],
    ['{{ template "x" }}', 'template: answer:1: {{template}} (nested templates) is not supported by clusterdns'],
    ['{{ define "x" }}{{ end }}', 'template: answer:1: {{define}} (nested templates) is not supported by clusterdns'],
    ['{{ block "x" . }}{{ end }}', 'template: answer:1: {{block}} (nested templates) is not supported by clusterdns'],
    ['{{ call .Meta "x" }}', 'template: answer:1: function "call" is not supported by clusterdns'],
    ['{{ end }}', 'template: answer:1: unexpected {{end}}'],
    ['{{ if 1 }}', 'template: answer:1: unexpected EOF'],
    ['{{ $y }}', 'template: answer:1: undefined variable "$y"'],
    ['{{ break }}', 'template: answer:1: {{break}} outside {{range}}'],
    ['{{ "unterminated }}', 'template: answer:1: unterminated quoted string'],
  ];
  for (const [src, msg] of parseErrors) {
    it(`parse error: ${src}`, () => {
      expect(() => GoTemplate.parse('answer', src)).toThrow(TemplateParseError);
      expect(() => GoTemplate.parse('answer', src)).toThrow(msg);
    });
  }

  const execErrors: [string, RegExp][] = [
    ['{{ parseInt }}', /wrong number of args for parseInt: want 3 got 0/],
    ['{{ parseInt "gg" 16 8 }}', /strconv.ParseUint: parsing "gg": invalid syntax/],
    ['{{ parseInt "300" 10 8 }}', /strconv.ParseUint: parsing "300": value out of range/],
    ['{{ index .Match 5 }}', /index out of range: 5/],
    ['{{ .Grup.d }}', /can't evaluate field Grup in type \*template.templateData/],
    ['{{ .Name.x }}', /can't evaluate field x in type string/],
    ['{{ "a" "b" }}', /can't give argument to non-function "a"/],
    ['{{ lt "a" 1 }}', /incompatible types for comparison|invalid type for comparison/],
  ];
  for (const [src, re] of execErrors) {
    it(`execution error: ${src}`, () => {
      const t = GoTemplate.parse('answer', src);
      expect(() => t.execute(data)).toThrow(TemplateExecError);
      expect(() => t.execute(data)).toThrow(re);
    });
  }

  it('prints the parse tree back as Go does (the metrics label)', () => {
    const t = (s: string): string => GoTemplate.parse('answer', s).treeString();
    expect(t('{{ .Name }} 60 IN A {{ index .Match 3 }}')).toBe('{{.Name}} 60 IN A {{index .Match 3}}');
    expect(t('{{- if eq .Type "A" -}} a {{- else if .Zone }}b{{ end }}')).toBe(
      '{{if eq .Type "A"}}a{{else}}{{if .Zone}}b{{end}}{{end}}',
    );
    expect(t('{{ $x := parseInt .Group.b 16 8 }}{{ $x | printf "%d" }}{{/* c */}}')).toBe(
      '{{$x := parseInt .Group.b 16 8}}{{$x | printf "%d"}}',
    );
    expect(t('{{ range $i, $e := .Match }}{{ (index .Match 0).X }}{{ end }}')).toBe(
      '{{range $i, $e := .Match}}{{(index .Match 0).X}}{{end}}',
    );
  });

  it('fmt helpers', () => {
    expect(fmtV(undefined)).toBe('<no value>');
    expect(fmtV(null)).toBe('<nil>');
    expect(sprintf('%5.1f|%e|%t|%c|%%|%o|%b', [3.14159, 1234.5, true, 65n, 8n, 5n], fmtV)).toBe(
      '  3.1|1.234500e+03|true|A|%|10|101',
    );
    expect(sprintf('%s', ['a', 'b'], fmtV)).toBe('a%!(EXTRA string=b)');
  });
});
