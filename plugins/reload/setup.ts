/** `reload [INTERVAL] [JITTER]` (docs/plugins.md, reload). Only the first occurrence in a block is read. */
import type { Dispenser } from '../../src/corefile/dispenser.js';
import { directive, duration, parseOccurrence } from '../../src/corefile/options.js';

export const DEFAULT_INTERVAL_MS = 30_000;
export const DEFAULT_JITTER_MS = 15_000;
const MIN_INTERVAL_MS = 2_000;
const MIN_JITTER_MS = 1_000;

export interface ReloadConfig {
  readonly intervalMs: number;
  /** Jitter, already reduced to at most interval/2. */
  readonly jitterMs: number;
}

export const RELOAD_OPTIONS = directive('reload', {
  args: {
    args: [
      duration({
        meta: 'INTERVAL',
        min: MIN_INTERVAL_MS,
        range: () => 'interval value must be greater or equal to 2s',
      }),
      duration({ meta: 'JITTER' }),
    ],
    min: 0,
  },
});

export function parseReload(d: Dispenser): ReloadConfig {
  d.next(); // 'reload'
  const occ = parseOccurrence(d, RELOAD_OPTIONS);
  const [intervalMs = DEFAULT_INTERVAL_MS, jitter = DEFAULT_JITTER_MS] = occ.directive.values as number[];
  if (jitter !== 0 && jitter < MIN_JITTER_MS)
    throw occ.error(occ.directive, 'jitter value must be 0 or greater or equal to 1s');
  return { intervalMs, jitterMs: Math.min(jitter, intervalMs / 2) };
}

/** The period of one (re)load: INTERVAL + U, U uniform in [−JITTER/2, +JITTER/2). */
export function pickPeriod(cfg: ReloadConfig, random: () => number = Math.random): number {
  if (cfg.jitterMs === 0) return cfg.intervalMs;
  return cfg.intervalMs + Math.floor(random() * cfg.jitterMs) - cfg.jitterMs / 2;
}
