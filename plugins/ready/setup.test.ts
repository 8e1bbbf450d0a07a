import { describe, expect, it } from 'vitest';
import { configError, dispenserFor } from '../../test/helpers/setup.js';
import { parseReady } from './setup.js';

describe('ready setup', () => {
  const ok: [string, string, string][] = [
    ['ready', ':8181', 'until-ready'],
    ['ready :9191', ':9191', 'until-ready'],
    ['ready 127.0.0.1:8181', '127.0.0.1:8181', 'until-ready'],
    ['ready {\n monitor continuously\n}', ':8181', 'continuously'],
    ['ready :8181 {\n monitor until-ready\n}', ':8181', 'until-ready'],
  ];
  for (const [text, address, monitor] of ok) {
    it(`accepts ${JSON.stringify(text)}`, () => {
      expect(parseReady(dispenserFor(text, 'ready'))).toEqual({ address, monitor });
    });
  }
  const bad: [string, string][] = [
    ['ready 8181', 'address 8181: missing port in address'],
    ['ready :1 :2', "Wrong argument count or unexpected line ending after ':2'"],
    ['ready {\n monitor sometimes\n}', "monitor type 'sometimes' not supported"],
    ['ready {\n monitor\n}', "Wrong argument count or unexpected line ending after 'monitor'"],
    ['ready {\n monitor a b\n}', "Wrong argument count or unexpected line ending after 'b'"],
    ['ready {\n what\n}', "unknown property 'what'"],
    ['ready\nready', 'this plugin can only be used once per Server Block'],
  ];
  for (const [text, message] of bad) {
    it(`rejects ${JSON.stringify(text)}`, () => {
      const e = configError(() => parseReady(dispenserFor(text, 'ready')), text);
      expect(e.message).toBe(message);
      expect(e.plugin).toBe('ready');
    });
  }
});
