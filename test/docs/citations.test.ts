/**
 * Nothing in the repository points at a document outside it, and every citation of the reference
 * in docs/ names a file and a section that exist (docs/ARCHITECTURE.md, "Reference"). The behaviour
 * notes the project started from lived in a directory next to the clone; scripts/cite-docs.sh
 * rewrites old citations to docs/, and this test keeps them there.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const SCRIPT = path.join(ROOT, 'scripts/cite-docs.sh');
const SELF = 'test/docs/citations.test.ts';
/** Files that must name the old documents: the rewriting script and this checker. */
const EXEMPT = new Set([SELF, 'scripts/cite-docs.sh']);

/** The names of the documents that lived outside the repository. */
const OLD_NAMES = ['corefile', 'kubernetes-records', 'operations-contract', 'style', 'plugins'];

/** Tracked files plus untracked ones that are not ignored (new files before their first commit). */
function repoFiles(cwd: string): string[] {
  const out = execFileSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], {
    cwd,
    encoding: 'utf8',
  });
  return [...new Set(out.split('\0').filter((f) => f !== ''))].filter((f) => {
    const p = path.join(cwd, f);
    return existsSync(p) && statSync(p).isFile();
  });
}

function readText(file: string): string | null {
  const buf = readFileSync(file);
  if (buf.includes(0)) return null; // binary
  return buf.toString('utf8');
}

interface Heading {
  /** The section number (`7.4`, `2.5.1`, `7`), or '' for a heading without one. */
  readonly number: string;
  /** The heading text after the number, lower-cased. */
  readonly text: string;
}

function headingsOf(markdown: string): Heading[] {
  const out: Heading[] = [];
  let fenced = false;
  for (const line of markdown.split('\n')) {
    if (/^\s*(```|~~~)/.test(line)) fenced = !fenced;
    if (fenced) continue;
    const m = /^#{1,6}\s+(.*)$/.exec(line);
    if (!m) continue;
    const h = m[1]!.trim();
    const n = /^([0-9]+(?:\.[0-9]+)*)\.?\s+(.*)$/.exec(h);
    out.push(n ? { number: n[1]!, text: n[2]!.toLowerCase() } : { number: '', text: h.toLowerCase() });
  }
  return out;
}

/** Does `section` (a number like `7.4` or a name like `reload`) name a heading? */
function hasSection(headings: readonly Heading[], section: string): boolean {
  if (/^[0-9]/.test(section)) return headings.some((h) => h.number === section);
  const s = section.toLowerCase();
  return headings.some((h) => h.text === s || h.text.startsWith(`${s} `));
}

interface Problem {
  readonly file: string;
  readonly line: number;
  readonly text: string;
  readonly why: string;
}

const lineOf = (text: string, index: number): number => text.slice(0, index).split('\n').length;

/** Every reference in `files` (relative to `root`) to a document outside the repository or to a missing section. */
function findProblems(root: string, files: readonly string[]): Problem[] {
  const problems: Problem[] = [];
  const headingCache = new Map<string, Heading[] | null>();
  const headings = (docFile: string): Heading[] | null => {
    if (!headingCache.has(docFile)) {
      const p = path.join(root, docFile);
      headingCache.set(docFile, existsSync(p) ? headingsOf(readFileSync(p, 'utf8')) : null);
    }
    return headingCache.get(docFile)!;
  };

  for (const file of files) {
    if (EXEMPT.has(file)) continue;
    const text = readText(path.join(root, file));
    if (text === null) continue;
    const report = (index: number, match: string, why: string): void => {
      problems.push({ file, line: lineOf(text, index), text: match, why });
    };

    // 1. The old directory, however it is reached.
    for (const m of text.matchAll(/shared\/docs/g))
      report(m.index, m[0], 'points at the shared notes outside the repository');
    for (const m of text.matchAll(/outside the repo\b/g)) report(m.index, m[0], 'sends readers outside the repository');
    // The two notes that were renamed, in any spelling (`operations-contract pain point 5`).
    for (const m of text.matchAll(/(?<!docs\/)\b(?:operations-contract|kubernetes-records)\b(?!\.md)/g)) {
      report(m.index, m[0], 'names a document outside the repository (now docs/operations.md, docs/records.md)');
    }

    // 2. The old document names: allowed only as docs/NAME.md (existing), or as a relative Markdown
    //    link that resolves inside the repository.
    const nameRe = new RegExp(`(?<![\\w.-])((?:[\\w.-]+/)*)(${OLD_NAMES.join('|')})\\.md\\b`, 'g');
    for (const m of text.matchAll(nameRe)) {
      const prefix = m[1]!;
      const target = `${prefix}${m[2]!}.md`;
      const isLink = text.slice(Math.max(0, m.index - 2), m.index) === '](';
      if (prefix === '') {
        const resolved = path.join(path.dirname(file), target);
        if (isLink && existsSync(path.join(root, resolved))) continue;
        report(
          m.index,
          m[0],
          `bare ${target}: cite it as docs/${target === 'kubernetes-records.md' ? 'records.md' : target}`,
        );
        continue;
      }
      const candidates = [path.normalize(target), path.join(path.dirname(file), target)];
      if (!candidates.some((c) => !c.startsWith('..') && existsSync(path.join(root, c)))) {
        report(m.index, m[0], `${target} does not exist in the repository`);
      }
    }

    // 3. `docs/FILE.md §N` (and `§N, §M`, `§3–§5`): the file has those sections.
    const secRe = /docs\/([\w-]+)\.md`?((?:\s*(?:,|–|-|and|\/)?\s*§\s?(?:[0-9]+(?:\.[0-9]+)*|[A-Za-z][\w-]*))+)/g;
    for (const m of text.matchAll(secRe)) {
      const docFile = `docs/${m[1]!}.md`;
      const hs = headings(docFile);
      if (hs === null) {
        report(m.index, m[0], `${docFile} does not exist`);
        continue;
      }
      for (const s of m[2]!.matchAll(/§\s?([0-9]+(?:\.[0-9]+)*|[A-Za-z][\w-]*)/g)) {
        if (!hasSection(hs, s[1]!)) report(m.index, m[0], `${docFile} has no section ${s[1]!}`);
      }
    }

    // 4. `docs/plugins.md, NAME` (a plugin or a heading) and `docs/FILE.md, "Heading"`.
    const namedRe = /docs\/([\w-]+)\.md`?, (")?([A-Za-z][\w-]*)/g;
    for (const m of text.matchAll(namedRe)) {
      if (m[1] !== 'plugins' && m[2] === undefined) continue;
      const docFile = `docs/${m[1]!}.md`;
      const hs = headings(docFile);
      if (hs === null) report(m.index, m[0], `${docFile} does not exist`);
      else if (!hasSection(hs, m[3]!)) report(m.index, m[0], `${docFile} has no heading starting with "${m[3]!}"`);
    }
  }
  return problems;
}

const show = (ps: readonly Problem[]): string[] => ps.map((p) => `${p.file}:${p.line}: ${p.text} — ${p.why}`);

describe('citations of the behaviour reference', () => {
  it('no file in the repository refers to a document outside it, and every cited docs/ section exists', () => {
    const files = repoFiles(ROOT);
    expect(files.length).toBeGreaterThan(50);
    expect(files).toContain('docs/corefile.md');
    expect(show(findProblems(ROOT, files))).toEqual([]);
  });

  it('keeps the section numbers the code cites', () => {
    const corefile = headingsOf(readFileSync(path.join(ROOT, 'docs/corefile.md'), 'utf8'));
    for (const n of ['1.2', '1.4', '2', '3', '4', '5.1', '6.1', '6.3', '7.2', '7.3', '7.4', '8.2', '8.3', '9', '10']) {
      expect(hasSection(corefile, n), `docs/corefile.md §${n}`).toBe(true);
    }
    const records = headingsOf(readFileSync(path.join(ROOT, 'docs/records.md'), 'utf8'));
    for (const n of ['1', '2.1', '2.6', '4.5', '4.7', '6.4', '8.1', '8.2', '8.5', '9.2', '9.3', '11']) {
      expect(hasSection(records, n), `docs/records.md §${n}`).toBe(true);
    }
    const plugins = headingsOf(readFileSync(path.join(ROOT, 'docs/plugins.md'), 'utf8'));
    const registry = readFileSync(path.join(ROOT, 'plugins/index.ts'), 'utf8');
    const names = [...registry.matchAll(/import\('\.\/([a-z_]+)\/index\.js'\)/g)].map((m) => m[1]!);
    expect(names.length).toBeGreaterThan(10);
    for (const name of names) expect(hasSection(plugins, name), `docs/plugins.md has a "${name}" heading`).toBe(true);
  });

  it('the checker sees the problems it is meant to see', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'citations-'));
    try {
      mkdirSync(path.join(dir, 'docs'));
      mkdirSync(path.join(dir, 'src'));
      writeFileSync(
        path.join(dir, 'docs/corefile.md'),
        '# C\n\n## 7. Routing\n\n### 7.4 Replies\n\nSee [records](records.md).\n',
      );
      writeFileSync(path.join(dir, 'docs/records.md'), '# R\n\n## 2. Services\n');
      writeFileSync(path.join(dir, 'docs/plugins.md'), '# P\n\n## cache\n\n### Storing\n');
      const bad = [
        '// see ../shared/docs/corefile.md', // 1
        '// corefile.md §7.4', // 2
        '// kubernetes-records.md §2.1', // 3
        '// docs/corefile.md §7.5', // 4
        '// docs/operations-contract.md', // 5
        '// docs/plugins.md, forward', // 6
        '// docs/corefile.md §7.4, §8', // 7
        '// [x](plugins.md)', // 8: a link from src/ to a file that is not there
        '// (operations-contract pain point 5)', // 9
      ];
      const good = [
        '// docs/corefile.md §7.4, §7',
        '// docs/records.md §2',
        '// docs/plugins.md, cache',
        '// plugins/cache/README.md',
        '// docs/plugins.md, "Storing"',
      ];
      writeFileSync(path.join(dir, 'src/a.ts'), `${[...bad, ...good].join('\n')}\n`);
      const found = findProblems(dir, ['docs/corefile.md', 'docs/records.md', 'docs/plugins.md', 'src/a.ts']);
      // Each bad line is reported (line 1 twice: the directory and the bare name behind it); no good line is.
      expect([...new Set(found.map((p) => p.line))].sort((a, b) => a - b)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9]);
      expect(found.every((p) => p.file === 'src/a.ts')).toBe(true);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('scripts/cite-docs.sh', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'cite-docs-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  const files: Record<string, string> = {
    'src/a.ts': [
      '/** The reply pipeline (corefile.md §7.4); records (kubernetes-records.md §8.2, §2.1). */',
      '/** plugins.md, cache; plugins.md §reload; exit codes (operations-contract.md §d). */',
      '/** (operations-contract pain point 5 allows a not-ready report) (style.md habit 1) */',
      '/** and (operations-contract pain point 5) a */',
      '/** Already fine: docs/corefile.md §7.2, docs/records.md §1, plugins/cache/README.md. */',
      '/** operations-contract.md §b.2, operations-contract pain point 1, style.md habit 4, style.md §c. */',
    ].join('\n'),
    'docs/ARCHITECTURE.md':
      'Read `../shared/docs/*.md` (outside the repo) for the behaviour to match; this page says where\n',
    'docs/other.md': 'See [the Corefile](corefile.md) and `corefile.md` §2.\n',
    'examples/cluster.yaml': '# Fixture cluster of docs kubernetes-records.md §2.1, plus more.\n',
  };
  const expected: Record<string, string> = {
    'src/a.ts': [
      '/** The reply pipeline (docs/corefile.md §7.4); records (docs/records.md §8.2, §2.1). */',
      '/** docs/plugins.md, cache; docs/plugins.md §reload; exit codes (docs/operations.md). */',
      '/** (docs/operations.md, "Forwarding loops", weighs a not-ready report) (docs/plugins.md, "Plugin READMEs") */',
      '/** and (docs/operations.md, "Forwarding loops") a */',
      '/** Already fine: docs/corefile.md §7.2, docs/records.md §1, plugins/cache/README.md. */',
      '/** docs/operations.md, docs/operations.md, docs/ARCHITECTURE.md, "Conventions", docs/ARCHITECTURE.md. */',
    ].join('\n'),
    'docs/ARCHITECTURE.md':
      'Read the reference in `docs/` (`docs/corefile.md`, `docs/records.md`, `docs/plugins.md`, `docs/operations.md`) for the behaviour clusterdns implements; this page says where\n',
    'docs/other.md': 'See [the Corefile](corefile.md) and `docs/corefile.md` §2.\n',
    'examples/cluster.yaml': '# Fixture cluster of docs/records.md §2.1, plus more.\n',
  };
  const run = (): void => {
    execFileSync('bash', [SCRIPT], { cwd: dir, stdio: 'pipe' });
  };
  const snapshot = (): Record<string, string> =>
    Object.fromEntries(Object.keys(files).map((f) => [f, readFileSync(path.join(dir, f), 'utf8')]));

  it('rewrites every citation to docs/, and a second run changes nothing', () => {
    execFileSync('git', ['init', '-q'], { cwd: dir });
    for (const [f, content] of Object.entries(files)) {
      mkdirSync(path.join(dir, path.dirname(f)), { recursive: true });
      writeFileSync(path.join(dir, f), content);
    }
    execFileSync('git', ['add', '.'], { cwd: dir });
    run();
    const once = snapshot();
    expect(once).toEqual(expected);
    run();
    expect(snapshot()).toEqual(once);
    expect(Object.values(once).join('\n')).not.toContain('docs/docs/');
  });
});
