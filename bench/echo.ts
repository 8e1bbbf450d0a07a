/**
 * The ceiling for any Node.js DNS server on this machine: a UDP (and TCP) server that sends every
 * packet straight back with only the QR bit set. No DNS server written in Node can beat it.
 * Usage: node dist/bench/echo.js PORT
 */
import { serveResponder } from './responder.js';

serveResponder(Number(process.argv[2] ?? 0), 'echo', (msg) => {
  if (msg.length < 3) return null;
  msg[2]! |= 0x80;
  return msg;
});
