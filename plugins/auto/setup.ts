/**
 * `auto [ZONES...] { directory DIR [REGEXP ORIGIN_TEMPLATE]; reload DURATION; upstream }`
 * (CoreDNS 1.15.0 plugin/auto/setup.go). Later occurrences overwrite what earlier ones set, as
 * CoreDNS's single `Auto` value does.
 */
import { statSync } from 'node:fs';
import type { Dispenser } from '../../src/corefile/dispenser.js';
import { directive, duration, option, parseOccurrence, str, zoneArg } from '../../src/corefile/options.js';
import { ConfigError } from '../../src/corefile/types.js';
import { normalizeZoneArgs } from '../../src/dns/name.js';
import type { Logger } from '../../src/log.js';
import { openErrorText } from '../../src/zone/load.js';

export const AUTO_OPTIONS = directive('auto', {
  args: { rest: zoneArg(), max: Infinity },
  options: [
    option('directory', { args: [str('DIR')], rest: str('REGEXP ORIGIN_TEMPLATE'), min: 1, max: 3 }),
    // CoreDNS reads RemainingArgs and uses the first; its errors come wrapped by file's prefix.
    option('reload', {
      args: [
        duration({
          min: 0,
          range: () => 'plugin/file: invalid duration',
          invalid: (_v, goError) => `plugin/file: ${goError}`,
        }),
      ],
      rest: str('IGNORED'),
      min: 1,
      arity: 'reload duration value is expected',
    }),
    option('upstream', { rest: str('ADDRESS'), min: 0, summary: 'accepted and ignored, as in CoreDNS' }),
  ],
});

/** CoreDNS's maxRegexpLen. */
const MAX_REGEXP_LEN = 10_000;

export interface AutoConfig {
  /** The zones the plugin may answer for (the arguments, else the block's). */
  readonly origins: string[];
  /** The directory scanned ('' when no `directory` line: every scan finds nothing). */
  directory: string;
  /** Matched against each file's base name; its groups fill the template. */
  re: RegExp;
  /** The origin template, `{N}` already rewritten to Go's `${N}`. */
  template: string;
  /** Scan and reload interval; 0 scans once at start. */
  reloadMs: number;
}

/** CoreDNS's rewriteToExpand: every `{` gets a `$` before it. */
export function rewriteToExpand(s: string): string {
  return s.replaceAll('{', '${');
}

export function parseAuto(
  d: Dispenser,
  blockZones: readonly string[],
  log: Logger,
  /** The block's root applied to the directory (SetupContext.resolvePath). */
  resolvePath = (p: string): string => p,
): AutoConfig {
  const cfg: AutoConfig = {
    origins: [...blockZones],
    directory: '',
    re: /db\.(.*)/,
    template: '${1}',
    reloadMs: 60_000,
  };
  while (d.next()) {
    const occ = parseOccurrence(d, AUTO_OPTIONS);
    const at = occ.directive.token;
    const args = occ.directive.raw;
    cfg.origins.length = 0;
    cfg.origins.push(...(args.length > 0 ? normalizeZoneArgs(args) : blockZones));
    for (const o of occ.options) {
      const v = o.values.map(String);
      switch (o.name) {
        case 'directory': {
          cfg.directory = resolvePath(v[0]!);
          try {
            statSync(cfg.directory);
          } catch (e) {
            if ((e as NodeJS.ErrnoException).code !== 'ENOENT')
              throw new ConfigError(
                `Unable to access root path '${cfg.directory}': ${openErrorText(cfg.directory, e).replace(/^open /, 'stat ')}`,
                at.file,
                o.token.line,
                'auto',
              );
            log.warning(`Directory does not exist: ${cfg.directory}`);
          }
          if (v.length >= 2) {
            if (v[1]!.length > MAX_REGEXP_LEN) throw new ConfigError('regexp too large', at.file, o.token.line, 'auto');
            let re: RegExp;
            try {
              // RE2's `(?P<name>` is JavaScript's `(?<name>`.
              re = new RegExp(v[1]!.replaceAll('(?P<', '(?<'));
            } catch (e) {
              throw new ConfigError(`error parsing regexp: ${(e as Error).message}`, at.file, o.token.line, 'auto');
            }
            if (new RegExp(`${re.source}|`).exec('')!.length - 1 === 0)
              throw new ConfigError('Need at least one sub expression', at.file, o.token.line, 'auto');
            // A REGEXP without its ORIGIN_TEMPLATE: Caddy's ArgErr on the regexp.
            if (v.length === 2)
              throw new ConfigError(
                `Wrong argument count or unexpected line ending after '${v[1]}'`,
                at.file,
                o.token.line,
                'auto',
              );
            cfg.re = re;
            cfg.template = rewriteToExpand(v[2]!);
          }
          break;
        }
        case 'reload':
          cfg.reloadMs = o.values[0] as number;
          break;
      }
    }
  }
  return cfg;
}
