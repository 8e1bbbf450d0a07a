/**
 * Options of `npm start` (tools/dev.ts): the four ports it listens on, from flags
 * (`npm start -- --dns-port 1053`), else the environment (`CLUSTERDNS_DNS_PORT=1053`), else the
 * defaults. A default port that is in use is replaced by a free one (and said so); a port asked
 * for explicitly that is in use is an error. Port 0 asks for any free port. All on 127.0.0.1.
 * Names outside the cluster go to `--upstream` / `CLUSTERDNS_UPSTREAM` (default /etc/resolv.conf).
 */
import * as dgram from 'node:dgram';
import * as net from 'node:net';

export const DEV_HOST = '127.0.0.1';

export type PortName = 'dns' | 'health' | 'ready' | 'metrics';
export const PORT_NAMES: readonly PortName[] = ['dns', 'health', 'ready', 'metrics'];

export const DEFAULT_PORTS: Readonly<Record<PortName, number>> = {
  dns: 1053,
  health: 8080,
  ready: 8181,
  metrics: 9153,
};

/** `--dns-port` and `CLUSTERDNS_DNS_PORT`, etc. */
export const flagOf = (p: PortName): string => `--${p}-port`;
export const envOf = (p: PortName): string => `CLUSTERDNS_${p.toUpperCase()}_PORT`;

export interface PortRequest {
  readonly port: number;
  /** Where it came from: a flag or variable name, or `default`. */
  readonly from: string;
}

export const UPSTREAM_ENV = 'CLUSTERDNS_UPSTREAM';
export const DEFAULT_UPSTREAM = '/etc/resolv.conf';

export interface DevOptions {
  readonly help: boolean;
  /** forward's upstream: one resolv.conf file or one address (host or host:port). */
  readonly upstream: string;
  readonly ports: Readonly<Record<PortName, PortRequest>>;
  /** Everything else: passed on to clusterdns (e.g. `-quiet`). */
  readonly rest: string[];
}

export class DevOptionError extends Error {}

export function devUsage(): string {
  const lines = [
    'Usage: npm start [-- OPTIONS AND CLUSTERDNS FLAGS]',
    '',
    'Builds dist/, starts a sandbox Kubernetes API server with examples/cluster.yaml and clusterdns',
    'with examples/Corefile.dev, all on 127.0.0.1. Options (or environment variables):',
  ];
  for (const p of PORT_NAMES) {
    lines.push(
      `  ${`${flagOf(p)} PORT`.padEnd(22)}${`(${envOf(p)})`.padEnd(28)}${p} port, default ${DEFAULT_PORTS[p]}`,
    );
  }
  lines.push(
    `  ${'--upstream ADDR'.padEnd(22)}${`(${UPSTREAM_ENV})`.padEnd(28)}forward's upstream (file or host:port), default ${DEFAULT_UPSTREAM}`,
  );
  lines.push(
    '',
    'A default port that is in use is replaced by a free one; a port given explicitly must be free.',
    'PORT 0 takes any free port. Other arguments go to clusterdns (e.g. -quiet).',
  );
  return lines.join('\n');
}

function parsePort(text: string, what: string): number {
  if (!/^\d{1,5}$/.test(text) || Number(text) > 65535)
    throw new DevOptionError(`${what}: "${text}" is not a port number (0-65535)`);
  return Number(text);
}

export function parseDevArgs(argv: readonly string[], env: Readonly<Record<string, string | undefined>>): DevOptions {
  const ports = {} as Record<PortName, PortRequest>;
  for (const p of PORT_NAMES) {
    const v = env[envOf(p)];
    ports[p] =
      v !== undefined && v !== ''
        ? { port: parsePort(v, envOf(p)), from: envOf(p) }
        : { port: DEFAULT_PORTS[p], from: 'default' };
  }
  const rest: string[] = [];
  let help = false;
  let upstream = env[UPSTREAM_ENV] || DEFAULT_UPSTREAM;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === '--help' || arg === '-help' || arg === '-h') {
      help = true;
      continue;
    }
    const u = /^--upstream(?:=(.*))?$/.exec(arg);
    if (u) {
      const v = u[1] ?? argv[++i];
      if (v === undefined || v.trim() === '')
        throw new DevOptionError('--upstream needs an address or a resolv.conf file');
      upstream = v;
      continue;
    }
    const m = /^--(dns|health|ready|metrics)-port(?:=(.*))?$/.exec(arg);
    if (!m) {
      rest.push(arg);
      continue;
    }
    const name = m[1] as PortName;
    let value = m[2];
    if (value === undefined) {
      if (i + 1 >= argv.length) throw new DevOptionError(`${arg} needs a port number`);
      value = argv[++i]!;
    }
    ports[name] = { port: parsePort(value, flagOf(name)), from: flagOf(name) };
  }
  const seen = new Map<number, PortName>();
  for (const p of PORT_NAMES) {
    const { port } = ports[p];
    if (port === 0) continue;
    const other = seen.get(port);
    if (other !== undefined) throw new DevOptionError(`${other} and ${p} cannot both use port ${port}`);
    seen.set(port, p);
  }
  return { help, upstream, ports, rest };
}

/** A socket held open while ports are chosen, so that two fallbacks never get the same port. */
type Held = { close(): Promise<void> };

function holdTcp(port: number): Promise<{ port: number; held: Held } | null> {
  return new Promise((resolve) => {
    const srv = net.createServer();
    srv.once('error', () => resolve(null));
    srv.listen({ port, host: DEV_HOST, exclusive: true }, () => {
      const actual = (srv.address() as net.AddressInfo).port;
      resolve({ port: actual, held: { close: () => new Promise<void>((r) => srv.close(() => r())) } });
    });
  });
}

function holdUdp(port: number): Promise<Held | null> {
  return new Promise((resolve) => {
    const s = dgram.createSocket('udp4');
    s.once('error', () => resolve(null));
    s.bind({ port, address: DEV_HOST, exclusive: true }, () =>
      resolve({ close: () => new Promise<void>((r) => s.close(() => r())) }),
    );
  });
}

/** Take `port` (0: any) on TCP, and on UDP too for DNS; null when it is in use. */
async function hold(port: number, udp: boolean): Promise<{ port: number; held: Held[] } | null> {
  for (let attempt = 0; attempt < (port === 0 ? 20 : 1); attempt++) {
    const tcp = await holdTcp(port);
    if (!tcp) return null;
    if (!udp) return { port: tcp.port, held: [tcp.held] };
    const u = await holdUdp(tcp.port);
    if (u) return { port: tcp.port, held: [tcp.held, u] };
    await tcp.held.close();
    if (port !== 0) return null;
  }
  return null;
}

export interface ChosenPorts {
  readonly ports: Record<PortName, number>;
  /** One line per default port that was in use and replaced. */
  readonly notes: string[];
}

/**
 * Check every requested port and replace busy defaults by free ports. Throws DevOptionError naming
 * the flag or variable when an explicitly requested port is in use.
 */
export async function choosePorts(requests: Readonly<Record<PortName, PortRequest>>): Promise<ChosenPorts> {
  const held: Held[] = [];
  const ports = {} as Record<PortName, number>;
  const notes: string[] = [];
  try {
    for (const p of PORT_NAMES) {
      const req = requests[p];
      const udp = p === 'dns';
      let got = await hold(req.port, udp);
      if (!got && req.from === 'default') {
        got = await hold(0, udp);
        if (got)
          notes.push(
            `port ${req.port} (${p}) is in use on ${DEV_HOST}: using ${got.port} instead (set ${flagOf(p)} or ${envOf(p)} to choose)`,
          );
      }
      if (!got) {
        const by = req.from === 'default' ? 'no free port found' : `asked for by ${req.from}`;
        throw new DevOptionError(
          `port ${req.port} (${p}${udp ? ', UDP and TCP' : ''}) is in use on ${DEV_HOST} (${by}); choose another, or 0 for any free port`,
        );
      }
      held.push(...got.held);
      ports[p] = got.port;
    }
  } finally {
    await Promise.all(held.map((h) => h.close()));
  }
  return { ports, notes };
}
