/**
 * moto_server (Python's moto in server mode, /root/.pyenv/shims/moto_server or on PATH): a local
 * server speaking the AWS APIs, here AWS Secrets Manager for `dnssec { key aws_secretsmanager }`.
 * Started on a free 127.0.0.1 port; `createSecret` stores a secret through the real API.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { awsConfig, signedHeaders } from '../../src/dnssec/secretsmanager.js';
import { freePort } from './net.js';
import { hasTool } from './spawn.js';
import { waitFor } from './wait.js';

const PYENV = '/root/.pyenv/shims/moto_server';

/** The moto_server command, or null when it is not installed. */
export function motoCommand(): string | null {
  if (existsSync(PYENV)) return PYENV;
  return hasTool('moto_server') ? 'moto_server' : null;
}

export interface Moto {
  readonly endpoint: string;
  /** The AWS_* environment that points the Go SDK and clusterdns at this server. */
  readonly env: Record<string, string>;
  createSecret(name: string, secretString: string): Promise<void>;
  stop(): Promise<void>;
}

export async function startMoto(): Promise<Moto> {
  const cmd = motoCommand();
  if (cmd === null) throw new Error('moto_server is not installed (pip install "moto[server]")');
  const port = await freePort();
  const proc: ChildProcess = spawn(cmd, ['-H', '127.0.0.1', '-p', String(port)], { stdio: 'ignore' });
  const endpoint = `http://127.0.0.1:${port}`;
  await waitFor(
    () => `moto_server to listen on ${endpoint}`,
    async () => {
      try {
        await fetch(endpoint);
        return true;
      } catch {
        return false;
      }
    },
    { everyMs: 200, timeoutMs: 60_000 },
  );
  const env = {
    AWS_REGION: 'us-east-1',
    AWS_ACCESS_KEY_ID: 'testing',
    AWS_SECRET_ACCESS_KEY: 'testing',
    AWS_ENDPOINT_URL: endpoint,
  };
  return {
    endpoint,
    env,
    async createSecret(name, secretString) {
      const cfg = awsConfig(env);
      const url = new URL(`${endpoint}/`);
      const body = JSON.stringify({ Name: name, SecretString: secretString });
      const headers = signedHeaders(cfg, url, 'secretsmanager.CreateSecret', body, new Date());
      delete headers.host;
      const res = await fetch(url, { method: 'POST', headers, body });
      if (!res.ok) throw new Error(`CreateSecret ${name}: ${res.status} ${await res.text()}`);
    },
    stop: () =>
      new Promise<void>((resolve) => {
        if (proc.exitCode !== null) return resolve();
        proc.once('exit', () => resolve());
        proc.kill('SIGTERM');
      }),
  };
}
