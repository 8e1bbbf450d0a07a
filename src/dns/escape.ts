/**
 * How a label byte is written in a name's text (presentation format), as miekg/dns prints names
 * read from the wire: printable ASCII as itself, except `. \ ( ) ; " @ $`, which get a backslash,
 * and every other byte (space, controls, 0x7f and above) as `\DDD` (decimal). The wire reader
 * (wire.ts) and the zone-file names (zonefile/names.ts) both print names this way.
 */

const SPECIAL = '.\\();"@$';

/** The text of each byte value, built once: a lookup on the hot path (every query's name). */
const TEXT: readonly string[] = Array.from({ length: 256 }, (_, c) => {
  if (c <= 0x20 || c >= 0x7f) return `\\${c.toString().padStart(3, '0')}`;
  const ch = String.fromCharCode(c);
  return SPECIAL.includes(ch) ? `\\${ch}` : ch;
});

/** 1 for a byte written as itself, 0 for one that needs an escape. */
const PLAIN = Uint8Array.from(TEXT, (t) => (t.length === 1 ? 1 : 0));

/** The text of label byte `c` (0–255): itself, `\c` or `\DDD`. */
export function escapeLabelByte(c: number): string {
  return TEXT[c]!;
}

/** Is label byte `c` written as itself (no escape)? */
export function isPlainLabelByte(c: number): boolean {
  return PLAIN[c] === 1;
}
