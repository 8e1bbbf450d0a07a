/**
 * The rules node-cache keeps on the node (docs/node-cache.md, "Rules"): for each local IP, raw
 * PREROUTING/OUTPUT NOTRACK and filter INPUT/OUTPUT ACCEPT for UDP and TCP to and from port 53,
 * and NOTRACK for the health port, so that queries to the local address never enter conntrack.
 * The list and its order are upstream's (k8s.io/dns cmd/node-cache/app/cache_app.go,
 * `initIptables`). Two ways to install them:
 * - nftables natively: one `table inet` of its own, replaced and deleted as one unit by `nft -f`;
 * - iptables (`iptables-nft` or `iptables-legacy`, `ip6tables-*` for IPv6): each rule checked with
 *   `-C` and prepended with `-I` when missing, deleted on teardown until none is left, as
 *   upstream's utiliptables does.
 */
import { isIPv6 } from 'node:net';
import { describeFailure, run as defaultRun, type RunResult, type Runner } from './exec.js';
import type { RulesBackend } from './flags.js';

export const COMMENT_SKIP_CONNTRACK = 'NodeLocal DNS Cache: skip conntrack';
export const COMMENT_ALLOW_TRAFFIC = 'NodeLocal DNS Cache: allow DNS traffic';

/** The nftables table clusterdns owns. */
export const NFT_TABLE = 'clusterdns-nodelocaldns';

export interface Rule {
  table: 'raw' | 'filter';
  chain: 'PREROUTING' | 'INPUT' | 'OUTPUT';
  proto: 'tcp' | 'udp';
  /** Match on the destination (`-d IP --dport`) or the source (`-s IP --sport`). */
  dir: 'dst' | 'src';
  ip: string;
  port: number;
  target: 'NOTRACK' | 'ACCEPT';
}

/** Upstream's rules, in upstream's order. */
export function nodeCacheRules(localIPs: readonly string[], port: number, healthPort: number): Rule[] {
  const rules: Rule[] = [];
  const r = (
    table: Rule['table'],
    chain: Rule['chain'],
    proto: Rule['proto'],
    dir: Rule['dir'],
    ip: string,
    p: number,
  ) => rules.push({ table, chain, proto, dir, ip, port: p, target: table === 'raw' ? 'NOTRACK' : 'ACCEPT' });
  for (const ip of localIPs) {
    r('raw', 'PREROUTING', 'tcp', 'dst', ip, port);
    r('raw', 'PREROUTING', 'udp', 'dst', ip, port);
    r('filter', 'INPUT', 'tcp', 'dst', ip, port);
    r('filter', 'INPUT', 'udp', 'dst', ip, port);
    r('raw', 'OUTPUT', 'tcp', 'src', ip, port);
    r('raw', 'OUTPUT', 'udp', 'src', ip, port);
    r('filter', 'OUTPUT', 'tcp', 'src', ip, port);
    r('filter', 'OUTPUT', 'udp', 'src', ip, port);
    r('raw', 'OUTPUT', 'tcp', 'dst', ip, port);
    r('raw', 'OUTPUT', 'udp', 'dst', ip, port);
    r('raw', 'OUTPUT', 'tcp', 'dst', ip, healthPort);
    r('raw', 'OUTPUT', 'tcp', 'src', ip, healthPort);
  }
  return rules;
}

/** A rule's iptables arguments after the chain, as upstream passes them. */
export function iptablesArgs(rule: Rule): string[] {
  const addr = rule.dir === 'dst' ? ['-d', rule.ip, '--dport'] : ['-s', rule.ip, '--sport'];
  const comment = rule.target === 'NOTRACK' ? COMMENT_SKIP_CONNTRACK : COMMENT_ALLOW_TRAFFIC;
  return ['-p', rule.proto, ...addr, String(rule.port), '-j', rule.target, '-m', 'comment', '--comment', comment];
}

/** `iptables-save`-style lines (`-A CHAIN ...` per table) for the golden comparison. */
export function iptablesLines(rules: readonly Rule[]): string[] {
  return rules.map((r) => {
    const args = iptablesArgs(r).map((a) => (a.includes(' ') ? `"${a}"` : a));
    return `-t ${r.table} -I ${r.chain} ${args.join(' ')}`;
  });
}

const NFT_CHAINS: readonly {
  name: string;
  table: Rule['table'];
  chain: Rule['chain'];
  hook: string;
  priority: string;
}[] = [
  { name: 'raw-prerouting', table: 'raw', chain: 'PREROUTING', hook: 'prerouting', priority: 'raw' },
  { name: 'raw-output', table: 'raw', chain: 'OUTPUT', hook: 'output', priority: 'raw' },
  { name: 'filter-input', table: 'filter', chain: 'INPUT', hook: 'input', priority: 'filter' },
  { name: 'filter-output', table: 'filter', chain: 'OUTPUT', hook: 'output', priority: 'filter' },
];

function nftRule(r: Rule): string {
  const family = isIPv6(r.ip) ? 'ip6' : 'ip';
  const addr =
    r.dir === 'dst'
      ? `${family} daddr ${r.ip} ${r.proto} dport ${r.port}`
      : `${family} saddr ${r.ip} ${r.proto} sport ${r.port}`;
  const comment = r.target === 'NOTRACK' ? COMMENT_SKIP_CONNTRACK : COMMENT_ALLOW_TRAFFIC;
  return `${addr} ${r.target === 'NOTRACK' ? 'notrack' : 'accept'} comment "${comment}"`;
}

/** The table's definition: one base chain per iptables table/chain pair, rules in upstream's order. */
export function nftTable(rules: readonly Rule[]): string {
  const lines = [`table inet ${NFT_TABLE} {`];
  for (const c of NFT_CHAINS) {
    lines.push(`\tchain ${c.name} {`, `\t\ttype filter hook ${c.hook} priority ${c.priority}; policy accept;`);
    for (const r of rules) if (r.table === c.table && r.chain === c.chain) lines.push(`\t\t${nftRule(r)}`);
    lines.push('\t}');
  }
  lines.push('}');
  return `${lines.join('\n')}\n`;
}

export type RulesOutcome =
  | { kind: 'present' }
  | { kind: 'added'; what: string[] }
  | { kind: 'error'; errortype: 'iptables' | 'iptables_lock'; message: string };

export interface RuleSet {
  readonly backend: Exclude<RulesBackend, 'auto'>;
  /** Check every rule; put back what is missing. */
  ensure(): Promise<RulesOutcome[]>;
  /** Remove every rule (and the nftables table). */
  remove(): Promise<string[]>;
}

function isLocked(r: RunResult): boolean {
  return r.stderr.includes('holding the xtables lock') || r.stderr.includes('Another app is currently holding');
}

class NftRules implements RuleSet {
  readonly backend = 'nftables';
  private readonly definition: string;
  /** `nft list table` right after our install: a later listing that differs means the table was changed. */
  private installed: string | null = null;
  constructor(
    rules: readonly Rule[],
    private readonly run: Runner,
  ) {
    this.definition = nftTable(rules);
  }

  async ensure(): Promise<RulesOutcome[]> {
    const list = await this.run('nft', ['list', 'table', 'inet', NFT_TABLE]);
    if (list.status === 0 && this.installed !== null && list.stdout === this.installed) return [{ kind: 'present' }];
    if (list.status === 0 && this.installed === null && normalize(list.stdout) === normalize(this.definition)) {
      // Another instance (the pod being replaced) installed the same table.
      this.installed = list.stdout;
      return [{ kind: 'present' }];
    }
    // Created (or replaced) in one transaction: no moment without rules.
    const script = `table inet ${NFT_TABLE}\ndelete table inet ${NFT_TABLE}\n${this.definition}`;
    const r = await this.run('nft', ['-f', '-'], script);
    if (r.status !== 0)
      return [{ kind: 'error', errortype: 'iptables', message: describeFailure('nft', ['-f', '-'], r) }];
    const after = await this.run('nft', ['list', 'table', 'inet', NFT_TABLE]);
    this.installed = after.status === 0 ? after.stdout : null;
    return [{ kind: 'added', what: [`table inet ${NFT_TABLE}`] }];
  }

  async remove(): Promise<string[]> {
    const r = await this.run('nft', ['delete', 'table', 'inet', NFT_TABLE]);
    this.installed = null;
    if (r.status === 0 || /No such file or directory/.test(r.stderr)) return [];
    return [describeFailure('nft', ['delete', 'table', 'inet', NFT_TABLE], r)];
  }
}

/** `nft list` output and our definition compared without their whitespace layout. */
function normalize(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}

class IptablesRules implements RuleSet {
  constructor(
    readonly backend: 'iptables-nft' | 'iptables-legacy',
    private readonly rules: readonly Rule[],
    private readonly run: Runner,
  ) {}

  private cmd(rule: Rule): string {
    return `${isIPv6(rule.ip) ? 'ip6tables' : 'iptables'}-${this.backend === 'iptables-nft' ? 'nft' : 'legacy'}`;
  }

  private exec(rule: Rule, op: '-C' | '-I' | '-D'): Promise<RunResult> {
    // -w: wait for the xtables lock (kube-proxy holds it while it syncs) as utiliptables does.
    return this.run(this.cmd(rule), ['-w', '5', '-t', rule.table, op, rule.chain, ...iptablesArgs(rule)]);
  }

  async ensure(): Promise<RulesOutcome[]> {
    const out: RulesOutcome[] = [];
    for (const rule of this.rules) {
      const check = await this.exec(rule, '-C');
      if (check.status === 0) {
        out.push({ kind: 'present' });
        continue;
      }
      const add = await this.exec(rule, '-I');
      if (add.status === 0) {
        out.push({ kind: 'added', what: [`-t ${rule.table} ${rule.chain} ${iptablesArgs(rule).join(' ')}`] });
        continue;
      }
      out.push({
        kind: 'error',
        errortype: isLocked(add) ? 'iptables_lock' : 'iptables',
        message: describeFailure(this.cmd(rule), ['-t', rule.table, '-I', rule.chain, ...iptablesArgs(rule)], add),
      });
    }
    return out;
  }

  async remove(): Promise<string[]> {
    const errors: string[] = [];
    for (const rule of this.rules) {
      // Deleted until the check fails: the same rule may have been added more than once.
      for (let i = 0; i < 100; i++) {
        const del = await this.exec(rule, '-D');
        if (del.status === 0) continue;
        const check = await this.exec(rule, '-C');
        if (check.status !== 0) break;
        errors.push(describeFailure(this.cmd(rule), ['-D', rule.chain, ...iptablesArgs(rule)], del));
        break;
      }
    }
    return errors;
  }
}

/** Which backend `auto` picks: nftables when `nft` runs, else iptables-nft, else iptables-legacy. */
export async function pickBackend(run: Runner = defaultRun): Promise<Exclude<RulesBackend, 'auto'>> {
  if ((await run('nft', ['--version'])).status === 0) return 'nftables';
  if ((await run('iptables-nft', ['--version'])).status === 0) return 'iptables-nft';
  return 'iptables-legacy';
}

export function ruleSet(
  backend: Exclude<RulesBackend, 'auto'>,
  rules: readonly Rule[],
  run: Runner = defaultRun,
): RuleSet {
  return backend === 'nftables' ? new NftRules(rules, run) : new IptablesRules(backend, rules, run);
}
