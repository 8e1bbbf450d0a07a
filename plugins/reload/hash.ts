/**
 * The configuration hash the reload plugin compares: the Corefile is read again from its path
 * (following symlinks, so a ConfigMap `..data` swap is seen), parsed with imports and environment
 * references expanded, and hashed with the parser's `tokensHash` (SHA-512 over keys and tokens
 * with file and line). Imported files are re-read by the parser on every call.
 */
import { readFile } from 'node:fs/promises';
import { parseCorefileWithFiles, tokensHash } from '../../src/corefile/parser.js';
import { ConfigError } from '../../src/corefile/types.js';

export interface ConfigHash {
  readonly hash: string;
  /** Main file and every imported file. */
  readonly files: readonly string[];
}

let directives: ReadonlySet<string> | null = null;

/** Directive names from the plugin registry (imported lazily: the registry imports this plugin). */
async function directiveSet(): Promise<ReadonlySet<string>> {
  if (directives === null) {
    const { PLUGINS } = await import('../index.js');
    directives = new Set(PLUGINS.map((p) => p.name));
  }
  return directives;
}

/** Read, parse and hash the configuration at `path`. Throws (with a readable message) when it cannot. */
export async function hashConfigFile(path: string, env: Record<string, string | undefined> = process.env): Promise<ConfigHash> {
  const text = await readFile(path, 'utf8');
  const known = await directiveSet();
  try {
    const { blocks, files } = parseCorefileWithFiles(text, path, { isDirective: (n) => known.has(n), env, warn: () => {} });
    return { hash: tokensHash(blocks), files };
  } catch (e) {
    if (e instanceof ConfigError) throw new Error(e.describe());
    throw e;
  }
}
