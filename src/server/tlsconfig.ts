/**
 * The TLS material of a server block (the `tls` plugin's `CERT KEY [CA]` and `client_auth`), as the
 * core's DoT and DoH listeners use it (docs/corefile.md §7.5). The plugin reads the files at setup,
 * so a reload (SIGUSR1, the reload plugin) reads them again and a listener kept across the reload
 * takes the new material for its next handshakes. Certificates and keys are bytes here and never
 * formatted into a message.
 */
import type * as tls from 'node:tls';
import { capability } from '../capabilities.js';

/** Go's tls.ClientAuthType values, by the names the Corefile uses. */
export type ClientAuth = 'nocert' | 'request' | 'require' | 'verify_if_given' | 'require_and_verify';

export interface TlsServerConfig {
  /** PEM certificate chain. */
  readonly cert: Buffer;
  /** PEM private key. */
  readonly key: Buffer;
  /** PEM CAs that verify client certificates; null = the system roots (CoreDNS: RootCAs nil). */
  readonly ca: Buffer | null;
  readonly clientAuth: ClientAuth;
  /** Absolute path of the NSS key log file (`keylog`), or null. */
  readonly keyLog: string | null;
}

export const TLS_CONFIG = capability<TlsServerConfig>('core.tls');

/**
 * The options of a server-side secure context: TLS 1.2 at least, as CoreDNS's `setTLSDefaults`;
 * a client certificate requested for every mode but `nocert`; only `require_and_verify` lets
 * OpenSSL reject an unverified one during the handshake (the other modes are checked after it,
 * `clientAuthorized`).
 */
export function serverTlsOptions(cfg: TlsServerConfig, alpn?: string[]): tls.TlsOptions {
  const opts: tls.TlsOptions = {
    cert: cfg.cert,
    key: cfg.key,
    minVersion: 'TLSv1.2',
    requestCert: cfg.clientAuth !== 'nocert',
    rejectUnauthorized: cfg.clientAuth === 'require_and_verify',
  };
  if (cfg.ca) opts.ca = cfg.ca;
  if (alpn) opts.ALPNProtocols = alpn;
  return opts;
}

/**
 * After the handshake: may this client go on under `mode`? `require` wants some certificate,
 * `verify_if_given` a verified one when one was given (Go's RequireAnyClientCert and
 * VerifyClientCertIfGiven); the others were settled by the handshake.
 */
export function clientAuthorized(s: tls.TLSSocket, mode: ClientAuth): boolean {
  if (mode === 'require') return hasPeerCert(s);
  if (mode === 'verify_if_given') return !hasPeerCert(s) || s.authorized;
  return true;
}

function hasPeerCert(s: tls.TLSSocket): boolean {
  const c = s.getPeerCertificate();
  return c !== null && typeof c === 'object' && Object.keys(c).length > 0;
}

/**
 * Two blocks sharing one encrypted listener must agree on its TLS (CoreDNS's `sharedTLSConfig`):
 * the handshake happens before the zone is known. The reason a pair differs, or null.
 */
export function tlsConfigConflict(a: TlsServerConfig | null, b: TlsServerConfig | null): string | null {
  if (a === null || b === null) return a === b ? null : 'TLS is configured for only one server block';
  if (a.clientAuth !== b.clientAuth) return 'client authentication policies differ';
  if (!sameBytes(a.ca, b.ca)) return 'client CA pools differ';
  if (!a.cert.equals(b.cert) || !a.key.equals(b.key)) return 'server certificates differ';
  return null;
}

function sameBytes(a: Buffer | null, b: Buffer | null): boolean {
  return a === null || b === null ? a === b : a.equals(b);
}
