/**
 * DNS load from pods for the rollout tests (test/cluster/rollout.test.ts): client pods running
 * `dnsload` (scripts/cluster/images/dnsload.c, in the client-glibc image) against one Service IP,
 * and the arithmetic over their logs. dnsload prints, per Unix second, the queries sent in that
 * second once every one of them is settled, and one line per failed query with its send time, so
 * any window of whole seconds is counted exactly, whatever is still in flight.
 */
import { waitFor, anyError } from '../helpers/wait.js';
import { type ClusterEnv, kubectl } from './cluster.js';

/** One second of one client: the queries sent in it and what became of them. */
export interface Second {
  readonly sent: number;
  readonly answered: number;
  readonly failed: number;
  readonly late: number;
}

export interface ClientLog {
  /** Unix second → counts (only seconds whose queries are all settled). */
  readonly seconds: Map<number, Second>;
  /** Send times (Unix ms) and reasons of the failed queries. */
  readonly failures: { readonly ms: number; readonly reason: string }[];
}

export interface Counts {
  sent: number;
  answered: number;
  failed: number;
  late: number;
  /** Failure reasons and how often each occurred. */
  readonly reasons: Record<string, number>;
  /** First and last failed send time (Unix ms), or null without failures. */
  firstFailureMs: number | null;
  lastFailureMs: number | null;
}

export function parseClientLog(text: string): ClientLog {
  const seconds = new Map<number, Second>();
  const failures: { ms: number; reason: string }[] = [];
  for (const line of text.split('\n')) {
    const sec = /^sec (\d+) sent (\d+) answered (\d+) failed (\d+) late (\d+)$/.exec(line);
    if (sec) {
      seconds.set(Number(sec[1]), {
        sent: Number(sec[2]),
        answered: Number(sec[3]),
        failed: Number(sec[4]),
        late: Number(sec[5]),
      });
      continue;
    }
    const fail = /^fail (\d+) (\S+)$/.exec(line);
    if (fail) failures.push({ ms: Number(fail[1]), reason: fail[2] ?? '' });
  }
  return { seconds, failures };
}

/** The counts of the queries sent in the Unix seconds [fromSec, toSec) by all clients. */
export function countWindow(logs: readonly ClientLog[], fromSec: number, toSec: number): Counts {
  const c: Counts = {
    sent: 0,
    answered: 0,
    failed: 0,
    late: 0,
    reasons: {},
    firstFailureMs: null,
    lastFailureMs: null,
  };
  for (const log of logs) {
    for (const [s, v] of log.seconds) {
      if (s < fromSec || s >= toSec) continue;
      c.sent += v.sent;
      c.answered += v.answered;
      c.failed += v.failed;
      c.late += v.late;
    }
    for (const f of log.failures) {
      const s = Math.floor(f.ms / 1000);
      if (s < fromSec || s >= toSec) continue;
      c.reasons[f.reason] = (c.reasons[f.reason] ?? 0) + 1;
      c.firstFailureMs = c.firstFailureMs === null ? f.ms : Math.min(c.firstFailureMs, f.ms);
      c.lastFailureMs = c.lastFailureMs === null ? f.ms : Math.max(c.lastFailureMs, f.ms);
    }
  }
  return c;
}

/** Three (or `count`) dnsload pods in `namespace`, `totalRate` queries per second among them. */
export class LoadClients {
  readonly pods: string[];

  constructor(
    private readonly env: ClusterEnv,
    readonly namespace: string,
    readonly prefix: string,
    readonly server: string,
    readonly totalRate: number,
    readonly name: string,
    count = 3,
  ) {
    this.pods = Array.from({ length: count }, (_, i) => `${prefix}-${i}`);
  }

  manifest(): string {
    const rate = this.totalRate / this.pods.length;
    return this.pods
      .map(
        (pod) => `apiVersion: v1
kind: Pod
metadata:
  name: ${pod}
  namespace: ${this.namespace}
  labels: {role: dnsload, load: ${this.prefix}}
spec:
  terminationGracePeriodSeconds: 10
  restartPolicy: Never
  containers:
  - name: c
    image: ${this.env.IMAGE_CLIENT_GLIBC}
    imagePullPolicy: Never
    # CPU shares: a BestEffort pod gets the smallest weight, and on a busy node the client would
    # then skip sends (counted as late) rather than offer the steady rate.
    resources: {requests: {cpu: 200m, memory: 16Mi}}
    command: [dnsload, "${this.server}", "${rate}", "${this.name}", "2000"]
`,
      )
      .join('---\n');
  }

  /** Create the pods and wait until each has printed its first settled second. */
  async start(): Promise<void> {
    await kubectl(this.env, ['apply', '-f', '-'], this.manifest());
    await this.settledThrough(Math.floor(Date.now() / 1000), 240_000);
  }

  async logs(): Promise<ClientLog[]> {
    const out: ClientLog[] = [];
    for (const pod of this.pods) out.push(parseClientLog(await kubectl(this.env, ['-n', this.namespace, 'logs', pod])));
    return out;
  }

  /**
   * Wait until every client has reported the second `sec` or a later one (the queries sent up to
   * `sec` are all settled), and return the logs. A client that stopped (its pod gone, dnsload
   * exited) fails the wait.
   */
  async settledThrough(sec: number, timeoutMs = 60_000): Promise<ClientLog[]> {
    let last: ClientLog[] = [];
    return waitFor(
      () =>
        `every load client (${this.pods.join(', ')}) to report the queries sent in second ${sec} as settled ` +
        `(latest reported: ${last.map((l) => Math.max(0, ...l.seconds.keys())).join(', ') || 'none'})`,
      async () => {
        last = await this.logs();
        return last.every((l) => Math.max(0, ...l.seconds.keys()) >= sec) ? last : null;
      },
      { timeoutMs, everyMs: 1000, retry: anyError },
    );
  }

  async stop(): Promise<void> {
    await kubectl(this.env, ['-n', this.namespace, 'delete', 'pod', '-l', `load=${this.prefix}`, '--wait=false']);
  }
}
