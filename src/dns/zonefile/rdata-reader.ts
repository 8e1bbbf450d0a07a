/** The RDATA of one record as a stream of tokens, read the way miekg's per-type parsers read them. */
import { escapedStringOffset, parseUint } from './fields.js';
import { V, type Lex, type ZLexer } from './lexer.js';
import { toAbsolute } from './names.js';

/** A RDATA syntax error: the reason and the offending token (null: the token before the RDATA). */
export class RdataError {
  constructor(
    readonly reason: string,
    readonly lex: Lex | null,
  ) {}
}

/** RDATA parsed from text. */
export interface Parsed {
  rdata: Buffer;
  target?: string;
  covered?: number;
  serial?: number;
}

/** The tokens of one record's RDATA, read the way miekg's per-type parsers read them. */
export class Rdata {
  constructor(
    private readonly c: ZLexer,
    private readonly origin: string,
  ) {}

  next(): Lex {
    return this.c.next()[0];
  }

  /** The next token (after skipping one blank, as miekg's `c.Next() // zBlank`). */
  field(): Lex {
    this.next();
    return this.next();
  }

  /** Nothing but a blank may follow the RDATA on the line. */
  end(): void {
    let l = this.next();
    if (l.value === V.Blank) {
      l = this.next();
      if (l.value !== V.Newline && l.value !== V.EOF) throw new RdataError('garbage after rdata', l);
    } else if (l.value !== V.Newline && l.value !== V.EOF) throw new RdataError('garbage after rdata', l);
  }

  uint(l: Lex, bits: 8 | 16 | 32, reason: string): number {
    const n = parseUint(l.token, bits);
    if (n === undefined || l.err) throw new RdataError(reason, l);
    return n;
  }

  name(l: Lex, reason: string): string {
    const n = toAbsolute(l.token, this.origin);
    if (l.err || n === undefined) throw new RdataError(reason, l);
    return n;
  }

  /** miekg's endingToString: the rest of the line, blanks removed. */
  ending(reason: string): string {
    let s = '';
    let l = this.next();
    while (l.value !== V.Newline && l.value !== V.EOF) {
      if (l.err) throw new RdataError(reason, l);
      if (l.value === V.String) s += l.token;
      else if (l.value !== V.Blank) throw new RdataError(reason, l);
      l = this.next();
    }
    return s;
  }

  /** miekg's endingToTxtSlice: quoted and unquoted character strings, long ones split at 255 octets. */
  txt(reason: string): string[] {
    let l = this.next();
    if (l.err) throw new RdataError(reason, l);
    const out: string[] = [];
    let quote = false;
    let empty = false;
    while (l.value !== V.Newline && l.value !== V.EOF) {
      if (l.err) throw new RdataError(reason, l);
      switch (l.value) {
        case V.String: {
          empty = false;
          let p = 0;
          for (;;) {
            const i = escapedStringOffset(l.token.slice(p), 255);
            if (i === undefined) throw new RdataError(reason, l);
            if (i !== -1 && p + i !== l.token.length) {
              out.push(l.token.slice(p, p + i));
              p += i;
            } else {
              out.push(l.token.slice(p));
              break;
            }
          }
          break;
        }
        case V.Blank:
          if (quote) throw new RdataError(reason, l);
          break;
        case V.Quote:
          if (empty && quote) out.push('');
          quote = !quote;
          empty = true;
          break;
        default:
          throw new RdataError(reason, l);
      }
      l = this.next();
    }
    if (quote) throw new RdataError(reason, l);
    return out;
  }

  quoted(reason: string): string {
    let l = this.field();
    if (l.value !== V.Quote) throw new RdataError(reason, l);
    l = this.next();
    if (l.value === V.String) {
      const s = l.token;
      l = this.next();
      if (l.value !== V.Quote) throw new RdataError(reason, l);
      return s;
    }
    if (l.value === V.Quote) return '';
    throw new RdataError(reason, l);
  }
}
