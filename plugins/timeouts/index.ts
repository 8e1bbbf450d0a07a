/**
 * The `timeouts` directive (README.md): read, write and idle timeouts and the query limit of the
 * block's TCP connections, given to the core (src/server/listenopts.ts) which applies them to the
 * listeners. Parsed by hand for CoreDNS 1.15.0's exact error texts (Go duration formatting, the
 * doubled `plugin/timeouts:` prefix of two of them); the options are declared for `-plugins` and
 * the README check.
 */
import { directive, int, option, str } from '../../src/corefile/options.js';
import { ConfigError } from '../../src/corefile/types.js';
import type { PluginDef } from '../../src/plugin.js';
import { LISTENER_TIMEOUTS, type ListenerTimeouts } from '../../src/server/listenopts.js';
import { DurationError, formatGoDurationNs, parseGoDurationNs } from '../../src/util/duration.js';

export const TIMEOUTS_OPTIONS = directive('timeouts', {
  options: [
    option('read', { args: [str('DURATION')] }),
    option('write', { args: [str('DURATION')] }),
    option('idle', { args: [str('DURATION')] }),
    option('maxtcpqueries', { args: [int({ meta: 'MAXIMUM' })] }),
  ],
});

const SECOND_NS = 1e9;
const DAY_NS = 24 * 3600 * SECOND_NS;

/** durations.NewDurationFromArg: an integer is seconds, else a Go duration. */
function durationNs(arg: string): number {
  const text = /^[+-]?\d+$/.test(arg) ? `${arg}s` : arg;
  try {
    return parseGoDurationNs(text);
  } catch (e) {
    if (e instanceof DurationError) throw new Error(`failed to parse duration '${text}'`);
    throw e;
  }
}

export const timeouts: PluginDef = {
  name: 'timeouts',
  repeat: 'all',
  options: TIMEOUTS_OPTIONS,
  setup(d, ctx) {
    const t: { -readonly [K in keyof ListenerTimeouts]: ListenerTimeouts[K] } = {};
    // CoreDNS wraps two of its errors in `plugin.Error` twice.
    const twice = (e: ConfigError): ConfigError =>
      new ConfigError(e.message, e.file, e.line, 'timeouts: plugin/timeouts');
    while (d.next()) {
      if (d.remainingArgs().length > 0) throw twice(d.argErr());
      let n = 0;
      while (d.nextBlock()) {
        const name = d.val();
        const args = d.remainingArgs();
        if (args.length !== 1) throw d.argErr();
        const arg = args[0]!;
        if (name === 'maxtcpqueries') {
          if (!/^[+-]?\d+$/.test(arg) || !Number.isSafeInteger(Number(arg))) {
            throw d.err(
              `invalid value for maxtcpqueries '${arg}': strconv.Atoi: parsing ${JSON.stringify(arg)}: ${/^[+-]?\d+$/.test(arg) ? 'value out of range' : 'invalid syntax'}`,
            );
          }
          const v = Number(arg);
          if (v === 0 || v < -1)
            throw d.err(`maxtcpqueries provided '${v}' needs to be -1 (unlimited) or a positive integer`);
          t.maxTcpQueries = v;
          n++;
          continue;
        }
        let ns: number;
        try {
          ns = durationNs(arg);
        } catch (e) {
          throw d.err((e as Error).message);
        }
        if (ns < SECOND_NS || ns > DAY_NS)
          throw d.err(`timeout provided '${formatGoDurationNs(ns)}' needs to be between 1 second and 24 hours`);
        const ms = Math.round(ns / 1e6);
        if (name === 'read') t.readMs = ms;
        else if (name === 'write') t.writeMs = ms;
        else if (name === 'idle') t.idleMs = ms;
        else throw d.err(`unknown option: '${name}'`);
        n++;
      }
      if (n === 0) throw twice(d.err('timeouts block with no timeouts specified'));
    }
    ctx.provide(LISTENER_TIMEOUTS, t);
    return null;
  },
};
