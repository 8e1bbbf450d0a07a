/**
 * `require` for the CommonJS packages the server runs with (dns-packet, prom-client, pino, yaml).
 * Importing a CommonJS package from an ES module makes Node load its CommonJS export lexer, a
 * WebAssembly module that stays resident: ~7 MiB of RSS for nothing, on a process whose whole
 * baseline is ~60 MiB. Types still come from `import type`.
 */
import { createRequire } from 'node:module';

export const requireCjs = createRequire(import.meta.url);
