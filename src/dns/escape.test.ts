import { describe, expect, it } from 'vitest';
import { escapeLabelByte, isPlainLabelByte } from './escape.js';

describe('label byte escaping (miekg/dns presentation format)', () => {
  it('writes letters, digits and most punctuation as themselves', () => {
    for (const ch of "aZ09-_*/+=~!#%&'`{}|<>?[]^,:")
      expect([escapeLabelByte(ch.charCodeAt(0)), isPlainLabelByte(ch.charCodeAt(0))]).toEqual([ch, true]);
  });

  it('puts a backslash before . \\ ( ) ; " @ $', () => {
    for (const ch of '.\\();"@$')
      expect([escapeLabelByte(ch.charCodeAt(0)), isPlainLabelByte(ch.charCodeAt(0))]).toEqual([`\\${ch}`, false]);
  });

  it('writes space, controls, DEL and bytes above 0x7f as \\DDD', () => {
    expect(escapeLabelByte(0)).toBe('\\000');
    expect(escapeLabelByte(0x20)).toBe('\\032');
    expect(escapeLabelByte(0x7f)).toBe('\\127');
    expect(escapeLabelByte(0xff)).toBe('\\255');
    const plain = Array.from({ length: 256 }, (_, c) => c).filter(isPlainLabelByte);
    expect(plain.length).toBe(0x7e - 0x21 + 1 - 8);
  });
});
