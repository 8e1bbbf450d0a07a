/**
 * `clusterdns node-cache` on a node of its own: a network namespace `cdns-nc-<random>` per test
 * (the node), with `bin/clusterdns node-cache` inside on 169.254.20.10 (docs/node-cache.md). Each
 * rules backend is checked the same way: the rules are there once the server listens, put back
 * when deleted, gone after exit (kept with -skipteardown); the interface holds the local IP
 * (dummy, else ifb, else lo); queries to the local IP are answered and leave no conntrack entry.
 * Then an upgrade: a second instance on the same address, the first stopped while a client sends
 * about 300 queries a second: no query fails and the rules stay.
 *
 * Needs root, `ip netns`, nft, iptables-nft, iptables-legacy, conntrack, dig and a built dist/
 * (scripts/install-test-packages.sh installs them); a missing one fails the tests with its name.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { BIN, watchLines, type LineWatch } from '../helpers/spawn.js';
import { waitFor } from '../helpers/wait.js';

const ROOT = resolve(import.meta.dirname, '../..');
const LOAD = join(ROOT, 'test/fixtures/node-cache/load.mjs');
const LOCAL_IP = '169.254.20.10';
const TABLE = 'clusterdns-nodelocaldns';
const SKIP_COMMENT = 'NodeLocal DNS Cache: skip conntrack';

const BASE = `.:53 {
    errors
    cache 30
    bind __PILLAR__LOCAL__DNS__ __PILLAR__DNS__SERVER__
    template IN A example.org {
      answer "{{ .Name }} 60 IN A 192.0.2.1"
    }
    health __PILLAR__LOCAL__DNS__:8080
}
`;

function missingPrerequisite(): string | null {
  if (process.getuid?.() !== 0) return 'not running as root (network namespaces need CAP_SYS_ADMIN)';
  for (const [tool, args] of [
    ['ip', ['netns', 'list']],
    ['nft', ['--version']],
    ['iptables-nft', ['--version']],
    ['iptables-legacy', ['--version']],
    ['conntrack', ['--version']],
    ['dig', ['-v']],
  ] as const) {
    const r = spawnSync(tool, args);
    if (r.error || r.status !== 0)
      return `${tool} is not usable (apt-get install iproute2 nftables iptables conntrack dnsutils)`;
  }
  if (!existsSync(join(ROOT, 'dist/src/nodecache/main.js'))) return 'dist/ is not built (run `npm run build`)';
  return null;
}
const MISSING = missingPrerequisite();

function sh(ns: string, cmd: string, args: readonly string[], input?: string): { status: number | null; out: string } {
  const r = spawnSync('ip', ['netns', 'exec', ns, cmd, ...args], { encoding: 'utf8', input, timeout: 30_000 });
  return { status: r.status, out: `${r.stdout ?? ''}${r.stderr ?? ''}` };
}

interface Node {
  ns: string;
  dir: string;
  procs: ChildProcess[];
}
const nodes: Node[] = [];

function newNode(): Node {
  const ns = `cdns-nc-${randomBytes(4).toString('hex')}`;
  const add = spawnSync('ip', ['netns', 'add', ns], { encoding: 'utf8' });
  if (add.status !== 0) throw new Error(`ip netns add ${ns}: ${add.stderr}`);
  sh(ns, 'ip', ['link', 'set', 'lo', 'up']);
  const dir = mkdtempSync(join(tmpdir(), 'clusterdns-nc-'));
  writeFileSync(join(dir, 'Corefile.base'), BASE);
  const node = { ns, dir, procs: [] };
  nodes.push(node);
  return node;
}

afterEach(() => {
  for (const n of nodes.splice(0)) {
    for (const p of n.procs) p.kill('SIGKILL');
    spawnSync('ip', ['netns', 'delete', n.ns]);
    rmSync(n.dir, { recursive: true, force: true });
  }
});

interface Instance extends LineWatch {
  proc: ChildProcess;
}

function startNodeCache(node: Node, name: string, args: readonly string[]): Instance {
  const proc = spawn(
    'ip',
    [
      'netns',
      'exec',
      node.ns,
      process.execPath,
      BIN,
      'node-cache',
      '-localip',
      LOCAL_IP,
      '-basecorefile',
      join(node.dir, 'Corefile.base'),
      '-conf',
      join(node.dir, `Corefile.${name}`),
      '-metrics-listen-address',
      '127.0.0.1:0',
      '-kubeapi',
      'http://127.0.0.1:1',
      '-syncinterval',
      '1',
      ...args,
    ],
    { stdio: ['ignore', 'pipe', 'pipe'], cwd: node.dir },
  );
  node.procs.push(proc);
  return { proc, ...watchLines(proc, { label: `node-cache ${name}`, timeoutMs: 60_000 }) };
}

function dig(node: Node): string {
  return sh(node.ns, 'dig', ['+short', '+tries=1', '+time=3', `@${LOCAL_IP}`, 'example.org', 'A']).out.trim();
}

/** The local IP's address: on the nodelocaldns link (dummy or ifb) or on lo. */
function addressHolder(node: Node): string | null {
  const out = sh(node.ns, 'ip', ['-o', 'addr', 'show']).out;
  const line = out.split('\n').find((l) => l.includes(` ${LOCAL_IP}/32 `));
  return line ? line.split(/\s+/)[1]! : null;
}

/** Which backends' rules are present, by counting the comment in each one's listing. */
function ruleCount(node: Node, backend: string): number {
  if (backend === 'nftables') {
    const r = sh(node.ns, 'nft', ['list', 'table', 'inet', TABLE]);
    return r.status === 0 ? r.out.split('\n').filter((l) => l.includes('NodeLocal DNS Cache')).length : 0;
  }
  return sh(node.ns, `${backend === 'iptables-nft' ? 'iptables-nft' : 'iptables-legacy'}-save`, [])
    .out.split('\n')
    .filter((l) => l.includes('NodeLocal DNS Cache')).length;
}

/** Delete one rule (or the whole nft table), as another program might. */
function deleteSome(node: Node, backend: string): void {
  if (backend === 'nftables') {
    expect(sh(node.ns, 'nft', ['delete', 'table', 'inet', TABLE]).status).toBe(0);
    return;
  }
  const r = sh(node.ns, backend, [
    '-t',
    'raw',
    '-D',
    'PREROUTING',
    '-p',
    'udp',
    '-d',
    LOCAL_IP,
    '--dport',
    '53',
    '-j',
    'NOTRACK',
    '-m',
    'comment',
    '--comment',
    SKIP_COMMENT,
  ]);
  expect(r.status, r.out).toBe(0);
}

const RULES_PER_IP = 12;

describe.each(['nftables', 'iptables-nft', 'iptables-legacy'])('node-cache with -rules %s', (backend) => {
  it('installs the rules once it listens, puts them back, answers without conntrack, removes everything on exit', async () => {
    expect(MISSING).toBeNull();
    const node = newNode();
    // Conntrack on in the namespace (a rule that uses it), and a control flow that it tracks.
    const probe = sh(
      node.ns,
      'nft',
      ['-f', '-'],
      'table inet probe {\n\tchain out {\n\t\ttype filter hook output priority 0;\n\t\tct state new counter\n\t}\n}\n',
    );
    expect(probe.status, probe.out).toBe(0);
    const nc = startNodeCache(node, 'a', ['-rules', backend]);
    await nc.waitFor(/^\.:53 on 169\.254\.20\.10/);
    await waitFor(`${backend} rules`, () => ruleCount(node, backend) === RULES_PER_IP);
    expect(addressHolder(node)).not.toBeNull();
    expect(dig(node)).toBe('192.0.2.1');
    sh(node.ns, 'dig', ['+tries=1', '+time=1', '@127.0.0.2', '-p', '9999', 'control.']);
    const ct = sh(node.ns, 'conntrack', ['-L']).out;
    expect(ct).toContain('dport=9999');
    // The health plugin's own keep-alive requests may predate the rules; DNS flows must not be there.
    expect(ct.split('\n').filter((l) => l.includes(`dst=${LOCAL_IP} `) && / dport=53 /.test(l))).toEqual([]);
    deleteSome(node, backend);
    await waitFor(`${backend} rules put back`, () => ruleCount(node, backend) === RULES_PER_IP);
    nc.proc.kill('SIGTERM');
    expect(await nc.exited).toBe(0);
    expect(ruleCount(node, backend)).toBe(0);
    expect(addressHolder(node)).toBeNull();
  });

  it('leaves rules and address with -skipteardown', async () => {
    expect(MISSING).toBeNull();
    const node = newNode();
    const nc = startNodeCache(node, 'a', ['-rules', backend, '-skipteardown']);
    await nc.waitFor(/^\.:53 on 169\.254\.20\.10/);
    await waitFor(`${backend} rules`, () => ruleCount(node, backend) === RULES_PER_IP);
    nc.proc.kill('SIGTERM');
    expect(await nc.exited).toBe(0);
    expect(ruleCount(node, backend)).toBe(RULES_PER_IP);
    expect(addressHolder(node)).not.toBeNull();
  });
});

describe('node-cache upgrade on one node', () => {
  it('a second instance takes over while the first exits: no query fails, the rules stay', async () => {
    expect(MISSING).toBeNull();
    const node = newNode();
    const first = startNodeCache(node, 'old', ['-rules', 'nftables']);
    await first.waitFor(/^\.:53 on 169\.254\.20\.10/);
    await waitFor('rules', () => ruleCount(node, 'nftables') === RULES_PER_IP);
    const stopFile = join(node.dir, 'stop-load');
    const load = spawn('ip', ['netns', 'exec', node.ns, process.execPath, LOAD, LOCAL_IP, stopFile], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    node.procs.push(load);
    const client = watchLines(load, { label: 'load client', timeoutMs: 60_000 });
    await client.waitFor(/^progress 300$/);
    const second = startNodeCache(node, 'new', ['-rules', 'nftables']);
    await second.waitFor(/^\.:53 on 169\.254\.20\.10/);
    // Both announced (each registers once it serves).
    await waitFor(
      'two instances',
      () => (sh(node.ns, 'cat', ['/proc/net/unix']).out.match(/@clusterdns-node-cache\//g) ?? []).length === 2,
    );
    const before = client.output.filter((l) => l.startsWith('progress')).length;
    await client.waitFor(new RegExp(`^progress ${(before + 3) * 100}$`));
    first.proc.kill('SIGTERM');
    expect(await first.exited).toBe(0);
    expect(first.output.join('\n')).toContain('leaving rules and interface in place');
    const after = client.output.filter((l) => l.startsWith('progress')).length;
    await client.waitFor(new RegExp(`^progress ${(after + 3) * 100}$`));
    writeFileSync(stopFile, '');
    const summary = JSON.parse(await client.waitFor(/^\{/)) as { sent: number; answered: number; failed: number };
    expect(summary.failed).toBe(0);
    expect(summary.answered).toBe(summary.sent);
    expect(ruleCount(node, 'nftables')).toBe(RULES_PER_IP);
    expect(dig(node)).toBe('192.0.2.1');
    second.proc.kill('SIGTERM');
    expect(await second.exited).toBe(0);
    expect(ruleCount(node, 'nftables')).toBe(0);
    expect(addressHolder(node)).toBeNull();
  });
});
