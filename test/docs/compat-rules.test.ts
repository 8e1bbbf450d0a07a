/**
 * docs/coredns-compatibility.md's table of intentional differences names exactly the tolerance
 * rules of src/dnscompare/rules.ts: a rule added without a row, or a row left for a rule that was
 * removed or renamed, fails here.
 */
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { TOLERANCE_RULES } from '../../src/dnscompare/rules.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const DOC = path.join(ROOT, 'docs/coredns-compatibility.md');
const HEADING = '## Intentional differences';

/** The rule ids in the first column of the table under HEADING (a cell may name several). */
function tableRuleIds(markdown: string): string[] {
  const start = markdown.indexOf(`\n${HEADING}`);
  if (start < 0) throw new Error(`no "${HEADING}" section`);
  const rest = markdown.slice(start + 1);
  const next = rest.indexOf('\n## ');
  const section = next < 0 ? rest : rest.slice(0, next);
  const rows = section
    .split('\n')
    .filter((l) => l.startsWith('|'))
    .slice(2); // header, separator
  if (rows.length === 0) throw new Error(`no table under "${HEADING}"`);
  return rows.flatMap((row) => [...(row.split('|')[1] ?? '').matchAll(/`([^`]+)`/g)].map((m) => m[1]!));
}

describe('docs/coredns-compatibility.md, intentional differences', () => {
  it('lists every rule of src/dnscompare/rules.ts, and no other', () => {
    const documented = tableRuleIds(readFileSync(DOC, 'utf8'));
    const rules = TOLERANCE_RULES.map((r) => r.id);
    expect(
      documented.filter((id) => !rules.includes(id)),
      'rows naming no rule in rules.ts',
    ).toEqual([]);
    expect(
      rules.filter((id) => !documented.includes(id)),
      'rules without a row in the table',
    ).toEqual([]);
    expect(new Set(documented).size, 'a rule listed twice').toBe(documented.length);
  });

  it('the check sees a missing row and a stale one', () => {
    const doc = [
      '# x',
      '',
      HEADING,
      '',
      '| Rule | What | Why |',
      '|---|---|---|',
      '| `a`, `b` | x | y |',
      '| `c` | x | y |',
      '',
      '## Next',
      '',
      '| `not-a-rule` | x | y |',
      '',
    ].join('\n');
    expect(tableRuleIds(doc)).toEqual(['a', 'b', 'c']);
  });
});
