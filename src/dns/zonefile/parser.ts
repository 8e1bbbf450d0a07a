/**
 * RFC 1035 master files ("zone files"), read the way miekg/dns's ZoneParser reads them — the parser
 * CoreDNS 1.15.0's `file` plugin uses (docs/plugins.md, file): `$ORIGIN`, `$TTL`, `$INCLUDE`,
 * parentheses across lines, `;` comments, quoted strings with `\X`/`\DDD` escapes, relative and
 * absolute names, `@`, an owner/TTL/class left out (the previous one is kept), `TYPEnnn`/`CLASSnnn`
 * and the RFC 3597 generic form `\# LEN HEX` for any type.
 *
 * The result is one `ZoneRecord` per resource record with its RDATA in wire form (names written
 * uncompressed); the names a server needs to follow (CNAME/DNAME/NS/MX/SRV targets, the SOA
 * serial, the type an RRSIG covers) are parsed out beside it. Errors are `ZoneFileError`s worded as
 * miekg/dns words them (`db.example.org: dns: bad A A: "1.2.3" at line: 3:14`).
 */
import { dirname, isAbsolute, join } from 'node:path';
import { ZoneFileError } from './error.js';
import { ttlFromText } from './fields.js';
import { expandGenerate } from './generate.js';
import { isEmptyLex, V, ZLexer, type Lex } from './lexer.js';
import { typeName } from './mnemonics.js';
import { toAbsolute } from './names.js';
import { generic, parseRdata } from './rdata.js';
import { Rdata, RdataError, type Parsed } from './rdata-reader.js';
import { record, type Header, type ZoneRecord } from './record.js';

export interface ZoneParseOptions {
  /** Initial origin (absolute). */
  readonly origin: string;
  /** File name for messages and for resolving `$INCLUDE` paths. */
  readonly file: string;
  /** Read an `$INCLUDE`d file (bytes as latin1 text); throws like fs.readFileSync. Without it `$INCLUDE` is refused. */
  readonly include?: (path: string) => string;
}

const MAX_INCLUDE_DEPTH = 7;

interface DefTtl {
  ttl: number;
  byDirective: boolean;
}

/**
 * Parse master-file text (as latin1: one char per byte) into records. Throws ZoneFileError on the
 * first syntax error, as miekg/dns stops there.
 */
export function parseZoneText(text: string, opts: ZoneParseOptions): ZoneRecord[] {
  const out: ZoneRecord[] = [];
  parseInto(text, opts.origin, opts.file, opts, 0, { def: null }, out);
  return out;
}

/**
 * The records read before the first syntax error, and that error (null when none): miekg/dns hands
 * out records one by one, so a caller sees (and may reject) the records before a later error first.
 */
export function parseZoneRecords(
  text: string,
  opts: ZoneParseOptions,
): { records: ZoneRecord[]; error: ZoneFileError | null } {
  const records: ZoneRecord[] = [];
  try {
    parseInto(text, opts.origin, opts.file, opts, 0, { def: null }, records);
  } catch (e) {
    if (e instanceof ZoneFileError) return { records, error: e };
    throw e;
  }
  return { records, error: null };
}

function parseInto(
  text: string,
  origin0: string,
  file: string,
  opts: ZoneParseOptions,
  depth: number,
  ttlState: { def: DefTtl | null },
  out: ZoneRecord[],
  generating = false,
): void {
  const c = new ZLexer(text);
  let origin = origin0;
  const h: Header = { name: '', type: 0, class: 1, ttl: 0 };
  const fail = (reason: string, l: Lex): never => {
    throw new ZoneFileError(file, reason, l.token, l.line, l.column);
  };
  const setTtl = (l: Lex): void => {
    const ttl = ttlFromText(l.token);
    if (ttl === undefined) fail('not a TTL', l);
    h.ttl = ttl!;
    if (ttlState.def === null || !ttlState.def.byDirective) ttlState.def = { ttl: ttl!, byDirective: false };
  };
  const slurp = (): void => {
    let l = c.next()[0];
    if (l.value === V.Blank) {
      l = c.next()[0];
      if (l.value !== V.Newline && l.value !== V.EOF) fail('garbage after rdata', l);
    } else if (l.value !== V.Newline && l.value !== V.EOF) fail('garbage after rdata', l);
  };

  type St =
    | 'ownerDir'
    | 'ownerBl'
    | 'any'
    | 'anyNoClassBl'
    | 'anyNoClass'
    | 'anyNoTTLBl'
    | 'anyNoTTL'
    | 'rrtypeBl'
    | 'rrtype'
    | 'rdata'
    | 'ttlBl'
    | 'ttl'
    | 'originBl'
    | 'origin'
    | 'includeBl'
    | 'include'
    | 'generateBl'
    | 'generate';
  let st: St = 'ownerDir';
  for (let [l, ok] = c.next(); ok; [l, ok] = c.next()) {
    if (l.err) fail(l.token, l);
    switch (st) {
      case 'ownerDir':
        if (ttlState.def !== null) h.ttl = ttlState.def.ttl;
        h.class = 1;
        switch (l.value) {
          case V.Newline:
            break;
          case V.Owner: {
            const n = toAbsolute(l.token, origin);
            if (n === undefined) fail('bad owner name', l);
            h.name = n!;
            st = 'ownerBl';
            break;
          }
          case V.DirTTL:
            st = 'ttlBl';
            break;
          case V.DirOrigin:
            st = 'originBl';
            break;
          case V.DirInclude:
            st = 'includeBl';
            break;
          case V.DirGenerate:
            st = 'generateBl';
            break;
          case V.Rrtype:
            h.type = l.torc;
            st = 'rdata';
            break;
          case V.Class:
            h.class = l.torc;
            st = 'anyNoClassBl';
            break;
          case V.Blank:
            break;
          case V.String:
            setTtl(l);
            st = 'anyNoTTLBl';
            break;
          default:
            fail('syntax error at beginning', l);
        }
        break;
      case 'includeBl':
        if (l.value !== V.Blank) fail('no blank after $INCLUDE-directive', l);
        st = 'include';
        break;
      case 'include': {
        if (l.value !== V.String) fail('expecting $INCLUDE value, not this...', l);
        let newOrigin = origin;
        const [n] = c.next();
        if (n.value === V.Blank) {
          const [o] = c.next();
          if (o.value === V.String) {
            const abs = toAbsolute(o.token, origin);
            if (abs === undefined) fail('bad origin name', o);
            newOrigin = abs!;
          }
        } else if (n.value !== V.Newline && n.value !== V.EOF) fail('garbage after $INCLUDE', n);
        if (!opts.include) fail('$INCLUDE directive not allowed', l);
        if (depth >= MAX_INCLUDE_DEPTH) fail('too deeply nested $INCLUDE', l);
        const path = isAbsolute(l.token) ? l.token : join(dirname(file), l.token);
        let sub: string;
        try {
          sub = opts.include!(path);
        } catch (e) {
          const as = path !== l.token ? ` as \`${path}'` : '';
          const err = e as NodeJS.ErrnoException;
          const why =
            err.code === 'ENOENT'
              ? 'no such file or directory'
              : err.code === 'EACCES'
                ? 'permission denied'
                : err.code === 'EISDIR'
                  ? 'is a directory'
                  : err.message;
          fail(`failed to open \`${l.token}'${as}: open ${path}: ${why}`, l);
        }
        // The included file starts with the current default TTL; its own $TTL stays inside it.
        parseInto(sub!, newOrigin, path, opts, depth + 1, { def: ttlState.def }, out);
        st = 'ownerDir';
        break;
      }
      case 'ttlBl':
        if (l.value !== V.Blank) fail('no blank after $TTL-directive', l);
        st = 'ttl';
        break;
      case 'ttl': {
        if (l.value !== V.String) fail('expecting $TTL value, not this...', l);
        slurp();
        const ttl = ttlFromText(l.token);
        if (ttl === undefined) fail('expecting $TTL value, not this...', l);
        ttlState.def = { ttl: ttl!, byDirective: true };
        st = 'ownerDir';
        break;
      }
      case 'originBl':
        if (l.value !== V.Blank) fail('no blank after $ORIGIN-directive', l);
        st = 'origin';
        break;
      case 'origin': {
        if (l.value !== V.String) fail('expecting $ORIGIN value, not this...', l);
        slurp();
        const n = toAbsolute(l.token, origin);
        if (n === undefined) fail('bad origin name', l);
        origin = n!;
        st = 'ownerDir';
        break;
      }
      case 'generateBl':
        if (l.value !== V.Blank) fail('no blank after $GENERATE-directive', l);
        st = 'generate';
        break;
      case 'generate': {
        if (generating) fail('nested $GENERATE directive not allowed', l);
        if (l.value !== V.String) fail('expecting $GENERATE value, not this...', l);
        const text = expandGenerate(c, l, fail);
        // The generated lines: same origin and file, no $GENERATE inside, default TTL 3600.
        parseInto(text, origin, file, opts, depth, { def: { ttl: 3600, byDirective: false } }, out, true);
        st = 'ownerDir';
        break;
      }
      case 'ownerBl':
        if (l.value !== V.Blank) fail('no blank after owner', l);
        st = 'any';
        break;
      case 'any':
        switch (l.value) {
          case V.Rrtype:
            if (ttlState.def === null) fail('missing TTL with no previous value', l);
            h.type = l.torc;
            st = 'rdata';
            break;
          case V.Class:
            h.class = l.torc;
            st = 'anyNoClassBl';
            break;
          case V.String:
            setTtl(l);
            st = 'anyNoTTLBl';
            break;
          default:
            fail('expecting RR type, TTL or class, not this...', l);
        }
        break;
      case 'anyNoClassBl':
        if (l.value !== V.Blank) fail('no blank before class', l);
        st = 'anyNoClass';
        break;
      case 'anyNoTTLBl':
        if (l.value !== V.Blank) fail('no blank before TTL', l);
        st = 'anyNoTTL';
        break;
      case 'anyNoTTL':
        switch (l.value) {
          case V.Class:
            h.class = l.torc;
            st = 'rrtypeBl';
            break;
          case V.Rrtype:
            h.type = l.torc;
            st = 'rdata';
            break;
          default:
            fail('expecting RR type or class, not this...', l);
        }
        break;
      case 'anyNoClass':
        switch (l.value) {
          case V.String:
            setTtl(l);
            st = 'rrtypeBl';
            break;
          case V.Rrtype:
            h.type = l.torc;
            st = 'rdata';
            break;
          default:
            fail('expecting RR type or TTL, not this...', l);
        }
        break;
      case 'rrtypeBl':
        if (l.value !== V.Blank) fail('no blank before RR type', l);
        st = 'rrtype';
        break;
      case 'rrtype':
        if (l.value !== V.Rrtype) fail('unknown RR type', l);
        h.type = l.torc;
        st = 'rdata';
        break;
      case 'rdata': {
        // `l` is the blank after the type; the RDATA follows.
        const peek = c.peek();
        if (peek.token === '') {
          // No RDATA at all (miekg/dns reads it as a dynamic-update record with empty RDATA).
          slurp();
          out.push(record(h, { rdata: Buffer.alloc(0) }, file, l.line));
          st = 'ownerDir';
          break;
        }
        if (l.value === V.Newline) fail('unexpected newline', l);
        const p = new Rdata(c, origin);
        const line = l.line;
        let parsed: Parsed | undefined;
        try {
          if (peek.token === '\\#') parsed = generic(p);
          else {
            parsed = parseRdata(h.type, p);
            if (parsed === undefined) {
              fail(`clusterdns reads type ${typeName(h.type)} only in the RFC 3597 form (\\# LENGTH HEX)`, peek);
            }
          }
        } catch (e) {
          // miekg/dns: an error without a token of its own points at the token before the RDATA.
          if (e instanceof RdataError) fail(e.reason, e.lex && !isEmptyLex(e.lex) ? e.lex : l);
          throw e;
        }
        out.push(record(h, parsed!, file, line));
        st = 'ownerDir';
        break;
      }
    }
  }
}
