/**
 * `dnstap SOCKET [full] [WRITEBUFFER] [QUEUE] { identity; version; extra; skipverify }` and
 * `dnstap listen SOCKET [full] … { …; tls CERT KEY [CA] }` (CoreDNS 1.15.0 plugin/dnstap/setup.go):
 * each occurrence is one output, to a collector it dials or, with `listen`, to the sinks that
 * connect to it. SOCKET is `unix://PATH` or a bare path, `tcp://HOST:PORT` or `tls://HOST:PORT`.
 */
import { hostname } from 'node:os';
import { directive, option, parseOccurrences, str, type ParsedOccurrence } from '../../src/corefile/options.js';
import type { Dispenser } from '../../src/corefile/dispenser.js';
import { VERSION_LINE } from '../../src/version.js';

export const DNSTAP_OPTIONS = directive('dnstap', {
  args: { rest: str('SOCKET'), min: 1, max: Infinity },
  options: [
    option('identity', { args: [str('IDENTITY')], summary: 'identity written into every message' }),
    option('version', { args: [str('VERSION')], summary: 'version written into every message' }),
    option('extra', { args: [str('EXTRA')], summary: 'the extra field, with {placeholders} replaced' }),
    option('skipverify', { args: [], summary: 'do not verify the tls:// collector certificate' }),
    option('tls', { rest: str('FILE'), min: 0, summary: 'listener certificates (listen only)' }),
  ],
});

/** CoreDNS's bounds (setup.go): write buffer in MiB, queue in units of 10,000 messages. */
const MAX_TCP_WRITE_BUF = 1024;
const MAX_QUEUE = 4096;

export interface TapConfig {
  readonly network: 'unix' | 'tcp' | 'tls';
  /** Socket path (unix) or `host:port`. */
  readonly address: string;
  readonly full: boolean;
  readonly writeBufferMiB: number;
  readonly queueMultiple: number;
  readonly identity: string;
  readonly version: string;
  /** The `extra` template, or null (no extra field). */
  readonly extra: string | null;
  readonly skipVerify: boolean;
  /** `dnstap listen`: sinks connect to SOCKET (CoreDNS's listener.go). */
  readonly listen: boolean;
  /** `tls CERT KEY [CA]` of a listener. */
  readonly tls: { readonly cert: string; readonly key: string; readonly ca?: string } | null;
}

/** Go's url.Parse(...).Host for `scheme://host:port[/...]`. */
function urlHost(s: string): string {
  const rest = s.slice(s.indexOf('://') + 3);
  const end = rest.search(/[/?#]/);
  return end < 0 ? rest : rest.slice(0, end);
}

function multiple(occ: ParsedOccurrence, v: string, what: string, max: number, unit: string): number {
  if (!/^[+-]?\d+$/.test(v)) {
    throw occ.error(occ.directive, `dnstap: invalid ${what} "${v}": strconv.Atoi: parsing "${v}": invalid syntax`);
  }
  const n = Number(v);
  if (n < 1 || n > max) throw occ.error(occ.directive, `dnstap: ${what} must be between 1 and ${max} (${unit}): ${n}`);
  return n;
}

function config(occ: ParsedOccurrence): TapConfig {
  let args = occ.directive.raw;
  const listen = args[0] === 'listen';
  if (listen) {
    if (args.length < 2) throw occ.error(occ.directive, 'dnstap listen requires an endpoint argument');
    args = args.slice(1);
  }
  let tls: TapConfig['tls'] = null;
  if (occ.has('tls')) {
    const t = occ.last('tls')!;
    if (!listen) throw occ.error(t, 'tls directive only valid for listeners');
    const files = t.raw;
    if (files.length < 2) throw occ.error(t, 'tls requires cert and key file paths');
    tls = { cert: files[0]!, key: files[1]!, ca: files[2] };
  }
  const endpoint = args[0]!;
  const writeBufferMiB =
    args.length >= 3 ? multiple(occ, args[2]!, 'MultipleTcpWriteBuf', MAX_TCP_WRITE_BUF, 'MiB units') : 1;
  const queueMultiple = args.length >= 4 ? multiple(occ, args[3]!, 'MultipleQueue', MAX_QUEUE, 'x10k messages') : 1;
  let network: TapConfig['network'] = 'unix';
  let address: string;
  if (endpoint.startsWith('tls://')) {
    network = 'tls';
    address = urlHost(endpoint);
  } else if (endpoint.startsWith('tcp://')) {
    network = 'tcp';
    address = urlHost(endpoint);
  } else {
    address = endpoint.startsWith('unix://') ? endpoint.slice(7) : endpoint;
  }
  return {
    network,
    address,
    full: args.length >= 2 && args[1] === 'full',
    writeBufferMiB,
    queueMultiple,
    identity: occ.str('identity', 0, hostname()),
    version: occ.str('version', 0, VERSION_LINE),
    extra: occ.has('extra') ? occ.str('extra', 0, '') : null,
    skipVerify: occ.has('skipverify'),
    listen,
    tls,
  };
}

/** Every occurrence of `dnstap` in the block, in order. */
export function parseDnstap(d: Dispenser): TapConfig[] {
  return parseOccurrences(d, DNSTAP_OPTIONS, config);
}
