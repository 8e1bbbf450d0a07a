/** The master-file lexer: a port of miekg/dns's zlexer (tokens, blanks, quotes, parentheses, comments). */
import { CLASSES, prefixedNumber, TYPES } from './mnemonics.js';

export const enum V {
  EOF,
  String,
  Blank,
  Quote,
  Newline,
  Rrtype,
  Owner,
  Class,
  DirOrigin,
  DirTTL,
  DirInclude,
  DirGenerate,
}

export interface Lex {
  token: string;
  err: boolean;
  value: V;
  torc: number;
  line: number;
  column: number;
}

export const EMPTY: Lex = { token: '', err: false, value: V.EOF, torc: 0, line: 0, column: 0 };

export function isEmptyLex(l: Lex): boolean {
  return l.token === '' && !l.err && l.value === V.EOF && l.torc === 0 && l.line === 0 && l.column === 0;
}

export class ZLexer {
  private pos = 0;
  private line = 1;
  private column = 0;
  private eol = false;
  private l: Lex = { ...EMPTY };
  private cachedL: Lex | null = null;
  private nextL = false;
  private brace = 0;
  private quote = false;
  private space = false;
  private commt = false;
  private rrtype = false;
  private owner = true;
  private comBuf = '';

  constructor(private readonly data: string) {}

  private readByte(): number {
    if (this.pos >= this.data.length) return -1;
    const c = this.data.charCodeAt(this.pos++);
    if (this.eol) {
      this.line++;
      this.column = 0;
      this.eol = false;
    }
    if (c === 10) this.eol = true;
    else this.column++;
    return c;
  }

  peek(): Lex {
    if (this.nextL) return { ...this.l };
    const [l, ok] = this.next();
    if (!ok) return l;
    if (this.nextL) this.cachedL = l;
    else this.nextL = true;
    return l;
  }

  next(): [Lex, boolean] {
    const l = this.l;
    if (this.cachedL) {
      const c = this.cachedL;
      this.cachedL = null;
      return [c, true];
    }
    if (this.nextL) {
      this.nextL = false;
      return [{ ...l }, true];
    }
    if (l.err) return [{ ...EMPTY }, false];
    let str = '';
    let com = this.comBuf;
    this.comBuf = '';
    let escape = false;
    const ret = (): [Lex, boolean] => [{ ...l }, true];
    const snapshot = (value: V, token: string, torc = 0): Lex => {
      l.value = value;
      l.token = token;
      l.torc = torc;
      return { ...l };
    };
    for (let x = this.readByte(); x >= 0; x = this.readByte()) {
      l.line = this.line;
      l.column = this.column;
      switch (x) {
        case 0x20:
        case 0x09: {
          if (escape || this.quote) {
            str += String.fromCharCode(x);
            escape = false;
            break;
          }
          if (this.commt) {
            com += String.fromCharCode(x);
            break;
          }
          let retL: Lex | null = null;
          if (str.length === 0) {
            // blank at the start: the grammar handles it
          } else if (this.owner) {
            let v = V.Owner;
            switch (str.toUpperCase()) {
              case '$TTL':
                v = V.DirTTL;
                break;
              case '$ORIGIN':
                v = V.DirOrigin;
                break;
              case '$INCLUDE':
                v = V.DirInclude;
                break;
              case '$GENERATE':
                v = V.DirGenerate;
                break;
            }
            retL = snapshot(v, str);
          } else {
            let v = V.String;
            let torc = 0;
            if (!this.rrtype) {
              const up = str.toUpperCase();
              if (Object.hasOwn(TYPES, up)) {
                v = V.Rrtype;
                torc = TYPES[up]!;
                this.rrtype = true;
              } else if (up.startsWith('TYPE')) {
                const t = prefixedNumber(up, 4);
                if (t === undefined) {
                  l.token = 'unknown RR type';
                  l.err = true;
                  return ret();
                }
                v = V.Rrtype;
                torc = t;
                this.rrtype = true;
              }
              if (Object.hasOwn(CLASSES, up)) {
                v = V.Class;
                torc = CLASSES[up]!;
              } else if (up.startsWith('CLASS')) {
                const c = prefixedNumber(up, 5);
                if (c === undefined) {
                  l.token = 'unknown class';
                  l.err = true;
                  return ret();
                }
                v = V.Class;
                torc = c;
              }
            }
            retL = snapshot(v, str, torc);
          }
          this.owner = false;
          if (!this.space) {
            this.space = true;
            l.value = V.Blank;
            l.token = ' ';
            if (retL === null) return ret();
            this.nextL = true;
          }
          if (retL !== null) return [retL, true];
          break;
        }
        case 0x3b: // ;
          if (escape || this.quote) {
            str += ';';
            escape = false;
            break;
          }
          this.commt = true;
          this.comBuf = '';
          if (com.length > 1) com += ' ';
          com += ';';
          if (str.length > 0) {
            this.comBuf = com;
            return [snapshot(V.String, str), true];
          }
          break;
        case 0x0d:
          escape = false;
          if (this.quote) str += '\r';
          break;
        case 0x0a: {
          escape = false;
          if (this.quote) {
            str += '\n';
            break;
          }
          if (this.commt) {
            this.commt = false;
            this.rrtype = false;
            if (this.brace === 0) {
              this.owner = true;
              return [snapshot(V.Newline, '\n'), true];
            }
            this.comBuf = com;
            break;
          }
          if (this.brace === 0) {
            let retL: Lex | null = null;
            if (str.length > 0) {
              let v = V.String;
              let torc = 0;
              if (!this.rrtype) {
                const up = str.toUpperCase();
                if (Object.hasOwn(TYPES, up)) {
                  this.rrtype = true;
                  v = V.Rrtype;
                  torc = TYPES[up]!;
                }
              }
              retL = snapshot(v, str, torc);
            }
            l.value = V.Newline;
            l.token = '\n';
            this.comBuf = '';
            this.rrtype = false;
            this.owner = true;
            if (retL !== null) {
              this.nextL = true;
              return [retL, true];
            }
            return ret();
          }
          break;
        }
        case 0x5c: // backslash
          if (this.commt) {
            com += '\\';
            break;
          }
          if (escape) {
            str += '\\';
            escape = false;
            break;
          }
          str += '\\';
          escape = true;
          break;
        case 0x22: {
          // "
          if (this.commt) {
            com += '"';
            break;
          }
          if (escape) {
            str += '"';
            escape = false;
            break;
          }
          this.space = false;
          let retL: Lex | null = null;
          if (str.length > 0) retL = snapshot(V.String, str);
          l.value = V.Quote;
          l.token = '"';
          l.torc = 0;
          this.quote = !this.quote;
          if (retL !== null) {
            this.nextL = true;
            return [retL, true];
          }
          return ret();
        }
        case 0x28:
        case 0x29:
          if (this.commt) {
            com += String.fromCharCode(x);
            break;
          }
          if (escape || this.quote) {
            str += String.fromCharCode(x);
            escape = false;
            break;
          }
          if (x === 0x29) {
            this.brace--;
            if (this.brace < 0) {
              l.token = 'extra closing brace';
              l.err = true;
              return ret();
            }
          } else this.brace++;
          break;
        default:
          escape = false;
          if (this.commt) {
            com += String.fromCharCode(x);
            break;
          }
          str += String.fromCharCode(x);
          this.space = false;
      }
    }
    let retL: Lex | null = null;
    if (str.length > 0) {
      retL = snapshot(V.String, str);
      if (com.length === 0) return [retL, true];
    }
    if (com.length > 0) {
      l.value = V.Newline;
      l.token = '\n';
      if (retL !== null) {
        this.nextL = true;
        return [retL, true];
      }
      return ret();
    }
    if (this.brace !== 0) {
      l.token = 'unbalanced brace';
      l.err = true;
      return ret();
    }
    return [{ ...EMPTY }, false];
  }
}
