/**
 * ready's 503 body and log line against the real CoreDNS 1.15.0 (.bin/coredns), with a
 * kubernetes plugin whose API server refuses connections (so it never becomes ready).
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import * as http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { requireCoreDNS, startLines } from '../../test/helpers/lines.js';
import { freePort } from '../../test/helpers/net.js';
import { anyError, waitFor } from '../../test/helpers/wait.js';

function get(port: number, path: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    http
      .get({ host: '127.0.0.1', port, path, agent: false }, (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (body += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      })
      .on('error', reject);
  });
}

/** GET /ready once the listener is up (bounded wait for it to open). */
async function ready(port: number): Promise<{ status: number; body: string }> {
  return waitFor('the /ready listener', () => get(port, '/ready'), { everyMs: 100, retry: anyError });
}

async function run(
  which: 'clusterdns' | 'coredns',
  corefile: string,
  readyPort: number,
): Promise<{ first: { status: number; body: string }; lines: string[] }> {
  const dir = mkdtempSync(join(tmpdir(), `ready-lines-${which}-`));
  writeFileSync(join(dir, 'Corefile'), corefile);
  const p = startLines(which, ['-conf', 'Corefile'], dir);
  try {
    const first = await ready(readyPort);
    await p.waitFor(/plugin\/ready: /);
    return { first, lines: p.lines.filter((l) => l.includes('plugin/ready')) };
  } finally {
    await p.stop();
  }
}

describe('ready against CoreDNS 1.15.0', () => {
  beforeAll(requireCoreDNS);
  it('503 body `kubernetes` and `[INFO] plugin/ready: Plugins not ready: "kubernetes"`', async () => {
    const [dns, rport, api] = [await freePort(), await freePort(), await freePort()];
    const corefile = `.:${dns} {\n    ready 127.0.0.1:${rport}\n    kubernetes cluster.local {\n        endpoint http://127.0.0.1:${api}\n    }\n}\n`;
    const theirs = await run('coredns', corefile, rport);
    const ours = await run('clusterdns', corefile, rport);
    expect(theirs.first).toEqual({ status: 503, body: 'kubernetes' });
    expect(theirs.lines).toEqual(['[INFO] plugin/ready: Plugins not ready: "kubernetes"']);
    expect(ours).toEqual(theirs);
  }, 60_000);
});
