import { describe, expect, it } from 'vitest';
import { isLoopback } from './ip.js';

describe('isLoopback', () => {
  it('is 127/8, ::1 and IPv4-mapped 127/8', () => {
    for (const ip of ['127.0.0.1', '127.0.0.53', '127.255.255.254', '::1', '::ffff:127.0.0.1', '::FFFF:127.1.2.3'])
      expect(isLoopback(ip), ip).toBe(true);
    for (const ip of ['10.0.0.1', '128.0.0.1', '::2', '::ffff:10.0.0.1', 'fe80::1', '1.127.0.0'])
      expect(isLoopback(ip), ip).toBe(false);
  });
});
