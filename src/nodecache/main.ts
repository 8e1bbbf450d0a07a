/**
 * Entry of `clusterdns node-cache ARGS` (docs/node-cache.md): flags, then the app. Loaded by
 * src/main.ts only for that subcommand.
 */
import { startupFailure } from '../log.js';
import { NodeCacheApp } from './app.js';
import {
  NodeCacheFlagError,
  NodeCacheHelp,
  nodeCacheUsage,
  parseNodeCacheFlags,
  type NodeCacheFlags,
} from './flags.js';

export async function nodeCacheMain(argv: readonly string[]): Promise<void> {
  let flags: NodeCacheFlags;
  try {
    flags = parseNodeCacheFlags(argv);
  } catch (e) {
    if (e instanceof NodeCacheHelp) {
      process.stderr.write(`${nodeCacheUsage()}\n`);
      process.exit(0);
    }
    if (e instanceof NodeCacheFlagError) startupFailure(`Error parsing flags - ${e.message}, Exiting`);
    throw e;
  }
  await new NodeCacheApp(flags).run();
}
