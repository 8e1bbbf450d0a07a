/**
 * CLI: run a sandbox API server.
 *
 *   node dist/sandbox/main.js --port 0 --file examples/cluster.yaml \
 *     [--synthetic-services N --synthetic-pods M --synthetic-namespaces K --seed S]
 *     [--host 127.0.0.1] [--bookmark-interval-ms MS] [--history-limit N] [--kubeconfig PATH]
 *
 * Prints one line `sandbox listening on http://HOST:PORT` on stdout once it serves.
 */
import * as fs from 'node:fs';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { type Sandbox, startSandbox, type SandboxOptions } from './server.js';

const USAGE = `usage: sandbox [--port N] [--host ADDR] [--file PATH]... [--synthetic-services N]
  [--synthetic-pods M] [--synthetic-namespaces K] [--headless-fraction F] [--seed S]
  [--bookmark-interval-ms MS] [--history-limit N] [--kubeconfig PATH]`;

function int(name: string, v: string | undefined): number | undefined {
  if (v === undefined) return undefined;
  if (!/^\d+$/.test(v)) throw new Error(`--${name}: not a non-negative integer: ${v}`);
  return Number(v);
}

function kubeconfigText(url: string): string {
  return [
    'apiVersion: v1',
    'kind: Config',
    'clusters:',
    '- name: sandbox',
    '  cluster:',
    `    server: ${url}`,
    // client-node refuses plain http unless TLS verification is off
    '    insecure-skip-tls-verify: true',
    'users:',
    '- name: anonymous',
    '  user: {}',
    'contexts:',
    '- name: sandbox',
    '  context:',
    '    cluster: sandbox',
    '    user: anonymous',
    'current-context: sandbox',
    '',
  ].join('\n');
}

/** Parse CLI arguments into sandbox options; undefined for --help. Throws on bad flags. */
export function parseCli(args: string[]): { opts: SandboxOptions; kubeconfig?: string } | undefined {
  const { values } = parseArgs({
    args,
    options: {
      port: { type: 'string', default: '0' },
      host: { type: 'string', default: '127.0.0.1' },
      file: { type: 'string', multiple: true },
      'synthetic-services': { type: 'string' },
      'synthetic-pods': { type: 'string' },
      'synthetic-namespaces': { type: 'string' },
      'headless-fraction': { type: 'string' },
      seed: { type: 'string' },
      'bookmark-interval-ms': { type: 'string' },
      'history-limit': { type: 'string' },
      kubeconfig: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
    strict: true,
  });
  if (values.help) return undefined;
  const opts: SandboxOptions = {
    port: int('port', values.port) ?? 0,
    host: values.host ?? '127.0.0.1',
    files: values.file ?? [],
  };
  const services = int('synthetic-services', values['synthetic-services']);
  const pods = int('synthetic-pods', values['synthetic-pods']);
  if (services !== undefined || pods !== undefined) {
    const hf = values['headless-fraction'];
    opts.synthetic = {
      services: services ?? Math.max(1, Math.ceil((pods ?? 0) / 15)),
      ...(pods !== undefined ? { pods } : {}),
      ...(values['synthetic-namespaces'] !== undefined
        ? { namespaces: int('synthetic-namespaces', values['synthetic-namespaces']) ?? 1 }
        : {}),
      ...(hf !== undefined ? { headlessFraction: Number(hf) } : {}),
      ...(values.seed !== undefined ? { seed: int('seed', values.seed) ?? 1 } : {}),
    };
  }
  const bm = int('bookmark-interval-ms', values['bookmark-interval-ms']);
  if (bm !== undefined) opts.bookmarkIntervalMs = bm;
  const hl = int('history-limit', values['history-limit']);
  if (hl !== undefined) opts.historyLimit = hl;
  return { opts, ...(values.kubeconfig !== undefined ? { kubeconfig: values.kubeconfig } : {}) };
}

/** Start a sandbox from CLI arguments and print the `sandbox listening on URL` line. */
export async function runCli(args: string[], out: (line: string) => void): Promise<Sandbox | undefined> {
  const parsed = parseCli(args);
  if (!parsed) {
    out(USAGE);
    return undefined;
  }
  const sb = await startSandbox(parsed.opts);
  if (parsed.kubeconfig) fs.writeFileSync(parsed.kubeconfig, kubeconfigText(sb.url));
  out(`sandbox listening on ${sb.url}`);
  return sb;
}

async function main(): Promise<void> {
  const sb = await runCli(process.argv.slice(2), (line) => process.stdout.write(`${line}\n`));
  if (!sb) return;
  const stop = (): void => {
    void sb.close().then(() => process.exit(0));
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
  // Benches that run the sandbox in another process force a relist of every client this way.
  process.on('SIGUSR2', () => {
    sb.restart();
    process.stdout.write(`sandbox restarted: history compacted at ${sb.resourceVersion()}, watches cut\n`);
  });
}

function isMainModule(): boolean {
  const script = process.argv[1];
  if (script === undefined) return false;
  try {
    return import.meta.url === pathToFileURL(fs.realpathSync(script)).href;
  } catch {
    return false;
  }
}

if (isMainModule()) {
  main().catch((e: unknown) => {
    process.stderr.write(`sandbox: ${e instanceof Error ? e.message : String(e)}\n${USAGE}\n`);
    process.exit(1);
  });
}
