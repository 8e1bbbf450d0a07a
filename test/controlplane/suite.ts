/**
 * One control plane with clusterdns and the real CoreDNS 1.15.0 on it (same kubeconfig), started
 * once for a test file. A setup error is kept and thrown by every test through `need`, so the
 * suite fails with the reason; it never skips.
 */
import { afterAll, beforeAll } from 'vitest';
import { ControlPlane, type ControlPlaneOptions } from '../helpers/controlplane.js';
import { corednsMissing, startDns, waitReady, type DnsOptions, type DnsServer } from './dns.js';
import { createNamespace, createNode } from './fixtures.js';

export interface Suite {
  readonly cp: ControlPlane;
  readonly servers: DnsServer[];
}

export interface SuiteOptions {
  /** Created, with the Node, right after the control plane starts. */
  readonly namespace: string;
  /** Objects created before the servers start. */
  populate(cp: ControlPlane): Promise<void>;
  /** Run once both servers are ready. */
  ready?(servers: DnsServer[]): Promise<void>;
  /** Run after the servers and the control plane stopped (null: it never started). */
  stopped?(cp: ControlPlane | null): void;
  /** Options of the control plane (default: none). */
  readonly controlPlane?: ControlPlaneOptions;
  /** The servers' zones and extra kubernetes options (the kubeconfig is the suite's). */
  readonly dns?: Omit<DnsOptions, 'kubeconfig'>;
}

/** Registers the file's beforeAll/afterAll; the returned `need` gives the running suite. */
export function controlPlaneSuite(o: SuiteOptions): () => Suite {
  let cp: ControlPlane | null = null;
  let servers: DnsServer[] = [];
  let startError: Error | null = null;

  beforeAll(async () => {
    try {
      const missing = corednsMissing();
      if (missing !== null) throw new Error(missing);
      const c = await ControlPlane.start(o.controlPlane);
      cp = c;
      await createNode(c);
      await createNamespace(c, o.namespace);
      await o.populate(c);
      const kubeconfig = c.corednsKubeconfig;
      servers = await Promise.all([
        startDns('clusterdns', { ...o.dns, kubeconfig }),
        startDns('coredns', { ...o.dns, kubeconfig }),
      ]);
      await Promise.all(servers.map((s) => waitReady(s)));
      await o.ready?.(servers);
    } catch (e) {
      startError = e as Error;
    }
  }, 400_000);

  afterAll(async () => {
    await Promise.all(servers.map((s) => s.stop()));
    await cp?.stop();
    o.stopped?.(cp);
  }, 60_000);

  return () => {
    if (startError !== null) throw startError;
    if (cp === null) throw new Error('control plane not started');
    return { cp, servers };
  };
}
