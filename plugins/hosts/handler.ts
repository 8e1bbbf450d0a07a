/** The hosts handler (docs/plugins.md, hosts, "Query handling"). */
import { readFileSync, statSync } from 'node:fs';
import type { Answer } from 'dns-packet';
import { Qtype, Rcode } from '../../src/dns/constants.js';
import { replyTo } from '../../src/dns/message.js';
import { ipFromReverseName, matchZone, toPacketName } from '../../src/dns/name.js';
import { fallsThrough } from '../../src/fallthrough.js';
import type { Logger } from '../../src/log.js';
import { nextOrFailure, type Handler } from '../../src/plugin.js';
import type { Query } from '../../src/query.js';
import { HostsMap, lookupHost, parseHosts, parseHostsIP } from './hostsfile.js';
import { hostsEntries, hostsReloadTimestamp } from './metrics.js';
import type { HostsConfig } from './setup.js';

/** The hosts file and the inline entries, with the file re-read when its mtime or size change. */
export class HostsData {
  file = new HostsMap();
  readonly inline: HostsMap;
  private mtimeMs = -1;
  private size = -1;
  private missingLogged = false;

  constructor(
    readonly cfg: HostsConfig,
    readonly zones: readonly string[],
    private readonly log: Logger,
  ) {
    this.inline = parseHosts(cfg.inline.join('\n'), zones, cfg.autoReverse);
  }

  /** Re-read the file if it changed (a missing file counts as empty and is only logged). */
  refresh(): void {
    let st;
    try {
      st = statSync(this.cfg.path);
    } catch {
      if (!this.missingLogged) this.log.warning(`File does not exist: ${this.cfg.path}`);
      this.missingLogged = true;
      if (this.size !== -1) {
        this.file = new HostsMap();
        this.mtimeMs = -1;
        this.size = -1;
        this.updateMetrics();
      }
      return;
    }
    this.missingLogged = false;
    if (st.isDirectory()) return;
    if (st.mtimeMs === this.mtimeMs && st.size === this.size) return;
    let text: string;
    try {
      text = readFileSync(this.cfg.path, 'utf8');
    } catch (e) {
      this.log.error(`Failed to read ${this.cfg.path}: ${(e as Error).message}`);
      return;
    }
    this.file = parseHosts(text, this.zones, this.cfg.autoReverse);
    let entries = this.file.size;
    for (const names of this.file.addr.values()) entries += names.length;
    this.log.debug(`Parsed hosts file into ${entries} entries`);
    this.mtimeMs = st.mtimeMs;
    this.size = st.size;
    hostsReloadTimestamp.set(st.mtimeMs / 1000);
    this.updateMetrics();
  }

  updateMetrics(): void {
    hostsEntries.labels(this.cfg.path).set(this.file.size + this.inline.size);
  }

  v4(lname: string): string[] {
    return [
      ...lookupHost(this.file.name4, lname, this.file.name6),
      ...lookupHost(this.inline.name4, lname, this.inline.name6),
    ];
  }

  v6(lname: string): string[] {
    return [
      ...lookupHost(this.file.name6, lname, this.file.name4),
      ...lookupHost(this.inline.name6, lname, this.inline.name4),
    ];
  }

  names(ip: string): string[] {
    return [...(this.file.addr.get(ip) ?? []), ...(this.inline.addr.get(ip) ?? [])];
  }
}

export class HostsHandler implements Handler {
  readonly name = 'hosts';

  constructor(
    readonly data: HostsData,
    readonly next: Handler | null,
  ) {}

  serve(q: Query): number | Promise<number> {
    const lname = q.lname;
    const inZone = matchZone(this.data.zones, lname) !== undefined;
    if (!inZone && q.qtype !== Qtype.PTR) return nextOrFailure(this.name, this.next, q);
    const ttl = this.data.cfg.ttl;
    const owner = toPacketName(q.name);
    let answers: Answer[] = [];
    switch (q.qtype) {
      case Qtype.PTR: {
        const ip = ipFromReverseName(lname);
        const addr = ip ? parseHostsIP(ip) : undefined;
        const names = addr ? this.data.names(addr.ip) : [];
        if (names.length === 0) return nextOrFailure(this.name, this.next, q);
        answers = names.map((n) => ({ name: owner, type: 'PTR', class: 'IN', ttl, data: toPacketName(n) }));
        break;
      }
      case Qtype.A:
        answers = this.data.v4(lname).map((ip) => ({ name: owner, type: 'A', class: 'IN', ttl, data: ip }));
        break;
      case Qtype.AAAA:
        answers = this.data.v6(lname).map((ip) => ({ name: owner, type: 'AAAA', class: 'IN', ttl, data: ip }));
        break;
      default:
        if (this.data.cfg.fallthroughUnsupported && fallsThrough(this.data.cfg.fallthrough, lname))
          return nextOrFailure(this.name, this.next, q);
    }
    if (answers.length === 0 && this.data.v4(lname).length === 0 && this.data.v6(lname).length === 0) {
      if (fallsThrough(this.data.cfg.fallthrough, lname)) return nextOrFailure(this.name, this.next, q);
      // No SOA to build an NXDOMAIN with: SERVFAIL, written by the server.
      return Rcode.SERVFAIL;
    }
    const msg = replyTo(q.request, Rcode.NOERROR, true);
    msg.answers = answers;
    q.write(msg, this.name);
    return Rcode.NOERROR;
  }
}
