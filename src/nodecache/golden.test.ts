/**
 * The generated Corefile and the rules against golden files derived from upstream node-cache's
 * source (test/fixtures/node-cache/upstream/README.md says how), and the ConfigMap reading.
 */
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { generateCorefile } from './corefile.js';
import { EMPTY_KUBE_DNS_CONFIG, parseKubeDnsConfig, readConfigDir } from './kubednsconfig.js';
import { iptablesLines, nftTable, nodeCacheRules } from './rules.js';

const DIR = resolve(import.meta.dirname, '../../test/fixtures/node-cache/upstream');
const read = (name: string): string => readFileSync(join(DIR, name), 'utf8');
const LOCAL = ['169.254.20.10', '10.96.0.10'];

describe('node-cache Corefile', () => {
  it('without a kube-dns ConfigMap: upstreams from /etc/resolv.conf', () => {
    const g = generateCorefile({
      base: read('Corefile.base'),
      localIPs: LOCAL,
      port: 53,
      clusterDNS: '10.96.0.11',
      kubeDns: EMPTY_KUBE_DNS_CONFIG,
    });
    expect(g.text).toBe(read('Corefile.resolvconf.golden'));
    expect(g.upstreamServers).toBe('/etc/resolv.conf');
  });

  it('with upstreamNameservers and stubDomains from the mounted ConfigMap', () => {
    const { data, version } = readConfigDir(join(DIR, 'kube-dns'));
    expect(version).toMatch(/^[0-9a-f]{64}$/);
    const g = generateCorefile({
      base: read('Corefile.base'),
      localIPs: LOCAL,
      port: 53,
      clusterDNS: '10.96.0.11',
      kubeDns: parseKubeDnsConfig(data),
    });
    expect(g.text).toBe(read('Corefile.kubedns.golden'));
    // The template's `.:53` block forwards over UDP already (no force_tcp block to replace).
    expect(g.noTcpBlock).toBe(true);
  });

  it('turns a force_tcp upstream block into UDP for custom upstreams, as upstream does', () => {
    const base = '.:53 {\n    forward . __PILLAR__UPSTREAM__SERVERS__ {\n            force_tcp\n    }\n}\n';
    const kubeDns = { stubDomains: {}, upstreamNameservers: ['192.0.2.53'] };
    const g = generateCorefile({ base, localIPs: ['169.254.20.10'], port: 53, clusterDNS: null, kubeDns });
    expect(g.text).toBe('.:53 {\n    forward . 192.0.2.53\n}\n');
    expect(g.noTcpBlock).toBe(false);
  });

  it('ignores an invalid ConfigMap with upstream validation reasons', () => {
    expect(() => parseKubeDnsConfig({ upstreamNameservers: '["a","b","c","d"]' })).toThrow(/more than three/);
    expect(() => parseKubeDnsConfig({ upstreamNameservers: '["example.com"]' })).toThrow(/missing port/);
    expect(() => parseKubeDnsConfig({ stubDomains: '{"Bad_Domain":["1.2.3.4"]}' })).toThrow(/invalid domain name/);
    expect(() => parseKubeDnsConfig({ stubDomains: '{"ok.local":["1.2.3.4:99999"]}' })).toThrow(/invalid nameserver/);
    expect(() => parseKubeDnsConfig({ stubDomains: 'not json' })).toThrow();
  });
});

describe('node-cache rules', () => {
  it('are upstream initIptables rules, in its order', () => {
    expect(`${iptablesLines(nodeCacheRules(LOCAL, 53, 8080)).join('\n')}\n`).toBe(read('rules.iptables.golden'));
  });

  it('as one nftables table with a chain per iptables table and chain', () => {
    const text = nftTable(nodeCacheRules(['169.254.20.10'], 53, 8080));
    expect(text).toContain('table inet clusterdns-nodelocaldns {');
    expect(text).toContain('chain raw-prerouting {\n\t\ttype filter hook prerouting priority raw; policy accept;');
    expect(text).toContain('ip daddr 169.254.20.10 udp dport 53 notrack comment "NodeLocal DNS Cache: skip conntrack"');
    expect(text).toContain(
      'ip saddr 169.254.20.10 tcp sport 53 accept comment "NodeLocal DNS Cache: allow DNS traffic"',
    );
    expect(text.match(/comment "/g)).toHaveLength(12);
    expect(nftTable(nodeCacheRules(['fd00::10'], 53, 8080))).toContain('ip6 daddr fd00::10 udp dport 53 notrack');
  });
});
