/**
 * AWS's EC2 instance metadata mock (github.com/aws/amazon-ec2-metadata-mock, built by
 * scripts/install-ec2-metadata-mock.sh into .bin/) on an ephemeral port of 127.0.0.1, for the tests
 * of route53's instance-role credentials and region lookup, with clusterdns and the real CoreDNS
 * pointed at it through `AWS_EC2_METADATA_SERVICE_ENDPOINT`. Started IMDSv2-only (`-I`: a GET
 * without a session token is refused), with a config file that sets the role's keys and the region.
 */
import { spawn } from 'node:child_process';
import { accessSync, constants, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { freePort } from './net.js';
import { watchLines } from './spawn.js';
import { waitFor } from './wait.js';

export const EC2_METADATA_MOCK = resolve(import.meta.dirname, '../../.bin/ec2-metadata-mock');

export interface Ec2MetadataOptions {
  readonly region: string;
  readonly role: string;
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
  readonly token: string;
  /** RFC 3339. */
  readonly expiration: string;
}

export interface Ec2Metadata {
  /** The value for AWS_EC2_METADATA_SERVICE_ENDPOINT. */
  readonly endpoint: string;
  readonly output: string[];
  stop(): Promise<void>;
}

/** Why the mock cannot run (with the fix), or null. */
export function ec2MetadataMissing(): string | null {
  try {
    accessSync(EC2_METADATA_MOCK, constants.X_OK);
    return null;
  } catch {
    return `${EC2_METADATA_MOCK} is missing: run \`bash scripts/install-ec2-metadata-mock.sh\` (builds it through the Go module proxy)`;
  }
}

export async function startEc2Metadata(o: Ec2MetadataOptions): Promise<Ec2Metadata> {
  const missing = ec2MetadataMissing();
  if (missing !== null) throw new Error(missing);
  const dir = mkdtempSync(join(tmpdir(), 'aemm-'));
  const config = join(dir, 'aemm-config.json');
  writeFileSync(
    config,
    JSON.stringify({
      metadata: {
        values: {
          'iam-security-credentials-role': o.role,
          'iam-security-credentials': {
            Code: 'Success',
            LastUpdated: '2026-01-01T00:00:00Z',
            Type: 'AWS-HMAC',
            AccessKeyId: o.accessKeyId,
            SecretAccessKey: o.secretAccessKey,
            Token: o.token,
            Expiration: o.expiration,
          },
          'placement-region': o.region,
        },
        paths: {
          'iam-security-credentials': `/latest/meta-data/iam/security-credentials/${o.role}`,
        },
      },
      dynamic: {
        values: {
          'instance-identity-document': {
            accountId: '0123456789',
            imageId: 'ami-0b69ea66ff7391e80',
            availabilityZone: `${o.region}a`,
            version: '2017-09-30',
            privateIp: '10.0.7.10',
            instanceId: 'i-1234567890abcdef0',
            architecture: 'x86_64',
            instanceType: 'm4.xlarge',
            region: o.region,
          },
        },
      },
    }),
  );
  const port = await freePort();
  // HOME: the mock also reads $HOME/aemm-config.json; point it at the test's folder.
  const proc = spawn(EC2_METADATA_MOCK, ['-n', '127.0.0.1', '-p', String(port), '-I', '-c', config], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, HOME: dir },
  });
  const lines = watchLines(proc, { label: 'ec2-metadata-mock', timeoutMs: 30_000 });
  const endpoint = `http://127.0.0.1:${port}`;
  await waitFor(
    () => `ec2-metadata-mock on port ${port} to answer; output:\n${lines.output.join('\n')}`,
    async () => {
      if (proc.exitCode !== null)
        throw new Error(`ec2-metadata-mock exited ${proc.exitCode}:\n${lines.output.join('\n')}`);
      try {
        const r = await fetch(`${endpoint}/latest/api/token`, {
          method: 'PUT',
          headers: { 'x-aws-ec2-metadata-token-ttl-seconds': '60' },
        });
        return r.status === 200;
      } catch {
        return false;
      }
    },
    { everyMs: 100, timeoutMs: 30_000 },
  );
  return {
    endpoint,
    output: lines.output,
    async stop() {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGTERM');
      await lines.exited;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
