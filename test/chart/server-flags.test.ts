/**
 * clusterdns-only server flags in the chart (values `clusterdns.tcp.*`): passed as container
 * args only when set, and what is rendered is what the server's own flag parser accepts.
 * Needs helm (scripts/install-helm.sh); fails, never skips, when it is missing.
 */
import { describe, expect, it } from 'vitest';
import { parseFlags } from '../../src/cli/flags.js';
import { type RenderOptions, arr, container, helmTemplateError, one, render } from './helm.js';

function args(o: RenderOptions = {}): string[] {
  return arr(container(one(render(o), 'Deployment')), 'args').map((a) => {
    if (typeof a !== 'string') throw new Error(`container arg is not a string: ${JSON.stringify(a)}`);
    return a;
  });
}

describe('clusterdns.tcp values', () => {
  it('add no argument by default: the server keeps its defaults (10000, 256)', () => {
    const a = args();
    expect(a).toEqual(['-conf', '/etc/coredns/Corefile']);
    const f = parseFlags(a);
    expect([f.tcpMaxConns, f.tcpMaxConnsPerSource]).toEqual([10000, 256]);
  });

  it('pass -dns.tcp.maxconns and -dns.tcp.maxconnspersource when set (values file)', () => {
    const a = args({ values: { clusterdns: { tcp: { maxConns: 20000, maxConnsPerSource: 0 } } } });
    expect(a).toEqual([
      '-conf',
      '/etc/coredns/Corefile',
      '-dns.tcp.maxconns',
      '20000',
      '-dns.tcp.maxconnspersource',
      '0',
    ]);
    const f = parseFlags(a);
    expect([f.conf, f.tcpMaxConns, f.tcpMaxConnsPerSource]).toEqual(['/etc/coredns/Corefile', 20000, 0]);
  });

  it('pass only the one that is set; large numbers stay plain integers (--set and values file)', () => {
    expect(args({ set: ['clusterdns.tcp.maxConnsPerSource=512'] })).toEqual([
      '-conf',
      '/etc/coredns/Corefile',
      '-dns.tcp.maxconnspersource',
      '512',
    ]);
    expect(args({ set: ['clusterdns.tcp.maxConns=1000000'] })).toEqual([
      '-conf',
      '/etc/coredns/Corefile',
      '-dns.tcp.maxconns',
      '1000000',
    ]);
    // A values file gives helm float64 numbers: still printed as an integer, not 1e+06.
    const a = args({ values: { clusterdns: { tcp: { maxConns: 1000000 } } } });
    expect(a).toEqual(['-conf', '/etc/coredns/Corefile', '-dns.tcp.maxconns', '1000000']);
    expect(parseFlags(a).tcpMaxConns).toBe(1000000);
  });

  it('pass -workers when clusterdns.workers is set; by default the server sizes its threads', () => {
    expect(args({ set: ['clusterdns.workers=1'] })).toEqual(['-conf', '/etc/coredns/Corefile', '-workers', '1']);
    const a = args({ values: { clusterdns: { workers: 2, tcp: { maxConns: 20000 } } } });
    expect(a).toEqual(['-conf', '/etc/coredns/Corefile', '-workers', '2', '-dns.tcp.maxconns', '20000']);
    expect(parseFlags(a).workers).toBe(2);
    expect(parseFlags(args({})).workers).toBe(0);
    expect(helmTemplateError({ set: ['clusterdns.workers=-1'] })).toMatch(/clusterdns\/workers/);
  });

  it('are refused by values.schema.json when the server would refuse them', () => {
    expect(helmTemplateError({ set: ['clusterdns.tcp.maxConns=0'] })).toMatch(/clusterdns\/tcp\/maxConns/);
    expect(() => parseFlags(['-dns.tcp.maxconns', '0'])).toThrow(/must be at least 1/);
    expect(helmTemplateError({ set: ['clusterdns.tcp.maxConnsPerSource=-1'] })).toMatch(
      /clusterdns\/tcp\/maxConnsPerSource/,
    );
    expect(helmTemplateError({ values: { clusterdns: { tcp: { maxConns: 1.5 } } } })).toMatch(
      /clusterdns\/tcp\/maxConns/,
    );
    expect(helmTemplateError({ values: { clusterdns: { tcp: { maxconns: 5 } } } })).toMatch(/maxconns/);
  });
});
