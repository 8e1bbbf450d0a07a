import { copyFileSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import * as https from 'node:https';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { prometheus } from './index.js';
import { loadWebConfig } from './webconfig.js';
import { freePort } from '../../test/helpers/net.js';
import { httpErrorCode, httpRequest } from '../../test/helpers/http.js';
import { dispenserFor, TestInstance } from '../../test/helpers/setup.js';
import { SharedResources } from '../../src/server/shared.js';

const testdata = fileURLToPath(new URL('./testdata/', import.meta.url));
const ca = readFileSync(join(testdata, 'ca.crt'));

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

function webConfig(body: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'webcfg-'));
  const file = join(dir, 'web.yml');
  writeFileSync(file, body);
  return file;
}

function httpsGet(port: number, o: { cert?: Buffer; key?: Buffer } = {}): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    https
      .get({ host: '127.0.0.1', port, path: '/metrics', ca, cert: o.cert, key: o.key, agent: false }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString() }));
      })
      .on('error', reject);
  });
}

async function serve(address: string, tlsFile: string): Promise<void> {
  const shared = new SharedResources();
  const inst = new TestInstance({ shared });
  await prometheus.setup(
    dispenserFor(`prometheus ${address} {\n tls ${tlsFile}\n}`, 'prometheus'),
    inst.context('prometheus'),
  );
  await inst.run('startup');
  await inst.run('serving');
  cleanups.push(() => inst.release());
}

describe('prometheus tls', () => {
  it('serves /metrics over TLS with the web-config certificate', async () => {
    const port = await freePort();
    const file = webConfig(
      `tls_server_config:\n  cert_file: ${join(testdata, 'server.crt')}\n  key_file: ${join(testdata, 'server.key')}\n`,
    );
    await serve(`127.0.0.1:${port}`, file);
    const r = await httpsGet(port);
    expect(r.status).toBe(200);
    expect(r.body).toContain('# TYPE coredns_build_info gauge');
    // Plain HTTP on the TLS port gets no metrics.
    expect(await httpErrorCode(port, '/metrics')).not.toBe('ok');
  });

  it('requires a client certificate signed by client_ca_file with RequireAndVerifyClientCert', async () => {
    const port = await freePort();
    // Relative file names resolve against the config file's directory.
    const file = webConfig(
      'tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n  client_ca_file: ca.crt\n  client_auth_type: RequireAndVerifyClientCert\n  min_version: TLS12\n',
    );
    for (const f of ['server.crt', 'server.key', 'ca.crt']) copyFileSync(join(testdata, f), join(dirname(file), f));
    await serve(`127.0.0.1:${port}`, file);
    await expect(httpsGet(port)).rejects.toThrow();
    const r = await httpsGet(port, {
      cert: readFileSync(join(testdata, 'client.crt')),
      key: readFileSync(join(testdata, 'client.key')),
    });
    expect(r.status).toBe(200);
  });

  it('rejects unusable web configs at start-up', async () => {
    const cases: [string, string][] = [
      ['basic_auth_users:\n  admin: $2y$10$abc\n', 'basic_auth_users is not supported'],
      ['tls_server_config:\n  key_file: x.key\n', 'missing cert_file'],
      ['tls_server_config:\n  cert_file: x.crt\n', 'missing key_file'],
      ['tls_server_config:\n  cert_file: /nonexistent/x.crt\n  key_file: x.key\n', 'ENOENT'],
      [
        `tls_server_config:\n  cert_file: ${join(testdata, 'server.crt')}\n  key_file: ${join(testdata, 'server.key')}\n  client_auth_type: Sometimes\n`,
        'invalid ClientAuth "Sometimes"',
      ],
      [
        `tls_server_config:\n  cert_file: ${join(testdata, 'server.crt')}\n  key_file: ${join(testdata, 'server.key')}\n  min_version: TLS99\n`,
        'unknown TLS version: TLS99',
      ],
      ['tls_server_config: [\n', 'parsing web config'],
      ['surprise: 1\n', 'unknown field "surprise"'],
    ];
    for (const [body, message] of cases) {
      await expect(loadWebConfig(webConfig(body)), message).rejects.toThrow(message);
    }
    const port = await freePort();
    await expect(serve(`127.0.0.1:${port}`, '/nonexistent/web.yml')).rejects.toThrow('plugin/prometheus: ');
  });

  it('switches an existing listener between HTTP and TLS on reload', async () => {
    const port = await freePort();
    const shared = new SharedResources();
    const plain = new TestInstance({ shared });
    await prometheus.setup(dispenserFor(`prometheus 127.0.0.1:${port}`, 'prometheus'), plain.context('prometheus'));
    await plain.run('startup');
    await plain.run('serving');
    expect((await httpRequest(port, '/metrics')).status).toBe(200);

    const file = webConfig(
      `tls_server_config:\n  cert_file: ${join(testdata, 'server.crt')}\n  key_file: ${join(testdata, 'server.key')}\n`,
    );
    const secure = new TestInstance({ shared });
    await prometheus.setup(
      dispenserFor(`prometheus 127.0.0.1:${port} {\n tls ${file}\n}`, 'prometheus'),
      secure.context('prometheus'),
    );
    await secure.run('startup');
    expect((await httpRequest(port, '/metrics')).status).toBe(200); // not switched before serving
    await secure.run('serving');
    await plain.release();
    cleanups.push(() => secure.release());
    expect((await httpsGet(port)).status).toBe(200);
  });
});
