/**
 * The GCE metadata client against local stand-ins: the token call's path, scopes and header, the
 * library's errors for "not defined", a bad status and a refused connection, and OnGCE trusting
 * GCE_METADATA_HOST without probing (tests never probe 169.254.169.254 or the host's resolver).
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { computeToken, getMetadata, onGce } from './metadata.js';

const cleanups: (() => void | Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

describe('GCE metadata server', () => {
  it('fetches the default service account token with the scopes and Metadata-Flavor', async () => {
    const seen: string[] = [];
    let status = 200;
    const server = createServer((req, res) => {
      seen.push(`${req.url} ${req.headers['metadata-flavor'] ?? '-'}`);
      if (req.url?.startsWith('/computeMetadata/v1/instance/service-accounts/default/token') && status === 200) {
        res
          .writeHead(200, { 'metadata-flavor': 'Google' })
          .end('{"access_token":"ya29.x","expires_in":3599,"token_type":"Bearer"}');
        return;
      }
      res.writeHead(req.url?.includes('token') ? status : 404).end('nope');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    cleanups.push(() => new Promise<void>((r) => server.close(() => r())));
    const env = { GCE_METADATA_HOST: `127.0.0.1:${(server.address() as AddressInfo).port}` };
    expect(await onGce(env)).toBe(true);
    expect(await computeToken(['https://a/s1', 'https://a/s2'], env)).toEqual({ token: 'ya29.x', expiresIn: 3599 });
    expect(seen).toEqual([
      '/computeMetadata/v1/instance/service-accounts/default/token?scopes=https%3A%2F%2Fa%2Fs1%2Chttps%3A%2F%2Fa%2Fs2 Google',
    ]);
    await expect(getMetadata('project/project-id', env)).rejects.toThrow(
      'metadata: GCE metadata "project/project-id" not defined',
    );
    status = 403;
    await expect(computeToken([], env)).rejects.toThrow(
      'credentials: cannot fetch token: compute: Received 403 `nope`',
    );
    await expect(computeToken([], { GCE_METADATA_HOST: '127.0.0.1:1' })).rejects.toThrow(
      'credentials: cannot fetch token: Get "http://127.0.0.1:1/computeMetadata/v1/instance/service-accounts/default/token": dial tcp 127.0.0.1:1: connect: connection refused',
    );
  });
});
