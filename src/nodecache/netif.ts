/**
 * The interface holding the local IPs (docs/node-cache.md, "The interface"). Upstream creates a
 * `dummy` link; kernels built without the dummy driver exist (`ip link add … type dummy` answers
 * "Unknown device type"), so the link types are tried in turn: `dummy`, then `ifb` (also a
 * link that carries no traffic of its own), and when neither can be created the addresses go on
 * `lo` as /32 (/128) host addresses. Teardown deletes the link, or on `lo` only the addresses
 * node-cache added.
 */
import { describeFailure, run as defaultRun, type Runner } from './exec.js';

export type LinkKind = 'dummy' | 'ifb' | 'lo';

export type NetifOutcome =
  | { kind: 'present' }
  | { kind: 'added'; link: string; linkKind: LinkKind }
  | { kind: 'error'; errortype: 'interface_add' | 'interface_check'; message: string };

const LINK_KINDS: readonly ('dummy' | 'ifb')[] = ['dummy', 'ifb'];

export class NetifManager {
  /** Where the addresses are, once known. */
  private kind: LinkKind | null = null;

  constructor(
    private readonly name: string,
    private readonly ips: readonly string[],
    private readonly run: Runner = defaultRun,
  ) {}

  get linkKind(): LinkKind | null {
    return this.kind;
  }

  private prefix(ip: string): string {
    return ip.includes(':') ? `${ip}/128` : `${ip}/32`;
  }

  /** The addresses on `dev`; null when the link does not exist. */
  private async addresses(dev: string): Promise<Set<string> | null> {
    const r = await this.run('ip', ['-j', 'addr', 'show', 'dev', dev]);
    if (r.status !== 0) return null;
    const out = new Set<string>();
    const parsed: unknown = JSON.parse(r.stdout || '[]');
    if (Array.isArray(parsed))
      for (const link of parsed as { addr_info?: { local?: string }[] }[])
        for (const a of link.addr_info ?? []) if (a.local) out.add(a.local);
    return out;
  }

  private async addMissing(dev: string, have: Set<string>): Promise<string | null> {
    for (const ip of this.ips) {
      if (have.has(ip)) continue;
      const args = ['addr', 'add', this.prefix(ip), 'dev', dev];
      const r = await this.run('ip', args);
      if (r.status !== 0 && !/File exists/.test(r.stderr)) return describeFailure('ip', args, r);
    }
    return null;
  }

  /** The link exists with every address (upstream's EnsureDummyDevice); created when missing. */
  async ensure(): Promise<NetifOutcome> {
    const dev = this.kind === 'lo' ? 'lo' : this.name;
    const have = await this.addresses(dev);
    if (have) {
      if (this.kind === null) this.kind = await this.detectKind();
      const err = await this.addMissing(dev, have);
      if (err) return { kind: 'error', errortype: 'interface_check', message: err };
      return this.ips.every((ip) => have.has(ip))
        ? { kind: 'present' }
        : { kind: 'added', link: dev, linkKind: this.kind! };
    }
    const failures: string[] = [];
    for (const type of LINK_KINDS) {
      const args = ['link', 'add', 'name', this.name, 'type', type];
      const r = await this.run('ip', args);
      if (r.status !== 0) {
        failures.push(describeFailure('ip', args, r));
        continue;
      }
      this.kind = type;
      const up = await this.run('ip', ['link', 'set', this.name, 'up']);
      const err =
        up.status !== 0
          ? describeFailure('ip', ['link', 'set', this.name, 'up'], up)
          : await this.addMissing(this.name, new Set());
      if (err) return { kind: 'error', errortype: 'interface_add', message: err };
      return { kind: 'added', link: this.name, linkKind: type };
    }
    // No link type to create: the addresses go on the loopback interface.
    this.kind = 'lo';
    const lo = (await this.addresses('lo')) ?? new Set<string>();
    const err = await this.addMissing('lo', lo);
    if (err) return { kind: 'error', errortype: 'interface_add', message: `${failures.join('; ')}; ${err}` };
    return { kind: 'added', link: 'lo', linkKind: 'lo' };
  }

  private async detectKind(): Promise<LinkKind> {
    const r = await this.run('ip', ['-j', '-d', 'link', 'show', 'dev', this.name]);
    const kind = /"info_kind":"(\w+)"/.exec(r.stdout)?.[1];
    return kind === 'ifb' ? 'ifb' : 'dummy';
  }

  /** Remove the link, or the addresses from `lo` (upstream's RemoveDummyDevice). */
  async remove(): Promise<string | null> {
    if (this.kind === 'lo') {
      for (const ip of this.ips) {
        const args = ['addr', 'del', this.prefix(ip), 'dev', 'lo'];
        const r = await this.run('ip', args);
        if (r.status !== 0 && !/Cannot assign/.test(r.stderr)) return describeFailure('ip', args, r);
      }
      return null;
    }
    const args = ['link', 'del', this.name];
    const r = await this.run('ip', args);
    return r.status === 0 || /Cannot find device/.test(r.stderr) ? null : describeFailure('ip', args, r);
  }
}
