/**
 * The API server stopped (SIGSTOP/SIGCONT), killed (SIGKILL) and restarted under clusterdns and the
 * real CoreDNS 1.15.0: known names are answered throughout, and changes made after recovery are
 * seen. Waits are for events with generous bounds; how long recovery took is recorded and printed,
 * never asserted. Fails (never skips) when the control plane cannot start.
 */
import { describe, expect, test } from 'vitest';
import type { Obj } from '../helpers/controlplane.js';
import { addresses, agree, latencies, latencyReport, measureChange, query, type DnsServer } from './dns.js';
import { clusterIPs, createPod, createService } from './fixtures.js';
import { controlPlaneSuite } from './suite.js';

const NS = 'faults';
const Z = 'cluster.local';
/** CoreDNS took 47–96 s to see the first change after an API server restart when this was tried. */
const RECOVERY_BOUND_MS = 300_000;

let known: Obj = {};

const need = controlPlaneSuite({
  namespace: NS,
  populate: async (cp) => {
    known = await createService(cp, {
      name: 'known',
      namespace: NS,
      spec: { selector: { app: 'k' }, ports: [{ name: 'http', port: 80 }] },
    });
    await createService(cp, {
      name: 'hk',
      namespace: NS,
      spec: { clusterIP: 'None', selector: { app: 'k' }, ports: [{ name: 'http', port: 80 }] },
    });
    await createPod(cp, { name: 'k-0', namespace: NS, labels: { app: 'k' }, ips: ['10.244.9.10'] });
  },
  ready: async (servers) => {
    await agree(servers, `hk.${NS}.svc.${Z}`, 'A', 60_000);
  },
  stopped: () => {
    if (latencies.length > 0) process.stdout.write(`${latencyReport()}\n`);
  },
});

/** Every server answers the known names as before (several rounds while the fault lasts). */
async function knownAnswered(ss: readonly DnsServer[], rounds: number): Promise<void> {
  const ip = clusterIPs(known)[0]!;
  for (let i = 0; i < rounds; i++) {
    for (const s of ss) {
      expect(addresses(await query(s, `known.${NS}.svc.${Z}`, 'A')), s.kind).toEqual([ip]);
      expect(addresses(await query(s, `hk.${NS}.svc.${Z}`, 'A')), s.kind).toEqual(['10.244.9.10']);
    }
    await new Promise((r) => setTimeout(r, 250));
  }
}

describe('API server faults', () => {
  test(
    'SIGSTOP then SIGCONT: known names answered throughout, the next change seen',
    async () => {
      const { cp: c, servers: ss } = need();
      c.pauseApiServer();
      try {
        await knownAnswered(ss, 20);
      } finally {
        c.resumeApiServer();
      }
      await measureChange(
        'Service created after SIGCONT',
        ss,
        `after-stop.${NS}.svc.${Z}`,
        'A',
        () => createService(c, { name: 'after-stop', namespace: NS, spec: { ports: [{ name: 'http', port: 80 }] } }),
        (m) => addresses(m).length === 1,
        RECOVERY_BOUND_MS,
      );
      await knownAnswered(ss, 1);
    },
    RECOVERY_BOUND_MS + 60_000,
  );

  test(
    'SIGKILL and restart: known names answered while down, changes seen after the restart',
    async () => {
      const { cp: c, servers: ss } = need();
      await c.killApiServer();
      await knownAnswered(ss, 20);
      await c.restartApiServer();
      await knownAnswered(ss, 1);
      await measureChange(
        'Service created after restart',
        ss,
        `after-restart.${NS}.svc.${Z}`,
        'A',
        () => createService(c, { name: 'after-restart', namespace: NS, spec: { ports: [{ name: 'http', port: 80 }] } }),
        (m) => addresses(m).length === 1,
        RECOVERY_BOUND_MS,
      );
      await measureChange(
        'pod added after restart (headless A)',
        ss,
        `hk.${NS}.svc.${Z}`,
        'A',
        () => createPod(c, { name: 'k-1', namespace: NS, labels: { app: 'k' }, ips: ['10.244.9.11'] }),
        (m) => addresses(m).includes('10.244.9.11'),
        RECOVERY_BOUND_MS,
      );
      await agree(ss, `hk.${NS}.svc.${Z}`, 'A');
      await agree(ss, `after-restart.${NS}.svc.${Z}`, 'A');
      for (const s of ss) expect((await s.ready()).status, s.kind).toBe(200);
    },
    2 * RECOVERY_BOUND_MS + 120_000,
  );
});
