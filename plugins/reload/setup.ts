/** `reload [INTERVAL] [JITTER]` (docs/plugins.md, reload). Only the first occurrence in a block is read. */
import type { Dispenser } from '../../src/corefile/dispenser.js';
import { parseGoDuration } from '../../src/util/duration.js';

export const DEFAULT_INTERVAL_MS = 30_000;
export const DEFAULT_JITTER_MS = 15_000;
const MIN_INTERVAL_MS = 2_000;
const MIN_JITTER_MS = 1_000;

export interface ReloadConfig {
  readonly intervalMs: number;
  /** Jitter, already reduced to at most interval/2. */
  readonly jitterMs: number;
}

export function parseReload(d: Dispenser): ReloadConfig {
  d.next(); // 'reload'
  const args = d.remainingArgs();
  if (args.length > 2) throw d.argErr();
  const dur = (s: string): number => {
    try {
      return parseGoDuration(s);
    } catch (e) {
      throw d.err((e as Error).message);
    }
  };
  const intervalMs = args.length > 0 ? dur(args[0]!) : DEFAULT_INTERVAL_MS;
  if (intervalMs < MIN_INTERVAL_MS) throw d.err('interval value must be greater or equal to 2s');
  let jitterMs = args.length > 1 ? dur(args[1]!) : DEFAULT_JITTER_MS;
  if (jitterMs !== 0 && jitterMs < MIN_JITTER_MS) throw d.err('jitter value must be 0 or greater or equal to 1s');
  if (jitterMs > intervalMs / 2) jitterMs = intervalMs / 2;
  return { intervalMs, jitterMs };
}

/** The period of one (re)load: INTERVAL + U, U uniform in [−JITTER/2, +JITTER/2). */
export function pickPeriod(cfg: ReloadConfig, random: () => number = Math.random): number {
  if (cfg.jitterMs === 0) return cfg.intervalMs;
  return cfg.intervalMs + Math.floor(random() * cfg.jitterMs) - cfg.jitterMs / 2;
}
