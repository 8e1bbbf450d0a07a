/** RDATA of the DNSSEC types (DNSKEY/KEY/CDNSKEY, DS/CDS/DLV/TA, RRSIG/SIG, NSEC/NXT). */
import { decodeBase64, decodeHex, parseUint, timeFromText, typeBitmap, u16, u32, u8 } from './fields.js';
import { V } from './lexer.js';
import { ALGORITHMS, typeFromText } from './mnemonics.js';
import { wireName } from './names.js';
import { RdataError, type Parsed, type Rdata } from './rdata-reader.js';

export function dnskey(p: Rdata, tname: string): Parsed {
  const flags = p.uint(p.next(), 16, `bad ${tname} Flags`);
  const proto = p.uint(p.field(), 8, `bad ${tname} Protocol`);
  const alg = p.uint(p.field(), 8, `bad ${tname} Algorithm`);
  const key = decodeBase64(p.ending(`bad ${tname} PublicKey`));
  if (!key) throw new RdataError(`bad ${tname} PublicKey`, null);
  return { rdata: Buffer.concat([u16(flags), u8(proto), u8(alg), key]) };
}

export function ds(p: Rdata, tname: string): Parsed {
  const tag = p.uint(p.next(), 16, `bad ${tname} KeyTag`);
  const l = p.field();
  let alg = parseUint(l.token, 8);
  if (alg === undefined) {
    alg = ALGORITHMS[l.token.toUpperCase()];
    if (alg === undefined || l.err) throw new RdataError(`bad ${tname} Algorithm`, l);
  }
  const dt = p.uint(p.field(), 8, `bad ${tname} DigestType`);
  const digest = decodeHex(p.ending(`bad ${tname} Digest`));
  if (!digest) throw new RdataError(`bad ${tname} Digest`, null);
  return { rdata: Buffer.concat([u16(tag), u8(alg), u8(dt), digest]) };
}

export function rrsig(p: Rdata, tname: string): Parsed {
  let l = p.next();
  const covered = typeFromText(l.token);
  if (covered === undefined) throw new RdataError(`bad ${tname} Typecovered`, l);
  l = p.field();
  if (l.err) throw new RdataError(`bad ${tname} Algorithm`, l);
  let alg = parseUint(l.token, 8);
  if (alg === undefined) {
    alg = ALGORITHMS[l.token];
    if (alg === undefined) throw new RdataError(`bad ${tname} Algorithm`, l);
  }
  const labels = p.uint(p.field(), 8, `bad ${tname} Labels`);
  const origTtl = p.uint(p.field(), 32, `bad ${tname} OrigTtl`);
  l = p.field();
  const exp = timeFromText(l.token) ?? parseUint(l.token, 32);
  if (exp === undefined) throw new RdataError(`bad ${tname} Expiration`, l);
  l = p.field();
  const inc = timeFromText(l.token) ?? parseUint(l.token, 32);
  if (inc === undefined) throw new RdataError(`bad ${tname} Inception`, l);
  const tag = p.uint(p.field(), 16, `bad ${tname} KeyTag`);
  const signer = p.name(p.field(), `bad ${tname} SignerName`);
  const sig = decodeBase64(p.ending(`bad ${tname} Signature`));
  if (!sig) throw new RdataError(`bad ${tname} Signature`, null);
  return {
    rdata: Buffer.concat([
      u16(covered),
      u8(alg),
      u8(labels),
      u32(origTtl),
      u32(exp),
      u32(inc),
      u16(tag),
      wireName(signer),
      sig,
    ]),
    covered,
  };
}

export function nsec(p: Rdata, tname: string): Parsed {
  const nextName = p.name(p.next(), `bad ${tname} NextDomain`);
  const types: number[] = [];
  let l = p.next();
  while (l.value !== V.Newline && l.value !== V.EOF) {
    if (l.value === V.String) {
      const t = typeFromText(l.token);
      if (t === undefined) throw new RdataError(`bad ${tname} TypeBitMap`, l);
      types.push(t);
    } else if (l.value !== V.Blank) throw new RdataError(`bad ${tname} TypeBitMap`, l);
    l = p.next();
  }
  return { rdata: Buffer.concat([wireName(nextName), typeBitmap(types)]) };
}
