/** Reading a TypeScript source's imports as text (the import-rule and build-contents tests). */

/** Module specifiers of a TypeScript source: `from '…'`, `import '…'`, `import('…')`, `require('…')`. */
export function specifiers(source: string): string[] {
  const out: string[] = [];
  const re = /(?:\bfrom\s*|\bimport\s*\(\s*|\bimport\s+|\brequire\s*\(\s*)(['"`])([^'"`\n]+)\1/g;
  for (const m of source.matchAll(re)) out.push(m[2]!);
  return out;
}
