/**
 * The configuration hash the reload plugin compares and logs (`Running configuration SHA512 = …`),
 * computed the way CoreDNS 1.15.0's reload plugin does, so the two print the same hex for the same
 * Corefile: the file is parsed into server blocks *without* checking directive names (Caddy's
 * `caddyfile.Parse(path, body, nil)`), imports and environment references expanded, and the
 * SHA-512 is taken over `json.Marshal` of the blocks (`tokensHash`, src/corefile/hash.ts). As in Caddy's
 * lexer, tokens read from the main file carry an empty `File`; tokens from imported files carry
 * the imported file's absolute path.
 *
 * The file is read again from its path on every call (following symlinks, so a ConfigMap `..data`
 * swap is seen), and imported files are re-read by the parser.
 */
import { readFile } from 'node:fs/promises';
import { tokensHash } from '../../src/corefile/hash.js';
import { parseCorefileWithFiles } from '../../src/corefile/parser.js';
import { ConfigError, type ServerBlock, type Token } from '../../src/corefile/types.js';

export interface ConfigHash {
  readonly hash: string;
  /** Main file and every imported file. */
  readonly files: readonly string[];
}

/** SHA-512 (hex) of `blocks` parsed from `mainFile`, as CoreDNS's reload plugin computes it. */
export function reloadHash(blocks: readonly ServerBlock[], mainFile: string): string {
  const strip = (t: Token): Token => (t.file === mainFile ? { ...t, file: '' } : t);
  const asCaddy = blocks.map((b) => ({
    keys: b.keys.map(strip),
    directives: new Map([...b.directives].map(([name, toks]) => [name, toks.map(strip)])),
  }));
  return tokensHash(asCaddy);
}

/** Parse Corefile text into the hashed form (no directive check). Throws ConfigError. */
export function hashCorefileText(
  text: string,
  path: string,
  env: Record<string, string | undefined> = process.env,
): ConfigHash {
  const { blocks, files } = parseCorefileWithFiles(text, path, { isDirective: () => true, env, warn: () => {} });
  return { hash: reloadHash(blocks, path), files };
}

/** Read, parse and hash the configuration at `path`. Throws (with a readable message) when it cannot. */
export async function hashConfigFile(
  path: string,
  env: Record<string, string | undefined> = process.env,
): Promise<ConfigHash> {
  const text = await readFile(path, 'utf8');
  try {
    return hashCorefileText(text, path, env);
  } catch (e) {
    if (e instanceof ConfigError) throw new Error(e.describe());
    throw e;
  }
}
