/**
 * The `tls CONFIG_FILE` of prometheus: a Prometheus exporter-toolkit web-config YAML, e.g.
 *
 *   tls_server_config:
 *     cert_file: server.crt
 *     key_file: server.key
 *     client_auth_type: RequireAndVerifyClientCert
 *     client_ca_file: ca.crt
 *     min_version: TLS12
 *
 * Relative file names are resolved against the directory of the config file (as the toolkit does).
 * Supported: cert_file, key_file, client_ca_file, client_auth_type, min_version, max_version.
 * `basic_auth_users` and inline `cert`/`key` are rejected rather than silently ignored.
 */
import { readFile } from 'node:fs/promises';
import * as path from 'node:path';
import type * as https from 'node:https';
import type * as tls from 'node:tls';
import type * as Yaml from 'yaml';
import { requireCjs } from '../../src/util/require.js';

/** The YAML parser, loaded when a web config is read: ~8 MiB of RSS that query threads never need. */
function parseYaml(text: string): unknown {
  return (requireCjs('yaml') as typeof Yaml).parse(text);
}

const TLS_VERSIONS: Record<string, tls.SecureVersion> = {
  TLS10: 'TLSv1',
  TLS11: 'TLSv1.1',
  TLS12: 'TLSv1.2',
  TLS13: 'TLSv1.3',
};

const AUTH_TYPES = new Set([
  'NoClientCert',
  'RequestClientCert',
  'RequireAnyClientCert',
  'VerifyClientCertIfGiven',
  'RequireAndVerifyClientCert',
]);

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function str(obj: Record<string, unknown>, key: string): string | undefined {
  const v = obj[key];
  if (v === undefined || v === null || v === '') return undefined;
  if (typeof v !== 'string') throw new Error(`${key} must be a string`);
  return v;
}

/** Read and validate a web-config file; returns the https server options. */
export async function loadWebConfig(file: string): Promise<https.ServerOptions> {
  const text = await readFile(file, 'utf8');
  let doc: unknown;
  try {
    doc = parseYaml(text);
  } catch (e) {
    throw new Error(`parsing web config ${file}: ${(e as Error).message}`);
  }
  doc ??= {};
  if (!isRecord(doc)) throw new Error(`parsing web config ${file}: not a mapping`);
  for (const key of Object.keys(doc)) {
    if (key === 'basic_auth_users') throw new Error(`web config ${file}: basic_auth_users is not supported`);
    if (key !== 'tls_server_config' && key !== 'http_server_config')
      throw new Error(`web config ${file}: unknown field ${JSON.stringify(key)}`);
  }
  const t = doc.tls_server_config;
  if (!isRecord(t)) throw new Error(`web config ${file}: tls_server_config is required`);
  const dir = path.dirname(file);
  const resolve = (p: string): string => (path.isAbsolute(p) ? p : path.join(dir, p));
  if (str(t, 'cert') !== undefined || str(t, 'key') !== undefined)
    throw new Error(`web config ${file}: inline cert/key are not supported, use cert_file/key_file`);
  const certFile = str(t, 'cert_file');
  const keyFile = str(t, 'key_file');
  if (certFile === undefined) throw new Error(`web config ${file}: missing cert_file`);
  if (keyFile === undefined) throw new Error(`web config ${file}: missing key_file`);
  const opts: https.ServerOptions = {
    cert: await readFile(resolve(certFile)),
    key: await readFile(resolve(keyFile)),
  };
  const caFile = str(t, 'client_ca_file');
  const auth = str(t, 'client_auth_type') ?? (caFile !== undefined ? 'RequireAndVerifyClientCert' : 'NoClientCert');
  if (!AUTH_TYPES.has(auth)) throw new Error(`web config ${file}: invalid ClientAuth ${JSON.stringify(auth)}`);
  if (caFile !== undefined) opts.ca = await readFile(resolve(caFile));
  if (auth === 'RequireAndVerifyClientCert' || auth === 'VerifyClientCertIfGiven') {
    if (caFile === undefined) throw new Error(`web config ${file}: client_ca_file is required for ${auth}`);
    opts.requestCert = true;
    opts.rejectUnauthorized = auth === 'RequireAndVerifyClientCert';
  } else if (auth === 'RequestClientCert' || auth === 'RequireAnyClientCert') {
    opts.requestCert = true;
    opts.rejectUnauthorized = false;
  }
  for (const [key, field] of [
    ['min_version', 'minVersion'],
    ['max_version', 'maxVersion'],
  ] as const) {
    const v = str(t, key);
    if (v === undefined) continue;
    const mapped = TLS_VERSIONS[v];
    if (mapped === undefined) throw new Error(`web config ${file}: unknown TLS version: ${v}`);
    opts[field] = mapped;
  }
  if (opts.minVersion === undefined) opts.minVersion = 'TLSv1.2';
  return opts;
}
