/**
 * DNSSEC signing keys read from BIND's key files (`K<zone>+<alg>+<tag>.key` holds the DNSKEY record,
 * `.private` the private key in "Private-key-format: v1.3"), as miekg/dns's `ReadRR` and
 * `DNSKEY.ReadPrivateKey` read them, for the *dnssec* and *sign* plugins. The private key becomes a
 * node:crypto KeyObject once, at setup; signing (src/dnssec/rrsig.ts) only uses it.
 */
import { createPrivateKey, type KeyObject } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { parseZoneText } from '../dns/zonefile/parser.js';

/** DNSSEC algorithm numbers miekg/dns signs with (RFC 8624). */
export const Alg = {
  RSASHA1: 5,
  RSASHA1NSEC3SHA1: 7,
  RSASHA256: 8,
  RSASHA512: 10,
  ECDSAP256SHA256: 13,
  ECDSAP384SHA384: 14,
  ED25519: 15,
} as const;

/** One key pair: the DNSKEY as published and the private key that signs with it. */
export interface SigningKey {
  /** The DNSKEY owner as written in the .key file (absolute, letter case kept). */
  readonly owner: string;
  readonly ttl: number;
  readonly flags: number;
  readonly protocol: number;
  readonly algorithm: number;
  /** DNSKEY RDATA (flags, protocol, algorithm, public key). */
  readonly rdata: Buffer;
  readonly tag: number;
  readonly privateKey: KeyObject;
}

/** A zone key with the SEP bit set: a KSK (or a CSK, when it is the only key) (RFC 4034 §2.1.1). */
export function isKSK(k: SigningKey): boolean {
  return (k.flags & 0x100) !== 0 && (k.flags & 1) === 1;
}

/** A zone key with the SEP bit unset: a ZSK. */
export function isZSK(k: SigningKey): boolean {
  return (k.flags & 0x100) !== 0 && (k.flags & 1) === 0;
}

/** RFC 4034 Appendix B key tag of DNSKEY RDATA (not for algorithm 1). */
export function keyTag(rdata: Buffer): number {
  let ac = 0;
  for (let i = 0; i < rdata.length; i++) ac += (i & 1) !== 0 ? rdata[i]! : rdata[i]! << 8;
  ac += (ac >> 16) & 0xffff;
  return ac & 0xffff;
}

/** The base of a key file name: `Kx.+013+1.key`, `.private` or neither all name `Kx.+013+1`. */
export function keyBase(name: string): string {
  if (name.endsWith('.key')) return name.slice(0, -4);
  if (name.endsWith('.private')) return name.slice(0, -8);
  return name;
}

/** Go's `open NAME: no such file or directory` for a failed read. */
function openError(path: string, e: unknown): Error {
  const code = (e as NodeJS.ErrnoException).code;
  const why =
    code === 'ENOENT'
      ? 'no such file or directory'
      : code === 'EACCES'
        ? 'permission denied'
        : code === 'EISDIR'
          ? 'is a directory'
          : (e as Error).message;
  return new Error(`open ${path}: ${why}`);
}

function readText(path: string): string {
  try {
    return readFileSync(path, 'latin1');
  } catch (e) {
    throw openError(path, e);
  }
}

/** The DNSKEY record of a .key file's text (the first record; comments and `$` lines as a zone file). */
export function parsePublicKey(
  text: string,
  file: string,
): { owner: string; ttl: number; flags: number; protocol: number; algorithm: number; rdata: Buffer } {
  // miekg's ReadRR gives a record without a TTL 3600.
  const rrs = parseZoneText(`$TTL 3600\n${text}`, { origin: '.', file });
  const rr = rrs[0];
  if (rr === undefined) throw new Error(`dns: no RR found in ${file}`);
  if (rr.type !== 48) throw new Error('no public key found');
  return {
    owner: rr.name,
    ttl: rr.ttl,
    flags: rr.rdata.readUInt16BE(0),
    protocol: rr.rdata[2]!,
    algorithm: rr.rdata[3]!,
    rdata: rr.rdata,
  };
}

/** `Key: value` lines of a .private file, keys lower-cased (miekg's parseKey). */
function privateFields(text: string): Map<string, string> {
  const m = new Map<string, string>();
  for (const line of text.split('\n')) {
    const t = line.replace(/;.*$/, '').trim();
    const i = t.indexOf(':');
    if (i <= 0) continue;
    m.set(t.slice(0, i).trim().toLowerCase(), t.slice(i + 1).trim());
  }
  return m;
}

const b64u = (b: Buffer): string => b.toString('base64url');

function field(m: Map<string, string>, name: string): Buffer {
  const v = m.get(name);
  if (v === undefined) throw new Error('dns: bad private key');
  return Buffer.from(v, 'base64');
}

/** The private key of a .private file's text for the DNSKEY `pub` (whose public key completes it). */
export function parsePrivateKey(text: string, pub: { algorithm: number; rdata: Buffer }): KeyObject {
  const m = privateFields(text);
  const format = m.get('private-key-format');
  if (format !== 'v1.2' && format !== 'v1.3') throw new Error('dns: bad private key');
  const alg = Number((m.get('algorithm') ?? '').split(' ')[0]);
  if (!Number.isInteger(alg)) throw new Error('dns: bad private key');
  const publicKey = pub.rdata.subarray(4);
  switch (alg) {
    case Alg.RSASHA1:
    case Alg.RSASHA1NSEC3SHA1:
    case Alg.RSASHA256:
    case Alg.RSASHA512:
      return createPrivateKey({
        format: 'jwk',
        key: {
          kty: 'RSA',
          n: b64u(field(m, 'modulus')),
          e: b64u(field(m, 'publicexponent')),
          d: b64u(field(m, 'privateexponent')),
          p: b64u(field(m, 'prime1')),
          q: b64u(field(m, 'prime2')),
          dp: b64u(field(m, 'exponent1')),
          dq: b64u(field(m, 'exponent2')),
          qi: b64u(field(m, 'coefficient')),
        },
      });
    case Alg.ECDSAP256SHA256:
    case Alg.ECDSAP384SHA384: {
      const size = alg === Alg.ECDSAP256SHA256 ? 32 : 48;
      if (publicKey.length !== 2 * size) throw new Error('dns: bad private key');
      const d = field(m, 'privatekey');
      return createPrivateKey({
        format: 'jwk',
        key: {
          kty: 'EC',
          crv: size === 32 ? 'P-256' : 'P-384',
          x: b64u(publicKey.subarray(0, size)),
          y: b64u(publicKey.subarray(size)),
          d: b64u(Buffer.concat([Buffer.alloc(Math.max(0, size - d.length)), d])),
        },
      });
    }
    case Alg.ED25519: {
      const seed = field(m, 'privatekey');
      if (seed.length !== 32) throw new Error('dns: bad private key');
      return createPrivateKey({
        format: 'jwk',
        key: { kty: 'OKP', crv: 'Ed25519', d: b64u(seed), x: b64u(publicKey) },
      });
    }
    default:
      throw new Error('dns: bad algorithm');
  }
}

/** A key from the texts of its .key and .private files (`file` names the .key for errors). */
export function keyFromTexts(pubText: string, privText: string, file: string): SigningKey {
  const pub = parsePublicKey(pubText, file);
  const privateKey = parsePrivateKey(privText, pub);
  return { ...pub, tag: keyTag(pub.rdata), privateKey };
}

/** Read the key pair `base.key` / `base.private` (errors worded as CoreDNS's). */
export function readKeyPair(base: string): SigningKey {
  const pubFile = `${base}.key`;
  const privFile = `${base}.private`;
  const pubText = readText(pubFile);
  const pub = parsePublicKey(pubText, pubFile);
  const privText = readText(privFile);
  return { ...pub, tag: keyTag(pub.rdata), privateKey: parsePrivateKey(privText, pub) };
}
