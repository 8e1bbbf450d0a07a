/** The AWS shared-files reader as aws-sdk-go-v2's internal/ini reads: lower-cased keys, repeated sections merged, comments, CRLF. */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readAwsIni } from './sharedfiles.js';

describe('AWS shared files', () => {
  it('reads sections as the Go SDK: keys lower-cased, repeats merged, comments dropped', () => {
    const dir = mkdtempSync(join(tmpdir(), 'aws-ini-'));
    try {
      const path = join(dir, 'config');
      writeFileSync(
        path,
        '# a comment\r\n[default]\r\nRegion = eu-west-1 ; trailing\r\n[profile dev]\nregion=us-east-2\n[default]\naws_access_key_id=A\n',
      );
      const raw = readAwsIni(path);
      expect(raw.get('default')).toEqual(
        new Map([
          ['region', 'eu-west-1'],
          ['aws_access_key_id', 'A'],
        ]),
      );
      expect(raw.get('profile dev')?.get('region')).toBe('us-east-2');
      expect(readAwsIni(path, true).get('dev')?.get('region')).toBe('us-east-2');
      expect(readAwsIni(join(dir, 'missing')).size).toBe(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
