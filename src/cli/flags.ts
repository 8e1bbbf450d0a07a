/**
 * Go-style command-line flags, as CoreDNS's `flag` package accepts them: one or two dashes,
 * `-name value` or `-name=value`, booleans as `-name` or `-name=true|false`. Node's parseArgs
 * cannot read `-conf`, hence this small parser.
 */
export interface Flags {
  conf: string;
  dnsPort: number;
  pidfile: string;
  plugins: boolean;
  version: boolean;
  quiet: boolean;
  validate: boolean;
  /** `-log-format`: `text` (default) or `json`; checked by main (CoreDNS checks it after parsing). */
  logFormat: string;
  /**
   * Query threads sharing the listeners, beyond CoreDNS; 0 (the default) = one per CPU of the
   * container, as its memory limit allows.
   */
  workers: number;
  /** TCP connections per listener; at the cap the longest-idle one is closed (beyond CoreDNS). */
  tcpMaxConns: number;
  /** TCP connections per client address and listener, 0 = no cap (beyond CoreDNS). */
  tcpMaxConnsPerSource: number;
}

export class FlagError extends Error {
  /** 2 for flag syntax errors (Go's flag package), 1 for extra positional arguments (CoreDNS fatal). */
  constructor(
    message: string,
    readonly exitCode = 2,
    /** The flags parsed before the extra arguments (exit 1), for `-log-format`. */
    readonly flags?: Flags,
  ) {
    super(message);
  }
}

/** `-h`, `-help` or `--help` (any value): print the usage and exit 0, as Go's flag package does. */
export class HelpRequested extends Error {
  constructor() {
    super('help requested');
  }
}

interface Spec {
  key: keyof Flags;
  kind: 'string' | 'int' | 'bool';
  help: string;
  /** The type shown by -h when it is not the kind (CoreDNS's port is a string flag). */
  shownType?: string;
  /** Default shown by -h as ` (default …)`, as Go appends it for a non-zero default. */
  shownDefault?: string;
}

// The help texts of the flags CoreDNS 1.15.0 has are CoreDNS's, word for word.
const SPECS: Record<string, Spec> = {
  conf: { key: 'conf', kind: 'string', help: 'Corefile to load (default "Corefile")' },
  'dns.port': { key: 'dnsPort', kind: 'int', shownType: 'string', shownDefault: '"53"', help: 'Default port' },
  p: { key: 'dnsPort', kind: 'int', shownType: 'string', shownDefault: '"53"', help: 'Default port' },
  pidfile: { key: 'pidfile', kind: 'string', help: 'Path to write pid file' },
  plugins: { key: 'plugins', kind: 'bool', help: 'List installed plugins' },
  version: { key: 'version', kind: 'bool', help: 'Show version' },
  'log-format': { key: 'logFormat', kind: 'string', shownDefault: '"text"', help: 'Log format (text or json)' },
  quiet: { key: 'quiet', kind: 'bool', help: 'Quiet mode (no initialization output)' },
  validate: {
    key: 'validate',
    kind: 'bool',
    help: 'Check the Corefile without serving: print every parse and setup error in line order and\nevery unset environment variable it uses, then exit (1 on errors)',
  },
  workers: {
    key: 'workers',
    kind: 'int',
    shownDefault: '0',
    help: 'Number of query threads sharing the DNS sockets; 0 = one per CPU of the container, as its memory limit allows',
  },
  'dns.tcp.maxconns': {
    key: 'tcpMaxConns',
    kind: 'int',
    shownDefault: '10000',
    help: 'Maximum TCP connections per listener; at the cap the longest-idle one is closed',
  },
  'dns.tcp.maxconnspersource': {
    key: 'tcpMaxConnsPerSource',
    kind: 'int',
    shownDefault: '256',
    help: 'Maximum TCP connections from one client address per listener, 0 for no cap',
  },
};

/**
 * The usage text, laid out as Go's `flag.PrintDefaults` does (CoreDNS's `-h`): flags sorted by
 * name, `  -name type` then the help on the next line after a tab.
 */
export function usage(): string {
  const lines = ['Usage of clusterdns:'];
  for (const name of Object.keys(SPECS).sort()) {
    const s = SPECS[name]!;
    const type = s.shownType ?? (s.kind === 'bool' ? '' : s.kind);
    const head = `  -${name}${type ? ` ${type}` : ''}`;
    // Go: a head of at most 4 characters (`  -x`) keeps the help on its line.
    const help =
      s.help.replaceAll('\n', '\n    \t') + (s.shownDefault !== undefined ? ` (default ${s.shownDefault})` : '');
    lines.push(head.length <= 4 ? `${head}\t${help}` : `${head}\n    \t${help}`);
  }
  return lines.join('\n');
}

export function parseFlags(argv: readonly string[]): Flags {
  const flags: Flags = {
    conf: '',
    dnsPort: 53,
    pidfile: '',
    plugins: false,
    version: false,
    quiet: false,
    validate: false,
    logFormat: 'text',
    workers: 0,
    tcpMaxConns: 10_000,
    tcpMaxConnsPerSource: 256,
  };
  const rest: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === '--') {
      rest.push(...argv.slice(i + 1));
      break;
    }
    if (!arg.startsWith('-') || arg === '-') {
      rest.push(...argv.slice(i));
      break;
    }
    const body = arg.startsWith('--') ? arg.slice(2) : arg.slice(1);
    if (body === '' || body.startsWith('-') || body.startsWith('=')) throw new FlagError(`bad flag syntax: ${arg}`);
    const eq = body.indexOf('=');
    const name = eq >= 0 ? body.slice(0, eq) : body;
    const spec = Object.prototype.hasOwnProperty.call(SPECS, name) ? SPECS[name] : undefined;
    if (!spec) {
      if (name === 'h' || name === 'help') throw new HelpRequested();
      throw new FlagError(`flag provided but not defined: -${name}`);
    }
    let value: string | undefined = eq >= 0 ? body.slice(eq + 1) : undefined;
    if (spec.kind === 'bool') {
      const v = value ?? 'true';
      if (!/^(1|0|t|f|T|F|true|false|TRUE|FALSE|True|False)$/.test(v))
        throw new FlagError(`invalid boolean value "${v}" for -${name}: parse error`);
      (flags[spec.key] as boolean) = /^(1|t|true)$/i.test(v);
      continue;
    }
    if (value === undefined) {
      if (i + 1 >= argv.length) throw new FlagError(`flag needs an argument: -${name}`);
      value = argv[++i]!;
    }
    if (spec.kind === 'int') {
      if (!/^-?\d+$/.test(value)) throw new FlagError(`invalid value "${value}" for flag -${name}: parse error`);
      (flags[spec.key] as number) = Number(value);
    } else {
      (flags[spec.key] as string) = value;
    }
  }
  if (rest.length) throw new FlagError(`extra command line arguments: [${rest.join(' ')}]`, 1, flags);
  if (flags.tcpMaxConns < 1)
    throw new FlagError(`invalid value "${flags.tcpMaxConns}" for flag -dns.tcp.maxconns: must be at least 1`);
  if (flags.workers < 0)
    throw new FlagError(`invalid value "${flags.workers}" for flag -workers: must not be negative`);
  if (flags.tcpMaxConnsPerSource < 0)
    throw new FlagError(
      `invalid value "${flags.tcpMaxConnsPerSource}" for flag -dns.tcp.maxconnspersource: must not be negative`,
    );
  return flags;
}
