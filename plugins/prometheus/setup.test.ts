import { describe, expect, it } from 'vitest';
import { configError, dispenserFor } from '../../test/helpers/setup.js';
import { parsePrometheus } from './setup.js';

describe('prometheus setup', () => {
  const ok: [string, string, boolean, string][] = [
    ['prometheus', 'localhost:9153', false, ''],
    ['prometheus :9153', ':9153', false, ''],
    ['prometheus 0.0.0.0:9153', '0.0.0.0:9153', false, ''],
    ['prometheus {\n runtime_metrics\n}', 'localhost:9153', true, ''],
    ['prometheus :9253 {\n tls /etc/web.yml\n runtime_metrics\n}', ':9253', true, '/etc/web.yml'],
  ];
  for (const [text, address, runtimeMetrics, tlsConfigPath] of ok) {
    it(`accepts ${JSON.stringify(text)}`, () => {
      expect(parsePrometheus(dispenserFor(text, 'prometheus'))).toEqual({ address, runtimeMetrics, tlsConfigPath });
    });
  }
  const bad: [string, string][] = [
    ['prometheus 9153', 'address 9153: missing port in address'],
    ['prometheus localhost', 'address localhost: missing port in address'],
    ['prometheus :1 :2', "Wrong argument count or unexpected line ending after ':2'"],
    ['prometheus {\n bogus\n}', 'unknown option: bogus'],
    ['prometheus {\n tls a.yml\n tls b.yml\n}', 'tls block already specified'],
    ['prometheus {\n tls\n}', "Wrong argument count or unexpected line ending after 'tls'"], // CoreDNS: c.ArgErr()
    ['prometheus {\n tls a b\n}', "Wrong argument count or unexpected line ending after 'b'"],
    ['prometheus {\n runtime_metrics yes\n}', "Wrong argument count or unexpected line ending after 'yes'"],
    ['prometheus\nprometheus :9154', 'this plugin can only be used once per Server Block'],
  ];
  for (const [text, message] of bad) {
    it(`rejects ${JSON.stringify(text)}`, () => {
      const e = configError(() => parsePrometheus(dispenserFor(text, 'prometheus')), text);
      expect(e.message).toBe(message);
      expect(e.plugin).toBe('prometheus');
    });
  }
});
