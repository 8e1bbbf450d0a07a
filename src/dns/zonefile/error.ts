/** A syntax error in a master file, worded as miekg/dns's ParseError. */
export class ZoneFileError extends Error {
  constructor(
    readonly file: string,
    readonly reason: string,
    readonly token: string,
    readonly line: number,
    readonly column: number,
  ) {
    super(`${file ? `${file}: ` : ''}dns: ${reason}: ${quoteToASCII(token)} at line: ${line}:${column}`);
    this.name = 'ZoneFileError';
  }
}

/** Go's strconv.QuoteToASCII for the tokens of an error message. */
function quoteToASCII(s: string): string {
  const text = Buffer.from(s, 'latin1').toString('utf8');
  let out = '"';
  for (const ch of text) {
    const c = ch.codePointAt(0)!;
    if (ch === '"' || ch === '\\') out += `\\${ch}`;
    else if (c === 7) out += '\\a';
    else if (c === 8) out += '\\b';
    else if (c === 12) out += '\\f';
    else if (c === 10) out += '\\n';
    else if (c === 13) out += '\\r';
    else if (c === 9) out += '\\t';
    else if (c === 11) out += '\\v';
    else if (c < 0x20 || c === 0x7f) out += `\\x${c.toString(16).padStart(2, '0')}`;
    else if (c < 0x7f) out += ch;
    else if (c <= 0xffff) out += `\\u${c.toString(16).padStart(4, '0')}`;
    else out += `\\U${c.toString(16).padStart(8, '0')}`;
  }
  return `${out}"`;
}
