/**
 * Start a clusterdns server in-process for end-to-end tests. Keys without an explicit port use
 * the free port chosen here (as `-dns.port` would), so `. {` or `cluster.local {` just work.
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Server } from '../../src/server/server.js';
import { captureLogs } from './logs.js';
import { freePort } from './net.js';

export interface TestServer {
  /** The DNS port (UDP and TCP) on 127.0.0.1 and ::1. */
  readonly port: number;
  readonly server: Server;
  /** Path of the Corefile on disk (edit it and call reload() to test reloads). */
  readonly corefilePath: string;
  /** Log lines written while the server ran. */
  readonly logs: string[];
  /** Replace the Corefile text (if given) and reload; resolves to the reload outcome. */
  reload(text?: string): Promise<boolean>;
  stop(): Promise<void>;
}

export async function startServer(
  corefile: string,
  opts: { port?: number; dir?: string; env?: Record<string, string | undefined> } = {},
): Promise<TestServer> {
  const port = opts.port ?? (await freePort());
  const dir = opts.dir ?? mkdtempSync(join(tmpdir(), 'clusterdns-test-'));
  const corefilePath = join(dir, 'Corefile');
  writeFileSync(corefilePath, corefile);
  const capture = captureLogs();
  const server = new Server({
    dnsPort: port,
    quiet: true,
    env: opts.env ?? process.env,
    loadSource: async () => ({ path: corefilePath, text: readFileSync(corefilePath, 'utf8') }),
  });
  try {
    await server.start();
  } catch (e) {
    capture.restore();
    throw e;
  }
  return {
    port,
    server,
    corefilePath,
    logs: capture.lines,
    reload: (text) => {
      if (text !== undefined) writeFileSync(corefilePath, text);
      return server.reload('test');
    },
    stop: async () => {
      await server.shutdown();
      capture.restore();
    },
  };
}
