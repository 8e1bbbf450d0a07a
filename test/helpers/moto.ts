/**
 * moto's `moto_server` on loopback: a local server speaking the Route 53 API, for the route53
 * plugin's tests. moto comes from PyPI (`scripts/install-moto.sh`; Debian has no python3-moto);
 * tests fail (never skip) with that reason when it is missing. Started on an ephemeral port and
 * stopped by PID. Hosted zones and record sets are written through the same REST API the plugin
 * reads, signed with SigV4 (src/aws/sigv4.ts; moto routes a request by the service its credential scope names).
 * `startMoto()` serves AWS Secrets Manager for `dnssec { key aws_secretsmanager }`: its `AWS_*`
 * environment points the Go SDK and clusterdns at it; `createSecret` stores a secret through the API.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { awsConfig, callCredentials, signedHeaders } from '../../src/dnssec/secretsmanager.js';
import { signRequest } from '../../src/aws/sigv4.js';
import { freePort } from './net.js';
import { watchLines } from './spawn.js';
import { waitFor } from './wait.js';

const CANDIDATES = [
  process.env.MOTO_SERVER ?? '',
  ...(process.env.PATH ?? '').split(':').map((d) => join(d, 'moto_server')),
  join(homedir(), '.pyenv/shims/moto_server'),
  join(homedir(), '.local/bin/moto_server'),
];

/** The moto_server to run, or null. */
export function motoServerPath(): string | null {
  return CANDIDATES.find((c) => c !== '' && existsSync(c)) ?? null;
}

/** Why the moto tests cannot run (with how to fix it), or null. */
export function motoMissing(): string | null {
  return motoServerPath() === null
    ? "moto_server not found: run `bash scripts/install-moto.sh` (pip install 'moto[server]==5.2.1' from PyPI; Debian has no python3-moto) or set MOTO_SERVER"
    : null;
}

/** One record set to write: values as Route 53 takes them (presentation text). */
export interface MotoRecordSet {
  readonly name: string;
  readonly type: string;
  readonly ttl: number;
  readonly values: readonly string[];
}

const NS = 'https://route53.amazonaws.com/doc/2013-04-01/';
const CREDS = { accessKeyId: 'AKIDMOTO', secretAccessKey: 'moto-secret' };

function xmlEscape(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

export class MotoServer {
  private constructor(
    private readonly proc: ChildProcess,
    readonly url: string,
    readonly output: string[],
  ) {}

  /** The credentials the tests give both servers (moto accepts any). */
  static readonly credentials = CREDS;

  static async start(): Promise<MotoServer> {
    const bin = motoServerPath();
    if (bin === null) throw new Error(motoMissing()!);
    const port = await freePort();
    const proc = spawn(bin, ['-H', '127.0.0.1', '-p', String(port)], { stdio: ['ignore', 'pipe', 'pipe'] });
    const { output } = watchLines(proc, { label: 'moto', timeoutMs: 60_000 });
    const m = new MotoServer(proc, `http://127.0.0.1:${port}`, output);
    await waitFor(
      () => `moto_server on port ${port} to answer; output:\n${output.join('\n')}`,
      async () => {
        if (proc.exitCode !== null) throw new Error(`moto_server exited ${proc.exitCode}:\n${output.join('\n')}`);
        try {
          return (await fetch(`${m.url}/moto-api/`)).status < 500;
        } catch {
          return false;
        }
      },
      { everyMs: 100, timeoutMs: 60_000 },
    );
    return m;
  }

  private async call(method: string, path: string, body = ''): Promise<string> {
    const url = new URL(this.url + path);
    const headers = signRequest({ method, url, body, region: 'us-east-1', service: 'route53', credentials: CREDS });
    delete headers.host;
    const res = await fetch(url, { method, headers, ...(body ? { body } : {}) });
    const text = await res.text();
    if (res.status >= 300) throw new Error(`moto ${method} ${path}: ${res.status} ${text}`);
    return text;
  }

  /** Create a hosted zone; its id (without `/hostedzone/`). */
  async createZone(name: string): Promise<string> {
    const ref = `ref-${name}-${Math.random().toString(36).slice(2)}`;
    const xml = await this.call(
      'POST',
      '/2013-04-01/hostedzone',
      `<CreateHostedZoneRequest xmlns="${NS}"><Name>${name}</Name><CallerReference>${ref}</CallerReference></CreateHostedZoneRequest>`,
    );
    const id = /<Id>\/hostedzone\/([^<]+)<\/Id>/.exec(xml)?.[1];
    if (!id) throw new Error(`moto: no hosted zone id in ${xml}`);
    return id;
  }

  /** UPSERT (or DELETE) record sets in a hosted zone. */
  async change(zoneId: string, sets: readonly MotoRecordSet[], action: 'UPSERT' | 'DELETE' = 'UPSERT'): Promise<void> {
    const changes = sets
      .map(
        (s) =>
          `<Change><Action>${action}</Action><ResourceRecordSet><Name>${xmlEscape(s.name)}</Name><Type>${s.type}</Type><TTL>${s.ttl}</TTL><ResourceRecords>${s.values
            .map((v) => `<ResourceRecord><Value>${xmlEscape(v)}</Value></ResourceRecord>`)
            .join('')}</ResourceRecords></ResourceRecordSet></Change>`,
      )
      .join('');
    await this.call(
      'POST',
      `/2013-04-01/hostedzone/${zoneId}/rrset/`,
      `<ChangeResourceRecordSetsRequest xmlns="${NS}"><ChangeBatch><Changes>${changes}</Changes></ChangeBatch></ChangeResourceRecordSetsRequest>`,
    );
  }

  async stop(): Promise<void> {
    if (this.proc.exitCode !== null || this.proc.signalCode !== null) return;
    const done = new Promise<void>((r) => this.proc.once('exit', () => r()));
    this.proc.kill('SIGTERM');
    await done;
  }
}

export interface Moto {
  readonly endpoint: string;
  /** The AWS_* environment that points the Go SDK and clusterdns at this server. */
  readonly env: Record<string, string>;
  createSecret(name: string, secretString: string): Promise<void>;
  stop(): Promise<void>;
}

/** moto_server (MotoServer.start) with the AWS_* environment and a Secrets Manager client. */
export async function startMoto(): Promise<Moto> {
  const server = await MotoServer.start();
  const endpoint = server.url;
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
      const cfg = await awsConfig(env);
      const url = new URL(`${endpoint}/`);
      const body = JSON.stringify({ Name: name, SecretString: secretString });
      const headers = signedHeaders(
        cfg,
        await callCredentials(cfg),
        url,
        'secretsmanager.CreateSecret',
        body,
        new Date(),
      );
      delete headers.host;
      const res = await fetch(url, { method: 'POST', headers, body });
      if (!res.ok) throw new Error(`CreateSecret ${name}: ${res.status} ${await res.text()}`);
    },
    stop: () => server.stop(),
  };
}
