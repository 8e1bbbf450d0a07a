/** The configuration hash the reload plugin compares: Caddy's server blocks as Go's encoding/json writes them. */
import { createHash } from 'node:crypto';
import { compareBytes } from './gosort.js';
import type { ServerBlock } from './types.js';

/**
 * SHA-512 (hex) of the fully expanded configuration, as the reload plugin uses it (docs/plugins.md
 * §reload, docs/corefile.md §5.1): keys and every directive token with its file, line and text, so a
 * change in an imported file or in a used environment variable changes the hash, and so does
 * inserting a line (line numbers shift), while comment- or whitespace-only edits within a line do
 * not.
 *
 * The serialisation is CoreDNS's `json.Marshal([]caddyfile.ServerBlock)` (Go's encoding/json:
 * map keys sorted, HTML-safe escaping, `null` for no blocks), so the hash logged as
 * `Running configuration SHA512 = …` matches CoreDNS for the same Corefile and paths.
 */
export function tokensHash(blocks: readonly HashedBlock[]): string {
  return createHash('sha512').update(tokensJson(blocks), 'utf8').digest('hex');
}

/** What the hash covers of a server block (Caddy's ServerBlock: keys and tokens). */
export type HashedBlock = Pick<ServerBlock, 'keys' | 'directives'>;

/** The JSON text hashed by `tokensHash` (exported for tests and debugging). */
export function tokensJson(blocks: readonly HashedBlock[]): string {
  if (blocks.length === 0) return 'null';
  const parts: string[] = [];
  for (const b of blocks) {
    const keys = b.keys.map((k) => goJsonString(k.text)).join(',');
    const names = [...b.directives.keys()].sort(compareBytes);
    const dirs = names.map((name) => {
      const toks = b.directives
        .get(name)!
        .map((t) => `{"File":${goJsonString(t.file)},"Line":${t.line},"Text":${goJsonString(t.text)}}`);
      return `${goJsonString(name)}:[${toks.join(',')}]`;
    });
    parts.push(`{"Keys":[${keys}],"Tokens":{${dirs.join(',')}}}`);
  }
  return `[${parts.join(',')}]`;
}

/** A JSON string the way Go's encoding/json writes it (escapes `<`, `>`, `&`, U+2028, U+2029). */
function goJsonString(s: string): string {
  let out = '"';
  let chunk = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    let esc: string | undefined;
    if (c < 0x20) {
      esc =
        c === 0x0a
          ? '\\n'
          : c === 0x0d
            ? '\\r'
            : c === 0x09
              ? '\\t'
              : c === 0x08
                ? '\\b'
                : c === 0x0c
                  ? '\\f'
                  : `\\u00${c.toString(16).padStart(2, '0')}`;
    } else if (c === 0x22) esc = '\\"';
    else if (c === 0x5c) esc = '\\\\';
    else if (c === 0x3c) esc = '\\u003c';
    else if (c === 0x3e) esc = '\\u003e';
    else if (c === 0x26) esc = '\\u0026';
    else if (c === 0x2028) esc = '\\u2028';
    else if (c === 0x2029) esc = '\\u2029';
    else if (c >= 0xd800 && c <= 0xdfff) {
      // Lone surrogates (not from UTF-8 input) are written as U+FFFD, as Go does for invalid UTF-8.
      const pair = c <= 0xdbff && i + 1 < s.length && (s.charCodeAt(i + 1) & 0xfc00) === 0xdc00;
      if (pair) {
        i++;
        continue;
      }
      esc = '\ufffd';
    }
    if (esc !== undefined) {
      out += s.slice(chunk, i) + esc;
      chunk = i + 1;
    }
  }
  return `${out}${s.slice(chunk)}"`;
}
