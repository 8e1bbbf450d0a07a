/**
 * The `tls` directive (README.md): the certificate, key and client-CA of the block's encrypted
 * listeners (DoT `tls://`, DoH `https://`, gRPC `grpc://`), given to the core as TLS_CONFIG
 * (src/server/tlsconfig.ts). Setup only: no handler.
 *
 * The files are read and checked here, as CoreDNS's parseTLS does, so that a missing or mismatched
 * file is a start-up and `-validate` error, and a reload reads them again. Unlike CoreDNS, file
 * errors carry the directive's file:line (docs/corefile.md §11). Error texts are Node's, never the
 * file contents. ACME (`tls` without files) is parsed with CoreDNS's option checks and then
 * refused: clusterdns has no ACME client.
 */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { directive, file, oneOf, option, str } from '../../src/corefile/options.js';
import { ConfigError } from '../../src/corefile/types.js';
import type { Dispenser } from '../../src/corefile/dispenser.js';
import type { PluginDef } from '../../src/plugin.js';
import { nodeTls } from '../../src/util/require.js';
import { TLS_CONFIG, serverTlsOptions, type ClientAuth, type TlsServerConfig } from '../../src/server/tlsconfig.js';

const CLIENT_AUTH: readonly ClientAuth[] = ['nocert', 'request', 'require', 'verify_if_given', 'require_and_verify'];
const ACME_OPTIONS = ['acme', 'email', 'ca', 'storage', 'ca_root', 'resolver'];

export const TLS_DIRECTIVE = directive('tls', {
  args: { rest: file('CERT KEY [CA]'), min: 0, max: 3 },
  options: [
    option('client_auth', { args: [oneOf(CLIENT_AUTH)] }),
    option('keylog', { args: [file()] }),
    option('acme', { rest: str('DOMAIN'), min: 1 }),
    option('email', { args: [str('EMAIL')] }),
    option('ca', { args: [str('URL')] }),
    option('storage', { args: [file('DIRECTORY')] }),
    option('ca_root', { args: [file()] }),
    option('resolver', { args: [str('ADDRESS')] }),
  ],
});

/** The file's bytes, or CoreDNS's wording of the failure (Go's `open PATH: …`). */
function readPem(path: string, what: (msg: string) => string): Buffer {
  try {
    return readFileSync(path);
  } catch (e) {
    const err = e as NodeJS.ErrnoException;
    const reason =
      err.code === 'ENOENT' ? 'no such file or directory' : err.code === 'EACCES' ? 'permission denied' : err.message;
    throw new Error(what(`open ${path}: ${reason}`));
  }
}

function parseManual(d: Dispenser, given: string[], resolvePath: (p: string) => string): TlsServerConfig {
  // CERT, KEY and CA, and keylog's file, relative to the block's root (the `root` plugin).
  const args = given.map(resolvePath);
  // CoreDNS wraps this one argument error in plugin.Error twice.
  if (args.length < 2 || args.length > 3) {
    const e = d.argErr();
    throw new ConfigError(e.message, e.file, e.line, 'tls: plugin/tls');
  }
  let clientAuth: ClientAuth = 'nocert';
  let keyLog: string | null = null;
  while (d.nextBlock()) {
    const name = d.val();
    if (name === 'client_auth') {
      const a = d.remainingArgs();
      if (a.length !== 1) throw d.argErr();
      if (!(CLIENT_AUTH as readonly string[]).includes(a[0]!)) throw d.err(`unknown authentication type '${a[0]}'`);
      clientAuth = a[0] as ClientAuth;
    } else if (name === 'keylog') {
      const a = d.remainingArgs();
      if (a.length !== 1) throw d.argErr();
      keyLog = resolve(resolvePath(a[0]!));
    } else {
      throw d.err(`unknown option '${name}'`);
    }
  }
  const [certPath, keyPath, caPath] = args as [string, string, string | undefined];
  const cert = readPem(certPath, (m) => `could not load TLS cert: ${m}`);
  const key = readPem(keyPath, (m) => `could not load TLS cert: ${m}`);
  const ca = caPath === undefined ? null : readPem(caPath, (m) => `error reading ${caPath}: ${m}`);
  if (ca && !ca.includes('-----BEGIN CERTIFICATE-----'))
    throw new Error(`could not read root certs: no certificate in ${caPath}`);
  const cfg: TlsServerConfig = { cert, key, ca, clientAuth, keyLog };
  try {
    nodeTls().createSecureContext(serverTlsOptions(cfg));
  } catch (e) {
    // Node's OpenSSL reason (`key values mismatch`, `no start line`), never the PEM itself.
    const reason = (e as Error).message;
    throw new Error(
      ca && /certificate|x509/i.test(reason) && !/key/i.test(reason)
        ? `could not read root certs: ${reason}`
        : `could not load TLS cert: ${reason}`,
    );
  }
  return cfg;
}

/** `tls { acme … }`: CoreDNS's option checks, then a clear refusal. */
function parseAcme(d: Dispenser): never {
  const seen = new Set<string>();
  let domains = 0;
  while (d.nextBlock()) {
    const name = d.val();
    const a = d.remainingArgs();
    if (seen.has(name)) throw d.err(`ACME option ${JSON.stringify(name)} can only be specified once`);
    seen.add(name);
    if (!ACME_OPTIONS.includes(name)) throw d.err(`unknown ACME option ${JSON.stringify(name)}`);
    if (name === 'acme') {
      if (a.length === 0) throw d.argErr();
      domains = a.length;
    } else if (a.length !== 1) throw d.argErr();
  }
  if (domains === 0) throw d.err('ACME requires at least one domain');
  throw d.err('ACME certificate management is not available in clusterdns; give CERT KEY [CA] files instead');
}

export const tls: PluginDef = {
  name: 'tls',
  repeat: 'all',
  options: TLS_DIRECTIVE,
  setup(d, ctx) {
    let cfg: TlsServerConfig | null = null;
    while (d.next()) {
      const args = d.remainingArgs();
      if (args.length === 0) parseAcme(d);
      const line = d.token();
      try {
        cfg = parseManual(d, args, ctx.resolvePath);
      } catch (e) {
        if (e instanceof ConfigError) throw e;
        throw new ConfigError((e as Error).message, line?.file, line?.line, 'tls');
      }
      if (cfg.keyLog) ctx.log.warning(`Writing TLS Key Log to ${JSON.stringify(cfg.keyLog)}`);
    }
    if (cfg) ctx.provide(TLS_CONFIG, cfg);
    return null;
  },
};
