/**
 * `zoneFiles` end to end: the chart puts each zone file into the Corefile's ConfigMap and mounts it
 * beside the Corefile, so a server block's `file /etc/coredns/<filename>` reads it. The rendered
 * ConfigMap items are written where the volume would put them (the mount path rewritten to a
 * temporary directory) and clusterdns serves the zone from that Corefile.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { udpQuery } from '../helpers/dns.js';
import { rrLines } from '../helpers/records.js';
import { startServer } from '../helpers/server.js';
import { arr, at, container, corefileOf, isObject, one, render, str } from './helm.js';

const ZONE = `$ORIGIN example.com.
@ 3600 IN SOA sns.dns.icann.com. noc.dns.icann.com. 2015082541 7200 3600 1209600 3600
@ 3600 IN NS a.iana-servers.net.
@ 3600 IN A 192.168.99.102
* 3600 IN A 192.168.99.103
`;

const work = mkdtempSync(path.join(tmpdir(), 'clusterdns-zonefiles-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

describe('chart zoneFiles', () => {
  it('mounts the zone files where a `file` directive of the rendered Corefile reads them', async () => {
    const objs = render({
      values: {
        servers: [
          {
            zones: [{ zone: 'example.com.' }],
            port: 53,
            plugins: [{ name: 'errors' }, { name: 'file', parameters: '/etc/coredns/example.db example.com' }],
          },
        ],
        zoneFiles: [{ filename: 'example.db', domain: 'example.com', contents: ZONE }],
        // No health/ready side listeners (fixed ports) in this in-process server.
        livenessProbe: { enabled: false },
        readinessProbe: { enabled: false },
      },
    });
    const cm = one(objs, 'ConfigMap');
    const deploy = one(objs, 'Deployment');
    const mount = arr(container(deploy), 'volumeMounts').find((m) => isObject(m) && m.name === 'config-volume');
    const mountPath = str(mount, 'mountPath');
    const volume = arr(deploy, 'spec', 'template', 'spec', 'volumes').find(
      (v) => isObject(v) && v.name === 'config-volume',
    );
    // What the kubelet would put under the mount path: each listed ConfigMap key at its path.
    const root = path.join(work, 'etc-coredns');
    mkdirSync(root, { recursive: true });
    const items = arr(volume, 'configMap', 'items') as { key: string; path: string }[];
    expect(items.map((i) => i.path)).toEqual(['Corefile', 'example.db']);
    for (const i of items) writeFileSync(path.join(root, i.path), str(cm, 'data', i.key));
    const corefile = corefileOf(objs).replaceAll(`${mountPath}/`, `${root}/`).replace(/:53\b/g, '');
    expect(corefile).toContain(`file ${root}/example.db example.com`);
    expect(at(container(deploy), 'args')).toEqual(['-conf', `${mountPath}/Corefile`]);
    const srv = await startServer(corefile);
    try {
      const apex = await udpQuery(srv.port, 'example.com', 'A');
      expect(rrLines(apex.answers)).toEqual(['example.com. 3600 IN A 192.168.99.102']);
      const wild = await udpQuery(srv.port, 'any.example.com', 'A');
      expect(rrLines(wild.answers)).toEqual(['any.example.com. 3600 IN A 192.168.99.103']);
    } finally {
      await srv.stop();
    }
  });
});
