/**
 * root: relative file paths of the block's plugins (file, hosts, tls) found in the root folder,
 * absolute ones untouched, other blocks unaffected; the warning for a missing folder and CoreDNS's
 * errors.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { root } from './index.js';
import { resolveAgainstRoot } from '../../src/rootpath.js';
import { runCorefile } from '../../test/helpers/corefile.js';
import { captureLogs } from '../../test/helpers/logs.js';
import { rrLines } from '../../test/helpers/records.js';
import { configError, dispenserFor, setupContext } from '../../test/helpers/setup.js';

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'clusterdns-root-'));
  writeFileSync(
    join(dir, 'db.example.org'),
    '@ 3600 IN SOA ns.example.org. h.example.org. 1 7200 3600 1209600 300\n@ 3600 IN NS ns\nns 3600 IN A 192.0.2.53\n',
  );
  writeFileSync(join(dir, 'hosts'), '192.0.2.77 host.example.net\n');
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('root: paths', () => {
  it('Go filepath.Join for a relative path, unchanged for an absolute one or without root', () => {
    expect(resolveAgainstRoot('/etc/coredns', 'db.x')).toBe('/etc/coredns/db.x');
    expect(resolveAgainstRoot('zones/', './sub/../db.x')).toBe('zones/db.x');
    expect(resolveAgainstRoot('/etc/coredns', '/abs/db.x')).toBe('/abs/db.x');
    expect(resolveAgainstRoot('', 'db.x')).toBe('db.x');
    expect(resolveAgainstRoot('/a', 'dir/')).toBe('/a/dir');
  });

  it('file and hosts read their relative files from the root; another block is not affected', async () => {
    const run = await runCorefile(
      `example.org {\n  root ${dir}\n  file db.example.org\n}\nexample.net {\n  root ${dir}\n  hosts hosts\n}\n`,
    );
    try {
      expect(rrLines((await run.ask('ns.example.org.', 'A')).answers)).toEqual([
        'ns.example.org. 3600 IN A 192.0.2.53',
      ]);
      expect(rrLines((await run.ask('host.example.net.', 'A')).answers)).toEqual([
        'host.example.net. 3600 IN A 192.0.2.77',
      ]);
    } finally {
      await run.stop();
    }
    // Without root the same relative name is not found (from the working directory): no zone data.
    const bare = await runCorefile('example.org {\n  file db.example.org\n}\n');
    try {
      expect((await bare.ask('ns.example.org.', 'A')).flags! & 0xf).toBe(2);
    } finally {
      await bare.stop();
    }
  });
  it('forward, grpc and etcd read their TLS files from the root', async () => {
    for (const line of [
      'forward . tls://127.0.0.1 {\n    tls ca.pem\n  }',
      'grpc . 127.0.0.1:9 {\n    tls ca.pem\n  }',
      'etcd {\n    tls ca.pem\n  }',
    ]) {
      await expect(runCorefile(`example.org {\n  root ${dir}\n  ${line}\n}\n`), line).rejects.toThrow(`${dir}/ca.pem`);
    }
  });
});

describe('root: setup', () => {
  it("a missing folder is accepted with CoreDNS's warning", () => {
    const logs = captureLogs();
    try {
      expect(root.setup(dispenserFor(`root ${dir}/not-yet`, 'root'), setupContext({ plugin: 'root' }))).toBe(null);
      expect(logs.lines).toContain(`[WARNING] plugin/root: Root path does not exist: ${dir}/not-yet`);
    } finally {
      logs.restore();
    }
  });

  it.each([
    [
      'root',
      "plugin/root: Corefile:1 - Error during parsing: Wrong argument count or unexpected line ending after 'root'",
    ],
    [
      'root /a /b',
      "plugin/root: Corefile:1 - Error during parsing: Wrong argument count or unexpected line ending after '/b'",
    ],
  ])('%j', (text, message) => {
    expect(configError(() => root.setup(dispenserFor(text, 'root'), setupContext()), text).describe()).toBe(message);
  });

  it('another failure to stat the folder stops the start', () => {
    const text = `root ${dir}/hosts/sub`;
    expect(configError(() => root.setup(dispenserFor(text, 'root'), setupContext()), text).describe()).toBe(
      `plugin/root: Corefile:1 - Error during parsing: unable to access root path '${dir}/hosts/sub': stat ${dir}/hosts/sub: not a directory`,
    );
  });
});
