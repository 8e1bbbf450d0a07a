/** File imports by pattern (`import plugins/*.conf`): Go's `filepath.Glob` as CoreDNS resolves it. */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { compareBytes } from './gosort.js';

/**
 * Default `ParseOptions.glob`: Go `filepath.Glob` semantics restricted to `*` (any run of
 * characters except `/`) and `?` (one character except `/`), which may appear in any path
 * segment. Like Go, dot-files are matched and file-system errors (unreadable directories) just
 * mean "no match". Results are absolute and sorted.
 */
export function globFiles(pattern: string, baseDir: string): string[] {
  const full = path.resolve(baseDir, pattern);
  const root = path.parse(full).root;
  const segments = full
    .slice(root.length)
    .split(path.sep)
    .filter((seg) => seg !== '');
  let current = [root];
  for (let i = 0; i < segments.length; i++) {
    const seg = segments[i]!;
    const last = i === segments.length - 1;
    const next: string[] = [];
    if (!/[*?]/.test(seg)) {
      for (const dir of current) {
        const p = path.join(dir, seg);
        if (last ? exists(p) : isDirectory(p)) next.push(p);
      }
    } else {
      const re = segmentRegExp(seg);
      for (const dir of current) {
        let names: string[];
        try {
          names = fs.readdirSync(dir);
        } catch {
          continue;
        }
        for (const name of names) {
          if (!re.test(name)) continue;
          const p = path.join(dir, name);
          if (last || isDirectory(p)) next.push(p);
        }
      }
    }
    current = next;
    if (current.length === 0) return [];
  }
  return current.sort(compareBytes);
}

function segmentRegExp(seg: string): RegExp {
  let src = '^';
  for (const ch of seg) {
    if (ch === '*') src += '[^/]*';
    else if (ch === '?') src += '[^/]';
    else src += ch.replace(/[\\^$.*+?()[\]{}|/-]/g, '\\$&');
  }
  return new RegExp(`${src}$`, 'su');
}

function exists(p: string): boolean {
  try {
    fs.lstatSync(p);
    return true;
  } catch {
    return false;
  }
}

function isDirectory(p: string): boolean {
  try {
    return fs.statSync(p).isDirectory();
  } catch {
    return false;
  }
}
