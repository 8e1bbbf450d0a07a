/**
 * tls: setup errors in CoreDNS 1.15.0's words (checked against the real binary), with file:line
 * also on file errors (docs/corefile.md §11), the material handed to the core, and ACME refused.
 * Serving: src/server/dot.test.ts and src/server/doh.test.ts.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { TLS_CONFIG } from '../../src/server/tlsconfig.js';
import { configError, dispenserFor, setupContext } from '../../test/helpers/setup.js';
import { makeTestPki } from '../../test/helpers/tls.js';
import { tls } from './index.js';

const pki = makeTestPki();
const setupErr = (text: string): string =>
  configError(() => tls.setup(dispenserFor(text, 'tls'), setupContext()), text).describe();

describe('tls setup', () => {
  it('rejects what CoreDNS rejects, with its wording', () => {
    const nope = join(pki.dir, 'nope.pem');
    const cases: [string, string][] = [
      [
        `tls ${pki.cert}`,
        `plugin/tls: plugin/tls: Corefile:1 - Error during parsing: Wrong argument count or unexpected line ending after '${pki.cert}'`,
      ],
      [
        `tls ${pki.cert} ${pki.key} ${pki.caCert} extra`,
        "plugin/tls: plugin/tls: Corefile:1 - Error during parsing: Wrong argument count or unexpected line ending after 'extra'",
      ],
      [
        `tls ${pki.cert} ${pki.key} {\n client_auth foo\n}`,
        "plugin/tls: Corefile:2 - Error during parsing: unknown authentication type 'foo'",
      ],
      [
        `tls ${pki.cert} ${pki.key} {\n client_auth\n}`,
        "plugin/tls: Corefile:2 - Error during parsing: Wrong argument count or unexpected line ending after 'client_auth'",
      ],
      [
        `tls ${pki.cert} ${pki.key} {\n bogus\n}`,
        "plugin/tls: Corefile:2 - Error during parsing: unknown option 'bogus'",
      ],
      [
        `tls ${nope} ${pki.key}`,
        `plugin/tls: Corefile:1 - Error during parsing: could not load TLS cert: open ${nope}: no such file or directory`,
      ],
      [
        `tls ${pki.cert} ${pki.key} ${nope}`,
        `plugin/tls: Corefile:1 - Error during parsing: error reading ${nope}: open ${nope}: no such file or directory`,
      ],
      [
        'tls {\n acme\n}',
        "plugin/tls: Corefile:2 - Error during parsing: Wrong argument count or unexpected line ending after 'acme'",
      ],
      ['tls {\n email a@b\n}', 'plugin/tls: Corefile:3 - Error during parsing: ACME requires at least one domain'],
      [
        'tls {\n acme dns.example.org\n}',
        'plugin/tls: Corefile:3 - Error during parsing: ACME certificate management is not available in clusterdns; give CERT KEY [CA] files instead',
      ],
    ];
    for (const [text, want] of cases) expect(setupErr(text)).toBe(want);
    // Switched files: OpenSSL's reason, never the PEM.
    const switched = setupErr(`tls ${pki.key} ${pki.cert}`);
    expect(switched).toMatch(/^plugin\/tls: Corefile:1 - Error during parsing: could not load TLS cert: /);
    expect(switched).not.toContain('BEGIN');
  });

  it('hands the files’ bytes and the client policy to the core', async () => {
    const ctx = setupContext();
    await tls.setup(
      dispenserFor(`tls ${pki.cert} ${pki.key} ${pki.caCert} {\n client_auth verify_if_given\n}`, 'tls'),
      ctx,
    );
    ctx.seal();
    const cfg = ctx.lookup(TLS_CONFIG)!;
    expect(cfg.cert.equals(pki.read(pki.cert))).toBe(true);
    expect(cfg.key.equals(pki.read(pki.key))).toBe(true);
    expect(cfg.ca?.equals(pki.read(pki.caCert))).toBe(true);
    expect(cfg.clientAuth).toBe('verify_if_given');
    expect(cfg.keyLog).toBeNull();
  });
});
