/**
 * A query thread (docs/multicore.md): the same configuration as the main thread, its own chain,
 * caches and metrics registry, its own sockets on the main thread's ports (SO_REUSEPORT), and the
 * Kubernetes index as a copy fed by the main thread. No HTTP side listeners (health, ready and
 * /metrics are the main thread's), no reloads of its own: the main thread sends every reload.
 *
 * Log lines of its start, reloads and shutdown are dropped (the main thread prints the same
 * ones once); lines written while serving (log, errors, forward health) go out as usual, and
 * lines about a query (log, errors) go out even during a start or a reload, while the sockets
 * serve queries through the previous chain (docs/multicore.md §6).
 */
import { parentPort, workerData } from 'node:worker_threads';
import { checkLogFormat, setLogFormat, setLogSink, writeStdout } from '../log.js';
import { buildInfo } from '../metrics/dns.js';
import { registry, type MetricsJson } from '../metrics/registry.js';
import { REVISION, VERSION } from '../version.js';
import type { ConfigSource } from './instance.js';
import { DEFAULT_TCP_LIMITS } from './listener.js';
import { ReplicaClient } from './replication.js';
import { describeErrors, Server } from './server.js';
import { registerHeapLimit } from './thread-heap.js';
import { parseThreadData, parseToThread, type FromThread } from './threads-protocol.js';

async function run(): Promise<void> {
  const port = parentPort!;
  const data = parseThreadData(workerData);
  const send = (m: FromThread): void => port.postMessage(m);
  setLogFormat(checkLogFormat(data.flags.logFormat));
  let muted = true;
  setLogSink((line, aboutQuery) => {
    if (!muted || aboutQuery) writeStdout(`${line}\n`);
  });
  let source: ConfigSource = data.source;
  let ports: Readonly<Record<string, number>> = data.ports;
  const replica = new ReplicaClient(port);
  const tcpLimits = {
    ...DEFAULT_TCP_LIMITS,
    maxConnections: data.flags.tcpMaxConns,
    maxConnectionsPerSource: data.flags.tcpMaxConnsPerSource,
  };
  const server = new Server({
    dnsPort: data.flags.dnsPort,
    loadSource: () => Promise.resolve(source),
    quiet: true,
    tcpLimits,
    reusePort: true,
    listenPort: (name) => ports[name],
    replication: replica,
    follower: true,
  });
  buildInfo.labels(VERSION, REVISION, process.version).set(1);
  registerHeapLimit(data.index);
  // A reload sent while this thread still starts runs once the start is over.
  let reloads: Promise<unknown> = Promise.resolve();
  // A message that fails its check throws here: the thread ends and the pool replaces it (a new
  // thread starts from a fresh snapshot of every index).
  port.on('message', (raw: unknown) => {
    const m = parseToThread(raw);
    switch (m.t) {
      case 'feed':
      case 'res':
        replica.handle(m);
        return;
      case 'reload':
        reloads = reloads.then(async () => {
          source = m.source;
          ports = m.ports;
          muted = true;
          const e = await server.reloadWithError('main thread');
          muted = false;
          send({ t: 'reloaded', id: m.id, error: e ? describeErrors(e).join('; ') : null });
        });
        return;
      case 'metrics':
        void (registry.getMetricsAsJSON() as Promise<MetricsJson>).then((d) =>
          send({ t: 'metrics', id: m.id, data: d }),
        );
        return;
      case 'shutdown':
        muted = true;
        void server.shutdown().then(
          (code) => send({ t: 'stopped', code }),
          () => send({ t: 'stopped', code: 3 }),
        );
        return;
    }
  });
  const starting = server.start();
  reloads = starting.catch(() => undefined);
  try {
    await starting;
  } catch (e) {
    send({ t: 'failed', error: describeErrors(e).join('; ') });
    return;
  }
  muted = false;
  send({ t: 'started' });
}

void run();
