/** Plugin setup in unit tests: the ConfigError a setup throws, the factory a setup returns. */
import { ConfigError } from '../../src/corefile/types.js';
import type { HandlerFactory, PluginDef } from '../../src/plugin.js';

/** The ConfigError `run` throws (other errors propagate; no error fails the test). */
export function configError(run: () => unknown, what: string): ConfigError {
  try {
    const r = run();
    if (r instanceof Promise) throw new Error('unexpected async setup');
  } catch (e) {
    if (e instanceof ConfigError) return e;
    throw e;
  }
  throw new Error(`no error for ${what}`);
}

/** The handler factory a synchronous setup returned (fails the test otherwise). */
export function factoryOf(r: ReturnType<PluginDef['setup']>): HandlerFactory {
  if (typeof r !== 'function') throw new Error('setup did not return a handler factory synchronously');
  return r;
}
