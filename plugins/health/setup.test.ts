import { describe, expect, it } from 'vitest';
import { configError, dispenserFor } from '../../test/helpers/setup.js';
import { parseHealth } from './setup.js';

describe('health setup', () => {
  const ok: [string, string, number][] = [
    ['health', ':8080', 0],
    ['health :8091', ':8091', 0],
    ['health localhost:8091', 'localhost:8091', 0],
    ['health 0.0.0.0:8080', '0.0.0.0:8080', 0],
    ['health [::1]:8080', '[::1]:8080', 0],
    ['health {\n lameduck 5s\n}', ':8080', 5000],
    ['health :8080 {\n lameduck 1m30s\n}', ':8080', 90_000],
    ['health {\n lameduck 500ms\n}', ':8080', 500],
    ['health :8081\nhealth :8082', ':8082', 0], // repeated: the last address wins
    ['health :8081 {\n lameduck 2s\n}\nhealth', ':8081', 2000], // a bare repeat keeps the address
    ['health {\n}', ':8080', 0],
  ];
  for (const [text, address, lameduckMs] of ok) {
    it(`accepts ${JSON.stringify(text)}`, () => {
      expect(parseHealth(dispenserFor(text, 'health'))).toEqual({ address, lameduckMs });
    });
  }
  const bad: [string, string][] = [
    ['health 8080', 'address 8080: missing port in address'],
    ['health localhost', 'address localhost: missing port in address'],
    ['health ::1:8080', 'address ::1:8080: too many colons in address'],
    ['health [::1]', 'address [::1]: missing port in address'],
    ['health :8080 :8081', "Wrong argument count or unexpected line ending after ':8081'"],
    ['health {\n lameduck\n}', "Wrong argument count or unexpected line ending after 'lameduck'"],
    ['health {\n lameduck 1s 2s\n}', "Wrong argument count or unexpected line ending after '2s'"],
    ['health {\n lameduck 5\n}', `unable to parse lameduck duration value: '5' : time: missing unit in duration "5"`],
    [
      'health {\n lameduck 5x\n}',
      `unable to parse lameduck duration value: '5x' : time: unknown unit "x" in duration "5x"`,
    ],
    ['health {\n lameduck abc\n}', `unable to parse lameduck duration value: 'abc' : time: invalid duration "abc"`],
    ['health {\n unknown 1\n}', "unknown property 'unknown'"],
  ];
  for (const [text, message] of bad) {
    it(`rejects ${JSON.stringify(text)}`, () => {
      const e = configError(() => parseHealth(dispenserFor(text, 'health')), text);
      expect(e.message).toBe(message);
      expect(e.plugin).toBe('health');
      expect(e.file).toBe('Corefile');
    });
  }
  it('reports the line of the bad property', () => {
    expect(
      configError(() => parseHealth(dispenserFor('health {\n\n bogus\n}', 'health')), 'health {\n\n bogus\n}').line,
    ).toBe(3);
  });
});
