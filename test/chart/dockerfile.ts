/**
 * Helpers for reproducing the image build without Docker: the build context as `.dockerignore`
 * selects it (Docker's pattern rules), and the Dockerfile's instructions split into stages.
 */
import { lstatSync, readFileSync, readdirSync } from 'node:fs';
import * as path from 'node:path';

/** One `.dockerignore` pattern, compiled as Docker's patternmatcher compiles it. */
interface IgnorePattern {
  text: string;
  exclusion: boolean;
  re: RegExp;
  segments: number;
}

function escapeRe(c: string): string {
  return /[.+^${}()|[\]\\]/.test(c) ? `\\${c}` : c;
}

/** Docker's pattern syntax: `**` any number of path segments, `*` and `?` within one segment. */
function compile(pattern: string): RegExp {
  let re = '^';
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i] ?? '';
    if (c === '*') {
      if (pattern[i + 1] === '*') {
        i++;
        if (pattern[i + 1] === '/') {
          i++;
          re += '(.*/)?'; // "**/" : zero or more leading directories
        } else {
          re += '.*';
        }
      } else {
        re += '[^/]*';
      }
    } else if (c === '?') {
      re += '[^/]';
    } else if (c === '\\' && i + 1 < pattern.length) {
      re += escapeRe(pattern[++i] ?? '');
    } else if (c === '[') {
      const end = pattern.indexOf(']', i + 1);
      if (end < 0) throw new Error(`.dockerignore: unterminated [ in ${pattern}`);
      re += pattern.slice(i, end + 1);
      i = end;
    } else {
      re += escapeRe(c);
    }
  }
  return new RegExp(`${re}$`);
}

/** Parse `.dockerignore` text: comments and blank lines dropped, `!` marks an exception. */
export function parseDockerignore(text: string): IgnorePattern[] {
  const out: IgnorePattern[] = [];
  for (const raw of text.split('\n')) {
    let line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    const exclusion = line.startsWith('!');
    if (exclusion) line = line.slice(1).trim();
    line = path.posix.normalize(line).replace(/^\/+/, '').replace(/\/+$/, '');
    if (line === '' || line === '.') continue;
    out.push({ text: line, exclusion, re: compile(line), segments: line.split('/').length });
  }
  return out;
}

/**
 * Is `rel` (a slash-separated path in the context) excluded? The last pattern that matches the
 * path, or the leading directories of the path with as many segments as the pattern, decides.
 */
export function isExcluded(patterns: IgnorePattern[], rel: string): boolean {
  const parts = rel.split('/');
  let excluded = false;
  for (const p of patterns) {
    let match = p.re.test(rel);
    if (!match && parts.length > 1 && p.segments < parts.length)
      match = p.re.test(parts.slice(0, p.segments).join('/'));
    if (match) excluded = !p.exclusion;
  }
  return excluded;
}

/**
 * The files Docker sends as build context: walk `root`, skipping an excluded directory unless an
 * exception pattern lies below it, and keep the files (and symlinks) that are not excluded.
 */
export function buildContextFiles(root: string, dockerignore: string): string[] {
  const patterns = parseDockerignore(dockerignore);
  const out: string[] = [];
  const walk = (dir: string): void => {
    for (const name of readdirSync(path.join(root, dir)).sort()) {
      const rel = dir === '' ? name : `${dir}/${name}`;
      const st = lstatSync(path.join(root, rel));
      const excluded = isExcluded(patterns, rel);
      if (st.isDirectory()) {
        if (excluded && !patterns.some((p) => p.exclusion && `${p.text}/`.startsWith(`${rel}/`))) continue;
        walk(rel);
      } else if (!excluded) {
        out.push(rel);
      }
    }
  };
  walk('');
  return out;
}

export interface Instruction {
  keyword: string;
  args: string;
}

export interface Stage {
  from: string;
  name: string;
  instructions: Instruction[];
}

/** The Dockerfile's stages, with line continuations joined, comments dropped and ARG defaults. */
export function parseDockerfile(file: string): { stages: Stage[]; args: Map<string, string> } {
  const lines = readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => !l.trim().startsWith('#'))
    .join('\n')
    .replace(/\\\n/g, ' ')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '');
  const stages: Stage[] = [];
  const args = new Map<string, string>();
  for (const line of lines) {
    const m = /^(\S+)\s*(.*)$/.exec(line);
    if (!m) continue;
    const keyword = (m[1] ?? '').toUpperCase();
    const rest = m[2] ?? '';
    if (keyword === 'FROM') {
      const f = /^(\S+)(?:\s+AS\s+(\S+))?$/i.exec(rest);
      stages.push({ from: f?.[1] ?? rest, name: f?.[2] ?? '', instructions: [] });
    } else if (keyword === 'ARG' && stages.length === 0) {
      const a = /^(\w+)=(\S+)$/.exec(rest);
      if (a) args.set(a[1] ?? '', a[2] ?? '');
    } else {
      const stage = stages.at(-1);
      if (!stage) throw new Error(`Dockerfile: ${keyword} before FROM`);
      stage.instructions.push({ keyword, args: rest });
    }
  }
  return { stages, args };
}
