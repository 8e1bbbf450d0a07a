/**
 * The plugin's API connections have TCP keepalive on, with the first probe after
 * KEEPALIVE_INITIAL_DELAY_MS (client.ts, armSocket). Checked from outside the process's JS, for
 * the index's connections to the sandbox API server:
 * - the kernel's socket table, as `ss -tno` (iproute2) shows it: `timer:(keepalive,…)`;
 * - the socket options themselves (SO_KEEPALIVE, TCP_KEEPIDLE), read by a small C program that
 *   takes a duplicate of each socket from this process with pidfd_getfd(2) (root, Linux ≥ 5.6).
 * The second is what tells armSocket's 15 s from the 1 s keepalive Node's http.Agent turns on by
 * itself (`keepAliveMsecs`): without armSocket both `ss` and SO_KEEPALIVE still say "on".
 * A control connection opened without keepalive must show neither.
 */
import { spawnSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import * as net from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startIndex, startTestSandbox, type Cleanups } from '../../test/helpers/kubeindex.js';
import { waitFor } from '../../test/helpers/wait.js';
import { compileC } from '../../test/helpers/spawn.js';
import { KEEPALIVE_INITIAL_DELAY_MS } from './client.js';
import { fixtureObjects } from './testdata.js';

const cleanups: Cleanups = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

/** `sockopts PID PEER_PORT`: one line per TCP socket of PID connected to PEER_PORT. */
const SOCKOPTS_C = `#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_pidfd_getfd
#define SYS_pidfd_getfd 438
#endif
static int port_of(const struct sockaddr_storage *s) {
  if (s->ss_family == AF_INET) return ntohs(((const struct sockaddr_in *)s)->sin_port);
  if (s->ss_family == AF_INET6) return ntohs(((const struct sockaddr_in6 *)s)->sin6_port);
  return -1;
}
static int opt(int fd, int level, int name) {
  int v = -1; socklen_t len = sizeof v;
  return getsockopt(fd, level, name, &v, &len) == 0 ? v : -1;
}
int main(int argc, char **argv) {
  if (argc != 3) { fprintf(stderr, "usage: sockopts PID PEER_PORT\\n"); return 2; }
  int pid = atoi(argv[1]), peer = atoi(argv[2]);
  int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
  if (pidfd < 0) { perror("pidfd_open"); return 1; }
  char dir[64];
  snprintf(dir, sizeof dir, "/proc/%d/fd", pid);
  DIR *d = opendir(dir);
  if (!d) { perror(dir); return 1; }
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.') continue;
    char p[300], link[64];
    snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
    ssize_t n = readlink(p, link, sizeof link - 1);
    if (n < 0) continue;
    link[n] = 0;
    if (strncmp(link, "socket:", 7) != 0) continue;
    int fd = (int)syscall(SYS_pidfd_getfd, pidfd, atoi(e->d_name), 0);
    if (fd < 0) {
      if (errno == EBADF) continue; /* closed meanwhile */
      perror("pidfd_getfd");
      return 1;
    }
    struct sockaddr_storage local, remote;
    socklen_t ll = sizeof local, rl = sizeof remote;
    if (opt(fd, SOL_SOCKET, SO_TYPE) == SOCK_STREAM && getpeername(fd, (struct sockaddr *)&remote, &rl) == 0
        && port_of(&remote) == peer && getsockname(fd, (struct sockaddr *)&local, &ll) == 0) {
      printf("%d %d %d\\n", port_of(&local), opt(fd, SOL_SOCKET, SO_KEEPALIVE), opt(fd, IPPROTO_TCP, TCP_KEEPIDLE));
    }
    close(fd);
  }
  return 0;
}
`;

let dir = '';
let sockopts = '';
let buildError: string | null = null;
beforeAll(() => {
  try {
    ({ binary: sockopts, dir } = compileC(SOCKOPTS_C, 'sockopts', 'cc', ['-O1']));
  } catch (e) {
    buildError = `cannot build the pidfd_getfd helper (apt-get install gcc): ${(e as Error).message}`;
  }
});
afterAll(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
});

interface Opts {
  keepalive: number;
  idleSeconds: number;
}

/** SO_KEEPALIVE and TCP_KEEPIDLE of this process's TCP sockets connected to `port`, by local port. */
function socketOptions(port: number): Map<number, Opts> {
  if (buildError) throw new Error(buildError);
  const r = spawnSync(sockopts, [String(process.pid), String(port)], { encoding: 'utf8' });
  if (r.error || r.status !== 0)
    throw new Error(`sockopts failed (needs root and Linux ≥ 5.6 for pidfd_getfd): ${r.error?.message ?? r.stderr}`);
  const out = new Map<number, Opts>();
  for (const line of r.stdout.split('\n').filter((l) => l !== '')) {
    const [local, keepalive, idle] = line.split(' ').map(Number);
    out.set(local!, { keepalive: keepalive!, idleSeconds: idle! });
  }
  return out;
}

/** Timer kind (`keepalive`, `on`, …) of each established TCP connection to `port`, by local port, as `ss -tno` shows it. */
function ssTimers(port: number): Map<number, string | null> {
  const r = spawnSync('ss', ['-tnoH', 'state', 'established', `( dport = :${port} )`], { encoding: 'utf8' });
  if (r.error) throw new Error(`cannot run ss (iproute2): ${r.error.message}`);
  if (r.status !== 0) throw new Error(`ss exited ${r.status}: ${r.stderr}`);
  const out = new Map<number, string | null>();
  for (const line of r.stdout.split('\n').filter((l) => l.trim() !== '')) {
    // Recv-Q Send-Q Local:Port Peer:Port [timer:(kind,left,retries)]
    const local = line.trim().split(/\s+/)[2] ?? '';
    out.set(Number(local.slice(local.lastIndexOf(':') + 1)), /timer:\((\w+),/.exec(line)?.[1] ?? null);
  }
  return out;
}

describe('API connections', () => {
  it(`have TCP keepalive on, first probe after ${KEEPALIVE_INITIAL_DELAY_MS / 1000} s (ss: timer:(keepalive,…); TCP_KEEPIDLE)`, async () => {
    const sb = await startTestSandbox(cleanups, fixtureObjects());
    const plain = net.connect(sb.port, '127.0.0.1');
    cleanups.push(() => {
      plain.destroy();
    });
    await new Promise<void>((resolve, reject) => plain.once('connect', resolve).once('error', reject));
    const control = plain.localPort!;

    const ix = startIndex(cleanups, sb.url);
    await waitFor('synced', () => ix.synced());
    await waitFor('three watches open', () => sb.watchCount() === 3);

    // Poll with a generous bound: a connection with data unacknowledged at that instant shows its
    // retransmit timer (`on`) instead, and a pooled request may be opening a new connection.
    let timers = new Map<number, string | null>();
    let opts = new Map<number, Opts>();
    const ok = (): boolean => {
      timers = ssTimers(sb.port);
      opts = socketOptions(sb.port);
      const client = [...timers.keys()].filter((p) => p !== control);
      return client.length >= 3 && client.every((p) => timers.get(p) === 'keepalive' && opts.has(p));
    };
    await waitFor('every API connection with a keepalive timer', ok, { timeoutMs: 30_000 }).catch((e: unknown) => {
      throw new Error(`${String(e)}; ss: ${JSON.stringify([...timers])}; options: ${JSON.stringify([...opts])}`);
    });
    for (const [port, o] of opts) {
      if (port === control) continue;
      expect(o, `connection from port ${port}`).toEqual({
        keepalive: 1,
        idleSeconds: KEEPALIVE_INITIAL_DELAY_MS / 1000,
      });
    }
    // The control connection: no keepalive in either view.
    expect(timers.get(control)).toBeNull();
    expect(opts.get(control)?.keepalive).toBe(0);
  }, 60_000);
});
