/**
 * `require` for the CommonJS packages the server runs with (dns-packet, prom-client, pino, yaml).
 * Importing a CommonJS package from an ES module makes Node load its CommonJS export lexer, a
 * WebAssembly module that stays resident: ~7 MiB of RSS for nothing, on a process whose whole
 * baseline is ~60 MiB. Types still come from `import type`.
 */
import type * as HttpModule from 'node:http';
import type * as HttpsModule from 'node:https';
import type * as Http2Module from 'node:http2';
import type * as TlsModule from 'node:tls';
import { createRequire } from 'node:module';

export const requireCjs = createRequire(import.meta.url);

/**
 * `node:http` through `require`. An ES import of a built-in module reads every export to build the
 * module namespace, and on Node 24 `http.WebSocket` (with `CloseEvent`, `MessageEvent`) is a lazy
 * getter that loads Node's bundled undici: about 13 MiB of RSS in every process and query thread,
 * for a WebSocket client nothing here uses (docs/multicore.md §8). Import the types with
 * `import type * as http from 'node:http'` and call through this.
 */
export const nodeHttp: typeof HttpModule = requireCjs('node:http');

/**
 * `node:https` and `node:tls`, loaded on first use. Loading TLS costs about 4 MiB of RSS in every
 * isolate that does it, and a query thread needs it only when its Corefile forwards over TLS or
 * HTTPS; the API client and the side listeners that use it run in the main thread
 * (docs/multicore.md §2). Import the types with `import type` and call through these.
 */
export function nodeHttps(): typeof HttpsModule {
  return requireCjs('node:https') as typeof HttpsModule;
}

export function nodeTls(): typeof TlsModule {
  return requireCjs('node:tls') as typeof TlsModule;
}

/**
 * `node:http2`, loaded on first use: it loads `node:tls`, so the same holds as for nodeTls — only
 * a process or query thread that serves DoH (`https://`, src/server/doh.ts) or grpc://, or forwards
 * with the grpc plugin, pays for it.
 */
export function nodeHttp2(): typeof Http2Module {
  return requireCjs('node:http2') as typeof Http2Module;
}
