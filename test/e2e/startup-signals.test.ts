/**
 * Signals that arrive while the server is still starting (here: kubernetes waiting for an API
 * server that does not answer) must not get Node's default actions: SIGUSR1 would open the
 * inspector (a debugger on 127.0.0.1:9229) and SIGHUP or SIGUSR2 would end the process. CoreDNS
 * traps its signals before it starts. Requires `npm run build` (npm test builds first).
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startLines, type LineProcess } from '../helpers/lines.js';
import { freePort } from '../helpers/net.js';

let proc: LineProcess | null = null;
afterEach(async () => {
  await proc?.stop();
  proc = null;
});

describe('signals during start-up', () => {
  it('SIGUSR1, SIGUSR2 and SIGHUP while a plugin still starts: no inspector, no exit, the server comes up', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'startup-signals-'));
    const port = await freePort();
    const dead = await freePort(); // nothing listens there: kubernetes waits its 5 s at start-up
    writeFileSync(
      join(dir, 'Corefile'),
      `.:${port} {\n  kubernetes cluster.local {\n    endpoint http://127.0.0.1:${dead}\n  }\n}\n`,
    );
    const p = startLines('clusterdns', ['-conf', 'Corefile'], dir);
    proc = p;
    await p.waitFor(/waiting for Kubernetes API before starting server$/);
    p.proc.kill('SIGUSR1');
    p.proc.kill('SIGHUP');
    p.proc.kill('SIGUSR2');
    // Start-up completes (the platform line comes last in the banner).
    await p.waitFor(/^linux\//, 0, 30_000);
    await p.waitFor(/^\[INFO\] SIGUSR2: Reloading$/);
    expect(p.proc.exitCode).toBeNull();
    expect(p.proc.signalCode).toBeNull();
    expect(p.lines.filter((l) => /Debugger listening|inspector/i.test(l))).toEqual([]);
    expect(p.lines).toContain('[INFO] SIGUSR1: Reloading');
  }, 60_000);
});
