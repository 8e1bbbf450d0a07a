/**
 * Where AWS credentials and the region come from (route53, and dnssec's `key aws_secretsmanager`), in the order aws-sdk-go-v2's
 * `config.LoadDefaultConfig` (config v1.33.7, which CoreDNS 1.15.0 pins) resolves them
 * (resolve_credentials.go, resolveCredentialChain and resolveCredsFromProfile):
 * 1. the deprecated `aws_access_key`;
 * 2. with `credentials PROFILE [FILENAME]`, that profile (its sources, below);
 * 3. `AWS_ACCESS_KEY_ID`/`AWS_SECRET_ACCESS_KEY`/`AWS_SESSION_TOKEN`;
 * 4. `AWS_WEB_IDENTITY_TOKEN_FILE` with `AWS_ROLE_ARN` (EKS IRSA) through STS;
 * 5. the profile `AWS_PROFILE` (or `default`): its static keys, its `web_identity_token_file`;
 *    else the container credentials (`AWS_CONTAINER_CREDENTIALS_RELATIVE_URI`, then `_FULL_URI`:
 *    ECS task roles, EKS Pod Identity); else the EC2 instance role from instance metadata.
 * The profile sources clusterdns does not implement (assumed roles: `source_profile`,
 * `credential_source`, `role_arn`; SSO; `login_session`; `credential_process`) fail the start with
 * a reason (README, "Authentication"). The region is `AWS_REGION`, `AWS_DEFAULT_REGION` or the
 * profile's, else instance metadata's, as CoreDNS's setup asks it.
 */
import { homedir } from 'node:os';
import { join } from 'node:path';
import { checkFullUri, containerCredentialsUrl, containerProvider } from './containercreds.js';
import { ImdsClient, ec2RoleProvider } from './imds.js';
import { type CredentialProvider, staticProvider } from './provider.js';
import { readAwsIni } from './sharedfiles.js';
import type { AwsCredentials } from './sigv4.js';
import { webIdentityProvider } from './webidentity.js';

export interface CredentialOptions {
  /** `aws_access_key ID SECRET`. */
  readonly staticKeys?: AwsCredentials;
  /** `credentials PROFILE`. */
  readonly profile?: string;
  /** `credentials PROFILE FILENAME`: the shared config files to read instead of ~/.aws/config. */
  readonly configFiles?: readonly string[];
}

export interface AwsConfig {
  readonly credentials: CredentialProvider;
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

export interface ResolveOptions {
  /** Logs a refresh that failed while the previous temporary keys still work. */
  readonly onStale?: (err: Error) => void;
  /** Deadline of one instance metadata attempt (tests shorten it). */
  readonly imdsTimeoutMs?: number;
  /**
   * Ask instance metadata for the region when none is configured (route53's setup does; a plain
   * `config.LoadDefaultConfig`, as dnssec's, does not: the region stays '' and the call fails).
   */
  readonly imdsRegion?: boolean;
}

/**
 * Resolve the credential source and the region; rejects with an Error saying what is missing or
 * unsupported. Temporary keys are fetched on first use (the first signed request), as the SDK does.
 */
export async function resolveAwsConfig(
  o: CredentialOptions,
  env: Env = process.env,
  ro: ResolveOptions = {},
): Promise<AwsConfig> {
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
  // A profile named in the Corefile or by AWS_PROFILE must exist (the SDK's
  // SharedConfigProfileNotExistError: with either, config v1.33.7 loads the shared files strictly).
  const named = o.profile ?? (env.AWS_PROFILE || undefined);
  if (named !== undefined && !o.staticKeys && creds === undefined && conf === undefined) {
    throw new Error(`failed to get shared config profile, ${named}`);
  }
  const imds = new ImdsClient({ env, ...(ro.imdsTimeoutMs ? { attemptTimeoutMs: ro.imdsTimeoutMs } : {}) });

  // The configured region; instance metadata is asked only after the credentials resolved (below).
  let region = env.AWS_REGION || env.AWS_DEFAULT_REGION || conf?.get('region') || '';

  const envKeys = (): AwsCredentials | null => {
    const id = env.AWS_ACCESS_KEY_ID || env.AWS_ACCESS_KEY;
    const secret = env.AWS_SECRET_ACCESS_KEY || env.AWS_SECRET_KEY;
    if (!id || !secret) return null;
    const token = env.AWS_SESSION_TOKEN;
    return token
      ? { accessKeyId: id, secretAccessKey: secret, sessionToken: token }
      : { accessKeyId: id, secretAccessKey: secret };
  };
  const stale = ro.onStale ? { onStale: ro.onStale } : {};
  const webIdentity = (tokenFile: string, roleArn: string, sessionName: string): CredentialProvider => {
    if (roleArn === '') throw new Error('role ARN is not set');
    return webIdentityProvider({ tokenFile, roleArn, sessionName, region, env, ...stale });
  };
  // The profile's own sources (resolveCredsFromProfile), first match wins.
  const fromProfile = async (): Promise<CredentialProvider> => {
    const p = new Map([...(conf ?? []), ...(creds ?? [])]);
    const unsupported = (what: string): Error =>
      new Error(
        `profile ${JSON.stringify(profile)} uses ${what}, which clusterdns does not support (plugins/route53/README.md, "Authentication")`,
      );
    if (p.has('source_profile')) throw unsupported('source_profile (an assumed role)');
    // role_arn beside anything but a web identity token file is a role assumed with other keys.
    if (p.has('role_arn') && !p.get('web_identity_token_file')) throw unsupported('role_arn (an assumed role)');
    const keys = profileKeys(creds) ?? profileKeys(conf);
    if (keys) return staticProvider(keys, 'SharedConfigCredentials');
    if (p.has('credential_source')) throw unsupported('credential_source (an assumed role)');
    const tokenFile = p.get('web_identity_token_file');
    if (tokenFile) return webIdentity(tokenFile, p.get('role_arn') ?? '', p.get('role_session_name') ?? '');
    if (p.has('sso_session') || p.has('sso_start_url')) throw unsupported('SSO');
    if (p.has('login_session')) throw unsupported('login_session');
    if (p.has('credential_process')) throw unsupported('credential_process');
    const container = containerCredentialsUrl(env);
    if (container !== null) {
      if (container.full) await checkFullUri(container.url);
      return containerProvider(container.url, env, ro.onStale);
    }
    return ec2RoleProvider(imds, ro.onStale);
  };

  let credentials: CredentialProvider;
  if (o.staticKeys) credentials = staticProvider(o.staticKeys, 'StaticCredentials');
  else if (o.profile !== undefined) credentials = await fromProfile();
  else {
    const keys = envKeys();
    if (keys) credentials = staticProvider(keys, 'EnvConfigCredentials');
    else if (env.AWS_WEB_IDENTITY_TOKEN_FILE) {
      credentials = webIdentity(
        env.AWS_WEB_IDENTITY_TOKEN_FILE,
        env.AWS_ROLE_ARN ?? '',
        env.AWS_ROLE_SESSION_NAME ?? '',
      );
    } else credentials = await fromProfile();
  }
  if (region === '' && ro.imdsRegion !== false) {
    // aws-sdk-go-v2 has no default region; CoreDNS's route53 setup then asks the instance metadata.
    try {
      region = await imds.region();
    } catch (e) {
      throw new Error(`failed to get region from IMDS: ${(e as Error).message}`);
    }
  }
  return { credentials, region };
}
