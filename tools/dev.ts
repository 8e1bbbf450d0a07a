/**
 * `npm start` (run by tools/start.mjs once dist/ is built): clusterdns with the kubeadm-style
 * Corefile in examples/Corefile.dev, against a local sandbox API server loaded with
 * examples/cluster.yaml, all on 127.0.0.1. No cluster needed. Ports come from flags or the
 * environment (tools/dev-options.ts); when it is up, it prints where DNS, health, ready and
 * metrics listen and three `dig` commands to try.
 */
import { relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startSandbox } from '../sandbox/server.js';
import { main } from '../src/main.js';
import {
  choosePorts,
  DEV_HOST,
  devUsage,
  DevOptionError,
  envOf,
  parseDevArgs,
  PORT_NAMES,
  UPSTREAM_ENV,
  type ChosenPorts,
  type DevOptions,
} from './dev-options.js';

const root = resolve(fileURLToPath(import.meta.url), '../../..');
const corefile = resolve(root, 'examples/Corefile.dev');
const clusterFile = resolve(root, 'examples/cluster.yaml');
const say = (line: string) => process.stdout.write(`${line}\n`);

let opts: DevOptions;
let chosen: ChosenPorts;
try {
  opts = parseDevArgs(process.argv.slice(2), process.env);
  if (opts.help) {
    say(devUsage());
    process.exit(0);
  }
  chosen = await choosePorts(opts.ports);
} catch (e) {
  if (!(e instanceof DevOptionError)) throw e;
  process.stderr.write(`npm start: ${e.message}\n`);
  process.exit(2);
}
for (const note of chosen.notes) say(`npm start: ${note}`);

say(`npm start: starting the sandbox Kubernetes API server with ${relative(root, clusterFile)}`);
const sandbox = await startSandbox({ files: [clusterFile] });
// examples/Corefile.dev reads these ({$SANDBOX_URL}, {$CLUSTERDNS_DNS_PORT}, ...); a reload
// (edit the file; the reload plugin checks every 30 s) sees the same values.
process.env.SANDBOX_URL = sandbox.url;
for (const p of PORT_NAMES) process.env[envOf(p)] = String(chosen.ports[p]);
process.env[UPSTREAM_ENV] = opts.upstream;

say(`npm start: starting clusterdns with ${relative(root, corefile)}`);
await main(['-conf', corefile, ...opts.rest]);

const { dns, health, ready, metrics } = chosen.ports;
const dig = `dig @${DEV_HOST} -p ${dns}`;
say(
  [
    '',
    `clusterdns is serving the sandbox cluster (${relative(root, clusterFile)}):`,
    `  DNS       ${DEV_HOST}:${dns} (UDP and TCP)`,
    `  health    http://${DEV_HOST}:${health}/health`,
    `  ready     http://${DEV_HOST}:${ready}/ready`,
    `  metrics   http://${DEV_HOST}:${metrics}/metrics`,
    `  sandbox Kubernetes API  ${sandbox.url}`,
    `  other names are forwarded to ${opts.upstream}`,
    'Try:',
    `  ${dig} kubernetes.default.svc.cluster.local`,
    `  ${dig} -x 10.96.0.10`,
    `  ${dig} _https._tcp.kubernetes.default.svc.cluster.local SRV`,
    `Ctrl-C stops. Edit ${relative(root, corefile)} and it reloads within 30 s.`,
    '',
  ].join('\n'),
);
