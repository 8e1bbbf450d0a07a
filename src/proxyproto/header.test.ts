import { describe, expect, it } from 'vitest';
import { proxyV1, proxyV2 } from '../../test/helpers/proxyproto.js';
import { readProxyHeader, tlvHex } from './header.js';

describe('PROXY header reader', () => {
  it('reads a v1 line and says how long it is', () => {
    const h = proxyV1('192.0.2.7', 40000, '10.0.0.1', 53);
    const r = readProxyHeader(Buffer.concat([h, Buffer.from([0, 1])]), true);
    expect(r).toMatchObject({ kind: 'header', length: h.length });
    if (r.kind !== 'header') return;
    expect(r.header.version).toBe(1);
    expect(r.header.source).toEqual({ address: '192.0.2.7', port: 40000, family: 1 });
    expect(r.header.destination).toEqual({ address: '10.0.0.1', port: 53, family: 1 });
  });

  it('reads v2 IPv4 and IPv6 headers with TLVs', () => {
    const h4 = proxyV2('198.51.100.9', 1234, '10.0.0.1', 53, { tlvs: [[0xe0, Buffer.from('ab')]] });
    const r4 = readProxyHeader(h4, true);
    expect(r4.kind).toBe('header');
    if (r4.kind !== 'header') return;
    expect(r4.length).toBe(h4.length);
    expect(r4.header.source).toEqual({ address: '198.51.100.9', port: 1234, family: 1 });
    expect(tlvHex(r4.header.tlvs)).toBe('e000026162');
    const r6 = readProxyHeader(proxyV2('2001:db8::7', 9, '2001:db8::1', 53), true);
    expect(r6.kind === 'header' && r6.header.source).toEqual({ address: '2001:db8::7', port: 9, family: 2 });
    const mapped = readProxyHeader(proxyV2('::ffff:192.0.2.1', 9, '::1', 53), true);
    expect(mapped.kind === 'header' && mapped.header.source?.address).toBe('192.0.2.1');
  });

  it('takes a plain DNS message as no header, whatever its first byte', () => {
    expect(readProxyHeader(Buffer.from([0x12, 0x34, 1, 0]), true).kind).toBe('none');
    expect(readProxyHeader(Buffer.from('PROXZ stuff'), true).kind).toBe('none');
    expect(
      readProxyHeader(Buffer.from([0x0d, 0x0a, 0x0d, 0x0a, 0, 0x0d, 0x0a, 0x51, 0x55, 0x49, 0x54, 0x0b]), true).kind,
    ).toBe('none');
    expect(readProxyHeader(Buffer.from('PRO'), true).kind).toBe('none');
    expect(readProxyHeader(Buffer.from('PRO'), false).kind).toBe('more');
  });

  it('asks a stream for more bytes until the header is complete', () => {
    const h = proxyV2('198.51.100.9', 1234, '10.0.0.1', 53);
    for (let n = 1; n < h.length; n++) expect(readProxyHeader(h.subarray(0, n), false).kind).toBe('more');
    expect(readProxyHeader(proxyV1('192.0.2.7', 1, '10.0.0.1', 53).subarray(0, 20), false).kind).toBe('more');
  });

  it("words go-proxyproto's errors", () => {
    const bad = (b: Buffer | string) => {
      const r = readProxyHeader(typeof b === 'string' ? Buffer.from(b, 'latin1') : b, true);
      return r.kind === 'error' ? r.error : r.kind;
    };
    expect(bad('PROXY TCP4 1.2.3.4 5.6.7.8 1 2\n')).toBe(
      'proxyproto: version 1 header is invalid, must end with \\r\\n',
    );
    expect(bad('PROXY TCP4 1.2.3.4 5.6.7.8 1\r\n')).toBe("proxyproto: can't read address family or protocol");
    expect(bad('PROXY TCP4 1.2.3.04 5.6.7.8 1 2\r\n')).toBe('proxyproto: invalid address');
    expect(bad('PROXY TCP4 1.2.3.4 5.6.7.8 01 2\r\n')).toBe('proxyproto: invalid port number');
    expect(bad(`PROXY ${'x'.repeat(120)}`)).toBe('proxyproto: version 1 header must be 107 bytes or less');
    const v2 = proxyV2('198.51.100.9', 1234, '10.0.0.1', 53);
    const cmd = Buffer.from(v2);
    cmd[12] = 0x22;
    expect(bad(cmd)).toBe('proxyproto: unsupported proxy protocol version and command');
    const fam = Buffer.from(v2);
    fam[13] = 0x13;
    expect(bad(fam)).toBe('proxyproto: unsupported address family and protocol');
    const short = Buffer.from(v2);
    short.writeUInt16BE(8, 14);
    expect(bad(short)).toBe('proxyproto: invalid length');
  });

  it('keeps NOOP TLVs without their value and drops a malformed vector', () => {
    expect(tlvHex(Buffer.from([0x04, 0, 2, 9, 9, 0xe1, 0, 1, 7]))).toBe('040000e1000107');
    expect(tlvHex(Buffer.from([0xe1, 0, 5, 1]))).toBeNull();
    expect(tlvHex(Buffer.alloc(0))).toBeNull();
  });
});
