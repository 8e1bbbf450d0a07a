/**
 * The fixture scenarios through the REAL system resolvers: glibc's getaddrinfo (`getent ahosts`)
 * and BIND's `dig +search`, each run in a network namespace set up like a pod.
 *
 * Per scenario a namespace `cdns-<random>` gets: `lo` up with 10.96.0.10/32 (the kube-dns Service
 * address) and the client pod's IP (10.244.2.8 for default/other, 10.244.2.7 for testns/client)
 * — the local route to 10.96.0.10 uses the pod IP as source, so the server sees the pod as client
 * — plus an IPv6 address so glibc's AI_ADDRCONFIG asks A and AAAA; /etc/netns/NS/ holds the pod's
 * resolv.conf (`ip netns exec` bind-mounts it over /etc/resolv.conf), a minimal hosts file and
 * `hosts: files dns`. Inside run the sandbox API server, dnsmasq as the "internet" upstream
 * (example.com → 192.0.2.1 / 2001:db8::1, everything else NXDOMAIN) and `bin/clusterdns` on :53.
 * Nothing leaves the namespace. The queries the server saw are read from its `log` lines on
 * stdout, delimited by marker queries so that no line is missed or borrowed.
 *
 * Needs root, `ip netns`, getent, dig, dnsmasq and a built dist/ (`npm run build`); otherwise the
 * suite is skipped and says why.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve as resolvePath } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { muslNodataError, podResolvConf, resolvConfText, type SentQuery } from './model.js';
import {
  canonical,
  clientQueries,
  expectedQueries,
  queriesFromLog,
  SCENARIOS,
  searched,
  sortedResult,
  typesFor,
  type Expectation,
  type Scenario,
} from './fixture.js';
import { compileC, hasTool, onStreamLines } from '../helpers/spawn.js';
import { rcodeFromName } from '../../src/dns/constants.js';
import { waitFor } from '../helpers/wait.js';

const ROOT = resolvePath(import.meta.dirname, '../..');
const BIN = join(ROOT, 'bin/clusterdns');
const SANDBOX = join(ROOT, 'dist/sandbox/main.js');
const FIXTURE = join(ROOT, 'examples/cluster.yaml');
const KUBE_DNS = '10.96.0.10';
const UPSTREAM_PORT = 5300;

/** The fixture's client pods: namespace → pod IP (examples/cluster.yaml). */
const POD_IPS: Readonly<Record<string, { v4: string; v6: string }>> = {
  default: { v4: '10.244.2.8', v6: 'fd00:10:244::8' },
  testns: { v4: '10.244.2.7', v6: 'fd00:10:244::7' },
};

function missingPrerequisite(): string | null {
  if (process.platform !== 'linux') return `not Linux (${process.platform})`;
  if (process.getuid?.() !== 0) return 'not running as root (network namespaces need CAP_SYS_ADMIN)';
  const ipn = spawnSync('ip', ['netns', 'list'], { encoding: 'utf8' });
  if (ipn.error || ipn.status !== 0) return `\`ip netns\` unavailable: ${ipn.error?.message ?? ipn.stderr.trim()}`;
  for (const tool of ['getent', 'dig', 'dnsmasq'])
    if (!hasTool(tool)) return `${tool} is not installed (apt-get install libc-bin dnsutils dnsmasq-base)`;
  if (!existsSync(SANDBOX) || !existsSync(join(ROOT, 'dist/src'))) return 'dist/ is not built (run `npm run build`)';
  if (existsSync('/var/run/nscd/socket'))
    return 'nscd is running: getent would ask it (outside the namespace) instead of the resolver';
  return null;
}

// A missing prerequisite fails these tests with its reason (.ci/run installs every one): never a skip.
const MISSING = missingPrerequisite();

/**
 * getaddrinfo(NAME, AF_UNSPEC, SOCK_STREAM, AI_CANONNAME — no AI_ADDRCONFIG, like most runtimes)
 * printing `canon NAME` and `addr IP` lines, or the EAI_* name and exit status 2. Built with the
 * system compiler (glibc) and, when musl-tools is installed, with musl-gcc -static (the resolver
 * of Alpine-based images).
 */
const GAI_C = `#define _GNU_SOURCE
#include <netdb.h>
#include <stdio.h>
#include <string.h>
#include <arpa/inet.h>
#include <sys/socket.h>
#include <netinet/in.h>
int main(int argc, char **argv) {
  struct addrinfo hints, *res, *p;
  if (argc != 2) return 1;
  memset(&hints, 0, sizeof hints);
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_CANONNAME;
  int rc = getaddrinfo(argv[1], NULL, &hints, &res);
  if (rc != 0) {
    const char *n = rc == EAI_NONAME ? "EAI_NONAME" : rc == EAI_AGAIN ? "EAI_AGAIN" : rc == EAI_FAIL ? "EAI_FAIL"
#ifdef EAI_NODATA
      : rc == EAI_NODATA ? "EAI_NODATA"
#endif
      : "EAI_OTHER";
    printf("%s\\n", n);
    return 2;
  }
  if (res->ai_canonname) printf("canon %s\\n", res->ai_canonname);
  for (p = res; p; p = p->ai_next) {
    char buf[64];
    const void *a = p->ai_family == AF_INET ? (const void *)&((struct sockaddr_in *)p->ai_addr)->sin_addr
                                            : (const void *)&((struct sockaddr_in6 *)p->ai_addr)->sin6_addr;
    inet_ntop(p->ai_family, a, buf, sizeof buf);
    printf("addr %s\\n", buf);
  }
  freeaddrinfo(res);
  return 0;
}
`;

const buildDirs: string[] = [];
afterAll(() => {
  for (const d of buildDirs) rmSync(d, { recursive: true, force: true });
});

/** Why the probe could not be built (a compiler missing), by label: the probe's tests then fail with it. */
const gaiMissing = new Map<string, string>();

/** Compile the getaddrinfo probe with `compiler`; null (and the reason kept in gaiMissing) when there is none. */
function buildGai(compiler: string, args: readonly string[], label: string, hint: string): string | null {
  if (MISSING) return null;
  if (!hasTool(compiler)) {
    gaiMissing.set(label, `${compiler} not found (${hint})`);
    return null;
  }
  const { binary, dir } = compileC(GAI_C, `gai-${label}`, compiler, args);
  buildDirs.push(dir);
  return binary;
}

function run(
  cmd: string,
  args: readonly string[],
  timeoutMs = 30_000,
): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(cmd, args, { encoding: 'utf8', timeout: timeoutMs });
  return { status: r.status, stdout: r.stdout ?? '', stderr: r.stderr ?? '' };
}

function must(cmd: string, args: readonly string[]): string {
  const r = run(cmd, args);
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} failed (${r.status}): ${r.stderr}`);
  return r.stdout;
}

/** A long-running process inside the namespace with its output lines. */
class Proc {
  readonly lines: string[] = [];
  private readonly waiters: { re: RegExp; from: number; resolve: (i: number) => void }[] = [];
  readonly exited: Promise<number | null>;
  constructor(
    readonly label: string,
    readonly proc: ChildProcess,
  ) {
    const onLine = (line: string): void => {
      if (line) this.add(line);
    };
    if (proc.stdout) onStreamLines(proc.stdout, onLine);
    if (proc.stderr) onStreamLines(proc.stderr, onLine);
    this.exited = new Promise((r) => proc.on('exit', (code) => r(code)));
  }

  private add(line: string): void {
    this.lines.push(line);
    for (const w of [...this.waiters]) {
      if (w.re.test(line) && this.lines.length - 1 >= w.from) {
        this.waiters.splice(this.waiters.indexOf(w), 1);
        w.resolve(this.lines.length - 1);
      }
    }
  }

  /** Index of the first line at or after `from` matching `re` (failure guard: `timeoutMs`). */
  waitFor(re: RegExp, from = 0, timeoutMs = 20_000): Promise<number> {
    const i = this.lines.findIndex((l, k) => k >= from && re.test(l));
    if (i >= 0) return Promise.resolve(i);
    return new Promise((resolve, reject) => {
      const t = setTimeout(
        () =>
          reject(
            new Error(
              `${this.label}: no line matching ${re} within ${timeoutMs} ms; output:\n${this.lines.join('\n')}`,
            ),
          ),
        timeoutMs,
      );
      this.waiters.push({
        re,
        from,
        resolve: (k) => {
          clearTimeout(t);
          resolve(k);
        },
      });
      void this.exited.then((code) => {
        clearTimeout(t);
        reject(new Error(`${this.label} exited (${code}) before ${re}; output:\n${this.lines.join('\n')}`));
      });
    });
  }

  async kill(): Promise<void> {
    if (this.proc.exitCode === null && this.proc.signalCode === null) this.proc.kill('SIGKILL');
    await this.exited;
  }
}

interface PodOptions {
  readonly ns: string;
  /** The Corefile given the sandbox URL and the upstream address. */
  readonly corefile: (apiUrl: string, upstream: string) => string;
}

/** One network namespace playing a pod of namespace `ns`, with the cluster DNS inside. */
class PodNetns {
  readonly name = `cdns-${randomBytes(4).toString('hex')}`;
  readonly etc: string;
  readonly procs: Proc[] = [];
  server: Proc | null = null;
  private markers = 0;

  constructor(readonly ns: string) {
    this.etc = `/etc/netns/${this.name}`;
  }

  exec(args: readonly string[]): { status: number | null; stdout: string; stderr: string } {
    return run('ip', ['netns', 'exec', this.name, ...args]);
  }

  private spawn(label: string, args: readonly string[]): Proc {
    const p = new Proc(
      label,
      spawn('ip', ['netns', 'exec', this.name, ...args], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] }),
    );
    this.procs.push(p);
    return p;
  }

  async start(o: PodOptions): Promise<void> {
    const ip = POD_IPS[o.ns];
    if (!ip) throw new Error(`no client pod in namespace ${o.ns}`);
    must('ip', ['netns', 'add', this.name]);
    must('ip', ['-n', this.name, 'link', 'set', 'lo', 'up']);
    must('ip', ['-n', this.name, 'addr', 'add', `${KUBE_DNS}/32`, 'dev', 'lo']);
    must('ip', ['-n', this.name, 'addr', 'add', `${ip.v4}/32`, 'dev', 'lo']);
    must('ip', ['-n', this.name, '-6', 'addr', 'add', `${ip.v6}/128`, 'dev', 'lo', 'nodad']);
    // Traffic to the Service address leaves from the pod IP, as it would from a real pod.
    must('ip', [
      '-n',
      this.name,
      'route',
      'replace',
      'local',
      KUBE_DNS,
      'dev',
      'lo',
      'table',
      'local',
      'proto',
      'kernel',
      'scope',
      'host',
      'src',
      ip.v4,
    ]);
    // And replies to the pod leave from the Service address — what kube-proxy's un-DNAT does for a
    // real pod. A server bound to the wildcard address (no `bind`, as in Corefile.example) lets the
    // kernel pick the source of its replies (Node's dgram has no IP_PKTINFO); without this route
    // they would come from 10.244.x.x and the resolver would drop them.
    must('ip', [
      '-n',
      this.name,
      'route',
      'replace',
      'local',
      ip.v4,
      'dev',
      'lo',
      'table',
      'local',
      'proto',
      'kernel',
      'scope',
      'host',
      'src',
      KUBE_DNS,
    ]);
    mkdirSync(this.etc, { recursive: true });
    writeFileSync(join(this.etc, 'resolv.conf'), resolvConfText(podResolvConf(o.ns)));
    writeFileSync(join(this.etc, 'hosts'), '127.0.0.1 localhost\n::1 localhost ip6-localhost\n');
    writeFileSync(join(this.etc, 'nsswitch.conf'), 'hosts: files dns\n');

    const sandbox = this.spawn('sandbox', [process.execPath, SANDBOX, '--port', '0', '--file', FIXTURE]);
    const urlLine = sandbox.lines[await sandbox.waitFor(/^sandbox listening on /)]!;
    const apiUrl = urlLine.replace('sandbox listening on ', '').trim();
    const dnsmasq = this.spawn('dnsmasq', [
      'dnsmasq',
      '--no-resolv',
      '--no-hosts',
      '--keep-in-foreground',
      '--log-queries',
      '--log-facility=-',
      '--pid-file=',
      '--user=root',
      `--port=${UPSTREAM_PORT}`,
      '--listen-address=127.0.0.1',
      '--bind-interfaces',
      '--address=/#/',
      '--address=/example.com/192.0.2.1',
      '--address=/example.com/2001:db8::1',
    ]);
    await dnsmasq.waitFor(/started, version/);
    const dir = join(tmpdir(), this.name);
    mkdirSync(dir, { recursive: true });
    const corefilePath = join(dir, 'Corefile');
    writeFileSync(corefilePath, o.corefile(apiUrl, `127.0.0.1:${UPSTREAM_PORT}`));
    this.server = this.spawn('clusterdns', [process.execPath, BIN, '-conf', corefilePath, '-dns.port', '53']);
    await this.server.waitFor(/^clusterdns-/);
    // Served and synced: the kubernetes Service name answers.
    const server = this.server;
    let dig = '';
    await waitFor(
      () => `clusterdns in ${this.name} to answer: ${dig}\n${server.lines.join('\n')}`,
      () => {
        const d = this.exec([
          'dig',
          '+tries=1',
          '+time=2',
          `@${KUBE_DNS}`,
          'kubernetes.default.svc.cluster.local.',
          'A',
        ]);
        dig = `${d.stdout}${d.stderr}`;
        return d.stdout.includes('status: NOERROR');
      },
      { everyMs: 250 },
    );
  }

  /**
   * Send a marker query and return the index of its log line: every earlier line was written before
   * it. dig retries (as a resolver would) so that one datagram lost on a loaded machine does not
   * fail the test; a retried marker's second line is left out of what `observe` returns. The
   * server writes a query's log line before it sends the reply (docs/multicore.md §6), so once
   * dig has its NXDOMAIN the line is in the pipe. A marker dig that got no reply at all is
   * reported (dig's own output, on stderr of the test run) and sent once more under a new name:
   * markers only delimit the log, the queries under test are checked by `observe`'s callers.
   */
  async mark(): Promise<number> {
    const unanswered: string[] = [];
    for (let attempt = 1; attempt <= 2; attempt++) {
      const name = `marker-${++this.markers}.${this.name}.invalid.`;
      const d = this.exec(['dig', '+tries=3', '+time=5', `@${KUBE_DNS}`, name, 'A']);
      const line = new RegExp(`"A IN ${name.replace(/\./g, '\\.')} `);
      if (d.stdout.includes('status: NXDOMAIN')) return this.server!.waitFor(line);
      const report = `dig ${name} in ${this.name}: exit ${d.status}\n${d.stdout}${d.stderr}`;
      unanswered.push(report);
      console.warn(`[netns] marker query without a reply, attempt ${attempt}: ${report}`);
    }
    throw new Error(
      `marker queries got no reply:\n${unanswered.join('\n')}\nclusterdns output:\n${this.server!.lines.join('\n')}`,
    );
  }

  /** Run `args` in the namespace and return its result and the queries the server saw meanwhile. */
  async observe(
    args: readonly string[],
  ): Promise<{ status: number | null; stdout: string; seen: SentQuery[]; lines: string[] }> {
    const start = await this.mark();
    const r = this.exec(args);
    const end = await this.mark();
    const marker = `.${this.name}.invalid. `;
    const lines = this.server!.lines.slice(start + 1, end).filter((l) => l.includes('"') && !l.includes(marker));
    return { status: r.status, stdout: r.stdout, seen: queriesFromLog(lines), lines };
  }

  async stop(): Promise<void> {
    for (const p of this.procs) await p.kill();
    run('ip', ['netns', 'del', this.name]);
    rmSync(this.etc, { recursive: true, force: true });
    rmSync(join(tmpdir(), this.name), { recursive: true, force: true });
  }
}

/** Addresses printed by `getent ahosts` (each appears once per socket type). */
function getentAddresses(out: string): string[] {
  const set = new Set<string>();
  for (const line of out.split('\n')) {
    const a = line.trim().split(/\s+/)[0];
    if (a) set.add(a);
  }
  return [...set].sort();
}

/** The final reply of `dig`: rcode, the question name, answer data (CNAMEs left out). */
function digResult(out: string): { rcode: number; name: string; data: string[] } {
  const status = /status: (\w+)/.exec(out)?.[1] ?? 'NONE';
  const name = /;; QUESTION SECTION:\n;(\S+)/.exec(out)?.[1] ?? '';
  const data: string[] = [];
  const ans = /;; ANSWER SECTION:\n([\s\S]*?)\n\n/.exec(out)?.[1] ?? '';
  for (const line of ans.split('\n')) {
    const f = line.trim().split(/\s+/);
    if (f.length < 5 || f[3] === 'CNAME') continue;
    data.push(f.slice(4).join(' '));
  }
  return { rcode: rcodeFromName(status) ?? -1, name: name.toLowerCase(), data: data.sort() };
}

const PLAIN_COREFILE = (apiUrl: string, upstream: string, extra = '', pods = 'insecure'): string => `.:53 {
    bind ${KUBE_DNS}
    log
${extra}    kubernetes cluster.local in-addr.arpa ip6.arpa {
        endpoint ${apiUrl}
        pods ${pods}
    }
    forward . ${upstream}
}
`;

/** Corefile.example (kubeadm's) with the API endpoint, the local upstream, and `log` to see the queries. */
function kubeadmCorefile(apiUrl: string, upstream: string): string {
  const text = readFileSync(join(ROOT, 'Corefile.example'), 'utf8');
  const out = text
    .replace(/(kubernetes cluster\.local in-addr\.arpa ip6\.arpa \{\n)/, `$1       endpoint ${apiUrl}\n`)
    .replace('forward . /etc/resolv.conf', `forward . ${upstream}`)
    .replace(/^(\s*)errors$/m, '$1errors\n$1log');
  if (!out.includes(`endpoint ${apiUrl}`) || !out.includes(`forward . ${upstream}`) || !/^\s*log$/m.test(out)) {
    throw new Error(`Corefile.example no longer has the expected shape:\n${text}`);
  }
  return out;
}

const pods: PodNetns[] = [];
afterEach(async () => {
  while (pods.length) await pods.pop()!.stop();
});

async function pod(ns: string, corefile: PodOptions['corefile']): Promise<PodNetns> {
  const p = new PodNetns(ns);
  pods.push(p);
  await p.start({ ns, corefile });
  return p;
}

async function checkGetent(p: PodNetns, s: Scenario, e: Expectation): Promise<void> {
  const r = await p.observe(['getent', 'ahosts', s.name]);
  expect(canonical(clientQueries(r.seen, s)), `queries seen by the server for getent ahosts ${s.name}`).toEqual(
    canonical(expectedQueries(e, ['A', 'AAAA'])),
  );
  // The server saw the client as the pod.
  const internal = s.alsoUpstream ?? [];
  for (const l of r.lines.filter((x) => !internal.some((n) => x.includes(` IN ${n} `))))
    expect(l).toContain(`] ${POD_IPS[s.ns]!.v4}:`);
  if ('addresses' in e.result) {
    expect(r.status).toBe(0);
    expect(getentAddresses(r.stdout)).toEqual([...e.result.addresses].sort());
  } else {
    // getent exits 2 whatever the EAI_* code; the code itself is checked in model.test.ts.
    expect(r.status).toBe(2);
    expect(r.stdout).toBe('');
  }
}

async function checkDig(p: PodNetns, s: Scenario, e: Expectation): Promise<void> {
  const types = typesFor(s, 'dig');
  const r = await p.observe(['dig', '+search', '+tries=1', '+time=5', '-t', types[0]!, s.name]);
  expect(canonical(clientQueries(r.seen, s)), `queries seen by the server for dig +search ${s.name}`).toEqual(
    canonical(expectedQueries(e, types)),
  );
  const got = digResult(r.stdout);
  expect(got.name).toBe(e.steps.at(-1));
  expect(sortedResult({ rcode: got.rcode, data: got.data })).toEqual(sortedResult(e.result));
}

describe('real resolvers in a pod network namespace', () => {
  beforeAll(() => {
    if (MISSING !== null) throw new Error(`the real-resolver tests in network namespaces cannot run here: ${MISSING}`);
  });
  it.each(SCENARIOS.map((s) => [s.title, s] as const))('%s', async (_t, s) => {
    const p = await pod(s.ns, (api, up) => PLAIN_COREFILE(api, up));
    const g = s.expect.glibc!;
    if (!s.types) await checkGetent(p, s, g);
    await checkDig(p, s, s.expect.dig!);
  });

  it("kubeadm's default Corefile shape (Corefile.example): cluster names, pod names, external and missing names", async () => {
    const p = await pod('default', kubeadmCorefile);
    for (const title of [
      'short name of a service in the own namespace',
      'external name',
      'a name that does not exist',
      'full name without trailing dot',
    ]) {
      const s = SCENARIOS.find((x) => x.title.startsWith(title))!;
      await checkGetent(p, s, s.expect.glibc!);
      await checkDig(p, s, s.expect.dig!);
    }
    const podName: Scenario = SCENARIOS.find((x) => x.name === '10-244-2-7.testns.pod')!;
    const fromDefault: Expectation = {
      steps: searched('10-244-2-7.testns.pod', 'default'),
      result: { addresses: ['10.244.2.7'] },
    };
    await checkGetent(p, { ...podName, ns: 'default' }, fromDefault);
  });

  it('autopath @kubernetes with pods verified: an external name costs one query per type instead of four', async () => {
    const p = await pod('default', (api, up) => PLAIN_COREFILE(api, up, '    autopath @kubernetes\n', 'verified'));
    const s: Scenario = SCENARIOS.find((x) => x.name === 'example.com')!;
    const one: Expectation = {
      steps: ['example.com.default.svc.cluster.local.'],
      result: { addresses: ['192.0.2.1', '2001:db8::1'] },
    };
    await checkGetent(p, s, one);
    const r = await p.observe(['getent', 'ahosts', 'example.com']);
    // glibc reports the CNAME target as the canonical name.
    expect(r.stdout.split('\n')[0]).toMatch(/^\S+\s+STREAM example\.com$/);
    const d = await p.observe(['dig', '+search', '+tries=1', '+time=5', 'example.com']);
    expect(canonical(d.seen)).toEqual(['example.com.default.svc.cluster.local. A']);
    expect(d.stdout).toMatch(/^example\.com\.default\.svc\.cluster\.local\.\s+\d+\s+IN\s+CNAME\s+example\.com\.$/m);
    expect(digResult(d.stdout)).toEqual({
      rcode: 0,
      name: 'example.com.default.svc.cluster.local.',
      data: ['192.0.2.1'],
    });
    // A cluster name from another namespace: one step instead of two.
    const svc = await p.observe(['getent', 'ahosts', 'svc1.testns']);
    expect(canonical(svc.seen)).toEqual([
      'svc1.testns.default.svc.cluster.local. A',
      'svc1.testns.default.svc.cluster.local. AAAA',
    ]);
    expect(getentAddresses(svc.stdout)).toEqual(['10.96.0.11']);
  });
});

/** `gai` probe output: addresses (sorted, unique) or the EAI_* error. */
function gaiResult(status: number | null, out: string): Expectation['result'] {
  if (status === 2) return { error: out.trim() };
  const addrs = new Set(
    out
      .split('\n')
      .filter((l) => l.startsWith('addr '))
      .map((l) => l.slice(5)),
  );
  return { addresses: [...addrs].sort() };
}

const GAI_GLIBC = buildGai('cc', ['-O1'], 'glibc', 'apt-get install gcc');
const GAI_MUSL = buildGai('musl-gcc', ['-static', '-O1'], 'musl', 'apt-get install musl-tools');

/** The installed musl's version (its dynamic loader prints it), or null. */
function muslVersion(): string | null {
  const loader = ['/lib/ld-musl-x86_64.so.1', '/lib/ld-musl-aarch64.so.1'].find((f) => existsSync(f));
  if (!loader) return null;
  return /Version (\d+\.\d+\.\d+)/.exec(run(loader, []).stderr)?.[1] ?? null;
}

/** The expectation for the resolver actually installed (musl's NODATA error changed in 1.2.4). */
function forInstalled(resolver: 'glibc' | 'musl', r: Expectation['result']): Expectation['result'] {
  const v = resolver === 'musl' ? muslVersion() : null;
  if (v && 'error' in r && r.error === 'EAI_NODATA') return { error: muslNodataError(v) };
  return r;
}

for (const [resolver, binary] of [
  ['glibc', GAI_GLIBC],
  ['musl', GAI_MUSL],
] as const) {
  describe(`${resolver} getaddrinfo (AF_UNSPEC, no AI_ADDRCONFIG) in a pod network namespace`, () => {
    const byNs = new Map<string, PodNetns>();
    beforeAll(async () => {
      if (MISSING !== null)
        throw new Error(`the real-resolver tests in network namespaces cannot run here: ${MISSING}`);
      if (binary === null)
        throw new Error(
          `the ${resolver} getaddrinfo probe could not be built: ${gaiMissing.get(resolver) ?? 'unknown reason'}`,
        );
      for (const ns of ['default', 'testns']) {
        const p = new PodNetns(ns);
        byNs.set(ns, p);
        await p.start({ ns, corefile: (api, up) => PLAIN_COREFILE(api, up) });
      }
    });
    afterAll(async () => {
      for (const p of byNs.values()) await p.stop();
    });

    it.each(SCENARIOS.filter((s) => !s.types).map((s) => [s.title, s] as const))('%s', async (_t, s) => {
      const e = s.expect[resolver]!;
      const r = await byNs.get(s.ns)!.observe([binary!, s.name]);
      expect(
        canonical(clientQueries(r.seen, s)),
        `queries seen by the server for ${resolver} getaddrinfo(${s.name})`,
      ).toEqual(canonical(expectedQueries(e, ['A', 'AAAA'])));
      expect(gaiResult(r.status, r.stdout)).toEqual(sortedResult(forInstalled(resolver, e.result)));
    });
  });
}
