/**
 * `clusterdns node-cache` (docs/node-cache.md): NodeLocal DNSCache from the same binary. The life
 * cycle is upstream node-cache's (k8s.io/dns cmd/node-cache/app/cache_app.go):
 * 1. the interface with the local IPs, metrics, the Corefile generated from the template;
 * 2. the server starts (SO_REUSEPORT, so that a replacement can bind beside it);
 * 3. once it listens, the rules; every `-syncinterval` rules and interface are checked again;
 * 4. every 10 s the template's directory, the kube-dns ConfigMap's and the upstream Service are
 *    read again, and a changed Corefile is written (the `reload` plugin, or SIGUSR1 with
 *    `-reloadwithsignal`, loads it);
 * 5. on SIGTERM/SIGINT: when another instance serves the same addresses it takes the port over
 *    and the rules and interface stay; the last one removes them unless `-skipteardown`.
 */
import { readFileSync, writeFileSync, existsSync } from 'node:fs';
import { dirname } from 'node:path';
import { parseFlags } from '../cli/flags.js';
import { stdLog, startupFailure } from '../log.js';
import { serve } from '../serve.js';
import { shareSidePorts } from '../server/sidelistener.js';
import { generateCorefile } from './corefile.js';
import type { NodeCacheFlags } from './flags.js';
import { EMPTY_KUBE_DNS_CONFIG, parseKubeDnsConfig, readConfigDir, type KubeDnsConfig } from './kubednsconfig.js';
import { NodeCacheMetrics } from './metrics.js';
import { NetifManager } from './netif.js';
import { Peers } from './peers.js';
import { nodeCacheRules, pickBackend, ruleSet, type RuleSet } from './rules.js';
import { lookupServiceIP } from './upstreamsvc.js';

/** Upstream's period for both configuration directories (DefaultConfigSyncPeriod, kube-dns's ConfigPeriod). */
export const CONFIG_POLL_MS = 10_000;
const DEFAULT_KUBEDNS_CM_PATH = '/etc/kube-dns';

export class NodeCacheApp {
  readonly metrics = new NodeCacheMetrics();
  private readonly netif: NetifManager | null;
  private rules: RuleSet | null = null;
  readonly peers: Peers;
  private kubeDns: KubeDnsConfig = EMPTY_KUBE_DNS_CONFIG;
  private kubeDnsVersion: string | null = null;
  private baseVersion: string | null = null;
  private clusterDNS: string | null = null;
  private lastCorefile: string | null = null;
  private readonly timers: NodeJS.Timeout[] = [];
  private serving = false;
  private syncing: Promise<void> | null = null;
  private readonly kubednscm: string;

  constructor(private readonly f: NodeCacheFlags) {
    this.netif = f.setupinterface ? new NetifManager(f.interfacename, f.localIPs) : null;
    this.peers = new Peers(f.localIPs, f.dnsPort);
    this.kubednscm = f.kubednscm || (existsSync(DEFAULT_KUBEDNS_CM_PATH) ? DEFAULT_KUBEDNS_CM_PATH : '');
  }

  async run(): Promise<void> {
    const f = this.f;
    shareSidePorts(true);
    stdLog.info(`Starting node-cache (clusterdns), local IPs ${f.localIPs.join(',')}, port ${f.dnsPort}`);
    if (f.setupiptables) {
      const backend = f.rules === 'auto' ? await pickBackend() : f.rules;
      this.rules = ruleSet(backend, nodeCacheRules(f.localIPs, f.dnsPort, f.healthPort));
      stdLog.info(`Rules through ${backend}`);
    }
    try {
      await this.metrics.listen(f.metricsListenAddress);
    } catch (e) {
      stdLog.error(`Failed to start metrics handler: ${(e as Error).message}`);
    }
    if (!this.kubednscm) stdLog.info('Skipping kube-dns configmap sync as no directory was specified');
    await this.syncConfig(true);
    if (this.lastCorefile === null) startupFailure(`node-cache: no Corefile could be generated from ${f.basecorefile}`);
    // The interface now; the rules only once the server listens (a server that cannot start
    // must not leave queries to the local IP without an answer).
    await this.setupNetworking(false);
    const serverFlags = parseFlags(['-conf', f.conf, '-dns.port', String(f.dnsPort)]);
    // The pidfile is written below, once this instance is known to the others, not by serve().
    serverFlags.workers = f.workers;
    await serve(serverFlags, f.workers, {
      reusePort: true,
      handOff: () => this.peers.others() > 0,
      beforeExit: () => this.exit(),
    });
    this.serving = true;
    await this.peers.register();
    await this.setupNetworking(true);
    // The pidfile means "serving, with the rules, and visible to other instances": the chart's
    // startupProbe waits for it, so that a DaemonSet upgrade's surge pod counts as available (and
    // the old pod gets SIGTERM) only when the old instance will find it and hand its ports over.
    // Written at listen time (as serve() does), an old instance stopped in between saw no other
    // instance and tore the rules and interface down (the real node: ~1,000 failed queries).
    if (f.pidfile) {
      try {
        writeFileSync(f.pidfile, `${process.pid}\n`);
      } catch (e) {
        // As CoreDNS: logged, and the server keeps serving.
        stdLog.error(`Could not write pidfile: ${(e as Error).message}`);
      }
    }
    this.timers.push(setInterval(() => void this.setupNetworking(true), f.syncIntervalMs));
    this.timers.push(setInterval(() => void this.syncConfig(false), CONFIG_POLL_MS));
  }

  /** Check and repair the interface and (once serving) the rules; errors counted by type. */
  async setupNetworking(withRules: boolean): Promise<void> {
    if (withRules && this.rules) {
      for (const o of await this.rules.ensure()) {
        if (o.kind === 'added') for (const w of o.what) stdLog.info(`Added back nodelocaldns rule - ${w}`);
        if (o.kind === 'error') {
          stdLog.error(`Error checking/adding rule: ${o.message}`);
          this.metrics.error(o.errortype);
        }
      }
    }
    if (this.netif) {
      const o = await this.netif.ensure();
      if (o.kind === 'added') stdLog.info(`Added interface - ${o.link} (${o.linkKind})`);
      if (o.kind === 'error') {
        stdLog.error(`Error setting up interface ${this.f.interfacename}: ${o.message}`);
        this.metrics.error(o.errortype);
      }
    }
  }

  /** Read the template, the kube-dns ConfigMap and the Service; write the Corefile when it changed. */
  syncConfig(first: boolean): Promise<void> {
    this.syncing ??= this.doSyncConfig(first).finally(() => (this.syncing = null));
    return this.syncing;
  }

  private async doSyncConfig(first: boolean): Promise<void> {
    const f = this.f;
    if (this.kubednscm) {
      try {
        const { version, data } = readConfigDir(this.kubednscm);
        if (version !== this.kubeDnsVersion) {
          this.kubeDnsVersion = version;
          this.kubeDns = version === '' ? EMPTY_KUBE_DNS_CONFIG : parseKubeDnsConfig(data);
        }
      } catch (e) {
        stdLog.error(`Invalid kube-dns config in ${this.kubednscm}, ignoring update: ${(e as Error).message}`);
        this.metrics.error('configmap');
      }
    }
    try {
      this.baseVersion = readConfigDir(dirname(f.basecorefile)).version;
    } catch {
      // the template file itself is read below, with its error
    }
    const svc = await lookupServiceIP(f.upstreamsvc, f.kubeapi);
    if (svc.ip === null || svc.source === 'env') {
      if (first || svc.ip !== this.clusterDNS)
        stdLog.warning(`Unable to look up the IP address of upstream service ${f.upstreamsvc}: ${svc.error}`);
    }
    if (svc.ip !== null) this.clusterDNS = svc.ip;
    let base: string;
    try {
      base = readFileSync(f.basecorefile, 'utf8');
    } catch (e) {
      stdLog.error(`Failed to read node-cache coreFile ${f.basecorefile} - ${(e as Error).message}`);
      this.metrics.error('configmap');
      return;
    }
    const gen = generateCorefile({
      base,
      localIPs: f.localIPs,
      port: f.dnsPort,
      clusterDNS: this.clusterDNS,
      kubeDns: this.kubeDns,
    });
    if (gen.text === this.lastCorefile) return;
    if (gen.noTcpBlock)
      stdLog.warning('Did not find TCP upstream block to replace, assuming upstreams already use UDP.');
    try {
      writeFileSync(f.conf, gen.text);
    } catch (e) {
      stdLog.error(`Failed to write config file ${f.conf} - err ${(e as Error).message}`);
      this.metrics.error('configmap');
      return;
    }
    this.lastCorefile = gen.text;
    stdLog.info(
      `Updated Corefile with ${Object.keys(this.kubeDns.stubDomains).length} custom stubdomains and upstream servers ${gen.upstreamServers}`,
    );
    stdLog.info(`Using config file:\n${gen.text}`);
    if (this.serving && f.reloadwithsignal) {
      stdLog.info(`Sending reload signal to PID ${process.pid}`);
      process.kill(process.pid, 'SIGUSR1');
    }
  }

  /** After the server's shutdown: leave the rules to another instance, or tear them down. */
  async exit(): Promise<void> {
    for (const t of this.timers.splice(0)) clearInterval(t);
    this.metrics.close();
    const others = this.peers.others();
    this.peers.close();
    if (this.f.skipteardown) return;
    if (others > 0) {
      stdLog.info(`Another node-cache serves ${this.f.localIPs.join(',')}: leaving rules and interface in place`);
      return;
    }
    stdLog.info('Tearing down');
    for (const e of (await this.rules?.remove()) ?? []) stdLog.error(`Failed deleting rule: ${e}`);
    const err = await this.netif?.remove();
    if (err) stdLog.error(`Failed removing interface: ${err}`);
  }
}
