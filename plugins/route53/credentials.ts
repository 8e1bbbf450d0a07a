/**
 * Where route53's AWS credentials and region come from, in the order aws-sdk-go-v2's
 * `config.LoadDefaultConfig` (which CoreDNS 1.15.0 uses) looks: the deprecated `aws_access_key`;
 * with `credentials PROFILE [FILENAME]`, that profile; else the environment
 * (`AWS_ACCESS_KEY_ID`/`AWS_SECRET_ACCESS_KEY`/`AWS_SESSION_TOKEN`); else the profile `AWS_PROFILE`
 * (or `default`) of the shared credentials and config files. What clusterdns does not do (EC2
 * instance metadata, web identity, SSO, `credential_process`, assumed roles) fails the start with
 * a reason (README, "Authentication").
 */
import { homedir } from 'node:os';
import { join } from 'node:path';
import { readAwsIni } from '../../src/aws/sharedfiles.js';
import type { AwsCredentials } from '../../src/aws/sigv4.js';

export interface CredentialOptions {
  /** `aws_access_key ID SECRET`. */
  readonly staticKeys?: AwsCredentials;
  /** `credentials PROFILE`. */
  readonly profile?: string;
  /** `credentials PROFILE FILENAME`: the shared config files to read instead of ~/.aws/config. */
  readonly configFiles?: readonly string[];
}

export interface AwsConfig {
  readonly credentials: AwsCredentials;
  readonly region: string;
}

type Env = Readonly<Record<string, string | undefined>>;

function profileKeys(p: Map<string, string> | undefined): AwsCredentials | null {
  const id = p?.get('aws_access_key_id');
  const secret = p?.get('aws_secret_access_key');
  if (!id || !secret) return null;
  const token = p?.get('aws_session_token');
  return token
    ? { accessKeyId: id, secretAccessKey: secret, sessionToken: token }
    : { accessKeyId: id, secretAccessKey: secret };
}

/** Resolve credentials and region; throws an Error saying what is missing. */
export function resolveAwsConfig(o: CredentialOptions, env: Env = process.env): AwsConfig {
  const home = env.HOME ?? homedir();
  const credFile = env.AWS_SHARED_CREDENTIALS_FILE || join(home, '.aws', 'credentials');
  const configFiles = o.configFiles ?? [env.AWS_CONFIG_FILE || join(home, '.aws', 'config')];
  const profile = o.profile ?? (env.AWS_PROFILE || 'default');
  const creds = readAwsIni(credFile).get(profile);
  let conf: Map<string, string> | undefined;
  for (const f of configFiles) {
    const p = readAwsIni(f, true).get(profile);
    if (p) conf = new Map([...(conf ?? []), ...p]);
  }

  const region = env.AWS_REGION || env.AWS_DEFAULT_REGION || conf?.get('region') || '';
  if (region === '') {
    // aws-sdk-go-v2 has no default region; CoreDNS then asks the EC2 instance metadata service.
    throw new Error(
      'failed to get region from IMDS: no region configured (set AWS_REGION; clusterdns does not query EC2 instance metadata)',
    );
  }

  const envKeys = (): AwsCredentials | null => {
    const id = env.AWS_ACCESS_KEY_ID || env.AWS_ACCESS_KEY;
    const secret = env.AWS_SECRET_ACCESS_KEY || env.AWS_SECRET_KEY;
    if (!id || !secret) return null;
    const token = env.AWS_SESSION_TOKEN;
    return token
      ? { accessKeyId: id, secretAccessKey: secret, sessionToken: token }
      : { accessKeyId: id, secretAccessKey: secret };
  };
  const fromProfile = (): AwsCredentials | null => profileKeys(creds) ?? profileKeys(conf);

  let credentials: AwsCredentials | null;
  if (o.staticKeys) credentials = o.staticKeys;
  else if (o.profile !== undefined) credentials = fromProfile();
  else credentials = envKeys() ?? fromProfile();
  if (credentials === null) {
    throw new Error(
      `failed to refresh cached credentials, no static keys for profile ${JSON.stringify(profile)} in ${credFile} or the shared config (clusterdns does not use EC2 instance roles, web identity or SSO)`,
    );
  }
  return { credentials, region };
}
