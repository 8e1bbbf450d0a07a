import { describe, expect, it } from 'vitest';
import { parseNodeCacheFlags, parseSyncInterval } from './flags.js';

describe('node-cache flags', () => {
  it('take upstream defaults', () => {
    const f = parseNodeCacheFlags(['-localip', '169.254.20.10,10.96.0.10']);
    expect(f).toMatchObject({
      localIPs: ['169.254.20.10', '10.96.0.10'],
      conf: '/etc/Corefile',
      basecorefile: '/etc/coredns/Corefile.base',
      upstreamsvc: 'kube-dns',
      interfacename: 'nodelocaldns',
      setupinterface: true,
      setupiptables: true,
      skipteardown: false,
      syncIntervalMs: 60_000,
      healthPort: 8080,
      metricsListenAddress: '0.0.0.0:9353',
      dnsPort: 53,
      rules: 'auto',
    });
  });

  it('read the upstream DaemonSet args and CoreDNS flags', () => {
    const f = parseNodeCacheFlags(
      '-localip 169.254.20.10 -conf /etc/Corefile -upstreamsvc kube-dns-upstream -pidfile /tmp/node-cache.pid -dns.port=1053 -skipteardown -setupinterface=false -rules iptables-legacy'.split(
        ' ',
      ),
    );
    expect(f).toMatchObject({ upstreamsvc: 'kube-dns-upstream', pidfile: '/tmp/node-cache.pid', dnsPort: 1053 });
    expect(f).toMatchObject({ skipteardown: true, setupinterface: false, rules: 'iptables-legacy' });
  });

  it('-syncinterval: whole seconds or a Go duration', () => {
    expect(parseSyncInterval('60')).toBe(60_000);
    expect(parseSyncInterval('60s')).toBe(60_000);
    expect(parseSyncInterval('1m30s')).toBe(90_000);
    expect(parseSyncInterval('500ms')).toBe(500);
    expect(() => parseSyncInterval('0')).toThrow(/positive/);
    expect(() => parseSyncInterval('soon')).toThrow(/-syncinterval/);
  });

  it('reject what upstream rejects', () => {
    expect(() => parseNodeCacheFlags([])).toThrow('invalid localip specified - ""');
    expect(() => parseNodeCacheFlags(['-localip', '169.254.20.10,fd00::10'])).toThrow(/unexpected IP Family/);
    expect(() => parseNodeCacheFlags(['-localip', '1.2.3.4', '-nope'])).toThrow(/not defined: -nope/);
    expect(() => parseNodeCacheFlags(['-localip', '1.2.3.4', '-rules', 'pf'])).toThrow(/-rules/);
  });
});
